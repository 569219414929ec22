// JSON Merge Patch (RFC 7396), the body of an item's PATCH. The patch is applied to the
// current value as JSON shows it, and the result is handed to the item's `put`.

import { isObject } from './json-value.js';

type JsonObject = Record<string, unknown>;

/**
 * Applies a merge patch (RFC 7396 §2) to `target` and returns the result: a new value that shares
 * nothing with either input, which are never changed. `target` is taken as JSON shows it (`toJSON`
 * honoured, `undefined` members left out). A member named `__proto__` (JSON.parse makes it an own
 * property) is an ordinary member: it is set, merged and removed like any other and never becomes
 * an object's prototype.
 * @example applyMergePatch({ a: 'b', c: { d: 'e' } }, { a: 'z', c: { d: null } }) // { a: 'z', c: {} }
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  return merge(fresh(target), patch);
}

/** RFC 7396 §2's MergePatch, on a target that is already this module's own copy. */
function merge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return fresh(patch);
  // The target is this module's own copy (fresh), so it may be changed in place.
  const result = (isObject(target) ? target : {}) as JsonObject;
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === undefined) continue; // not JSON: as if the member were absent
    if (value === null) {
      delete result[key]; // removes an own member only, `__proto__` included
      continue;
    }
    set(result, key, merge(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

/** Plain assignment to `__proto__` would set the prototype: that one key is defined instead. */
function set(object: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/** A copy of a value as JSON shows it (JSON.parse makes `__proto__` an own member, never a prototype). */
function fresh(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}
