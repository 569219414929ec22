import type { Resource, ResourceLoader } from './resource.js';
import { something } from './something.js';

/** The resources served at /api/<name>: the built-in `something` plus the embedder's. */
export type Registry = ReadonlyMap<string, Resource>;

/** Each resource's XML root is its name (N-9); names are checked by resolveConfig. */
export function createRegistry(extra: Readonly<Record<string, ResourceLoader>>): Registry {
  const entries: [string, ResourceLoader][] = [['something', something], ...Object.entries(extra)];
  return new Map(entries.map(([name, load]) => [name, Object.freeze({ load, root: name })]));
}
