/**
 * A bounded memo for a pure function of a string: the request path's way of not redoing work for
 * values that repeat (Accept headers, request targets, response bodies). Never unbounded, so a
 * client sending a new value with every request cannot grow it: keys longer than `maxKeyLength`
 * are computed and not remembered, and at most `size` values are kept (with at most `size` keys
 * asked for once, below).
 *
 * Two generations instead of a strict LRU: a hit in the young map costs one lookup; when the young
 * map is full it becomes the old one and the old one is dropped, so keys still in use survive by
 * being promoted. A computation that throws remembers nothing.
 *
 * A key is remembered the second time it is asked for, not the first (a doorkeeper, as in TinyLFU):
 * until then only the key is kept, in two generations of keys like the values', so a key is still
 * known after at least a generation's worth of other new keys (keys asked in turn, or at random
 * from a set, are remembered about as often as without the doorkeeper). So values asked for once
 * (a new query string with every request) neither push the repeated ones out nor fill the heap's
 * old space with values that live just long enough to be promoted there: in the soak's mix, where
 * two requests in fourteen have a target never seen before, they raised the peak resident set by
 * about 30 MiB (bench/README.md, "Memory under a long mixed load").
 */
export function createMemo<V>(compute: (key: string) => V, options: { readonly size: number; readonly maxKeyLength: number }): (key: string) => V {
  const generation = Math.ceil(options.size / 2);
  const { maxKeyLength } = options;
  if (generation === 0) return compute;
  let young = new Map<string, V>();
  let old = new Map<string, V>();
  /** Keys asked for once and computed, not remembered yet: two generations, as the values. */
  let seen = new Set<string>();
  let seenBefore = new Set<string>();
  const remember = (key: string, value: V): V => {
    if (young.size >= generation) {
      old = young;
      young = new Map();
    }
    young.set(key, value);
    return value;
  };
  // The last key asked, checked first: a repeat (the same Accept from one client, the same target
  // or body again) costs a string comparison instead of hashing a new string for the Map.
  let lastKey: string | undefined;
  let lastValue: V | undefined;
  return (key) => {
    if (key === lastKey) return lastValue as V;
    if (key.length > maxKeyLength) return compute(key);
    const value = lookup(key);
    lastKey = key;
    lastValue = value;
    return value;
  };

  function lookup(key: string): V {
    const hit = young.get(key);
    if (hit !== undefined) return hit;
    const aged = old.get(key);
    if (aged !== undefined) {
      old.delete(key);
      return remember(key, aged);
    }
    const value = compute(key);
    if (value === undefined) return value;
    if (seen.delete(key) || seenBefore.delete(key)) return remember(key, value);
    if (seen.size >= generation) {
      seenBefore = seen;
      seen = new Set();
    }
    seen.add(key);
    return value;
  }
}
