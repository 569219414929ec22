import type { ResourceLoader } from '../config.js';
import { something } from './something.js';

/** The resources served at /api/<name>: the built-in `something` plus the embedder's. */
export type Registry = ReadonlyMap<string, ResourceLoader>;

export function createRegistry(extra: Readonly<Record<string, ResourceLoader>>): Registry {
  return new Map<string, ResourceLoader>([['something', something], ...Object.entries(extra)]);
}
