import type { Resource, ResourceLoader } from './resource.js';
import { something } from './something.js';

/** The resources served at /api/<name>: the built-in `something` plus the embedder's. */
export type Registry = ReadonlyMap<string, Resource>;

/**
 * Each resource's XML root is its name (N-9); names are checked by resolveConfig. `withSomething`
 * false: only the loaders given (H-3's health resources have a registry of their own).
 */
export function createRegistry(loaders: Readonly<Record<string, ResourceLoader>> | ReadonlyMap<string, ResourceLoader>, withSomething = true): Registry {
  const given: [string, ResourceLoader][] = loaders instanceof Map ? [...loaders] : Object.entries(loaders);
  const entries: [string, ResourceLoader][] = withSomething ? [['something', something], ...given] : given;
  return new Map(entries.map(([name, load]) => [name, Object.freeze({ load, root: name })]));
}
