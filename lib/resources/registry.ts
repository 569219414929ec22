import { defineResource, type ServedResource } from './definition.js';
import type { Resource, ResourceLoader } from './resource.js';
import { something } from './something.js';

/** Resources by name (H-3's health resources; the representation path resolves names through one). */
export type Registry = ReadonlyMap<string, Resource>;

/** Loaders as resources, each with its name as XML root (N-9). */
export function createRegistry(loaders: ReadonlyMap<string, ResourceLoader>): Registry {
  return new Map([...loaders].map(([name, load]) => [name, Object.freeze({ load, root: name })]));
}

/**
 * The resources served at /api/<name>: the built-in `something` (N-9) first, then the embedder's
 * (A-2, A-5; checked by resolveConfig). An embedder's `something` takes the built-in's place.
 */
export function servedResources(given: ReadonlyMap<string, ServedResource>): ReadonlyMap<string, ServedResource> {
  return new Map([['something', defineResource('something', something)], ...given]);
}
