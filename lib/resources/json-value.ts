// Facts about JSON values that the schema subset (json-schema.ts) relies on: what an object is,
// when two values are equal, how long a string is, and how a place in a value is written.

/** An object literal, or one made by JSON.parse or Object.create(null): not an array, a Map, a class instance (a zod schema). */
export function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Any object that is not an array: what a JSON object is once parsed. */
export function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What is not a JSON value in `value` (a function, `undefined`, NaN, ±Infinity, a Date, a Map, a
 * cycle), described in words, or `undefined` when it is one.
 */
export function notJson(value: unknown, ancestors: Set<object> = new Set()): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : String(value);
  if (!Array.isArray(value) && !isPlainObject(value)) return describe(value);
  if (ancestors.has(value)) return 'a value that contains itself';
  ancestors.add(value);
  for (const k of Object.keys(value)) {
    const found = notJson((value as Record<string, unknown>)[k], ancestors);
    if (found !== undefined) return found;
  }
  ancestors.delete(value);
  return undefined;
}

/** Equality of JSON values (JSON Schema Validation 2020-12 §4.2.2): numbers by value, arrays entry by entry, objects member by member in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}

/** A string's length in code points (Validation §6.3.1 counts characters); a lone surrogate counts one. */
export function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** An RFC 6901 JSON Pointer from its reference tokens: `~` is written `~0`, `/` is written `~1`. */
export function jsonPointer(tokens: readonly (string | number)[]): string {
  let pointer = '';
  for (const t of tokens) pointer += '/' + (typeof t === 'number' ? String(t) : t.replaceAll('~', '~0').replaceAll('/', '~1'));
  return pointer;
}

/** A value named in a message, briefly and without echoing much of it. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object') return isPlainObject(value) ? 'an object' : `a ${(value.constructor as { name?: string } | undefined)?.name ?? 'non-plain'} object`;
  return typeof value;
}
