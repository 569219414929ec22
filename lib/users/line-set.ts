// The lines of a text as a set, kept as the text itself and two arrays of where each line starts
// and ends, found through an open-addressing hash table of line numbers: no string per line. The
// bundled password list (49,233 lines) held as a Set of strings made the idle server 12 MiB larger
// (71 MiB resident against 59, bench/HISTORY.md): 2.8 MiB of strings and Set live, and the heap
// grown by the garbage of loading them. This holds about 1.5 MiB and makes no garbage per line.

export interface LineSet {
  has(word: string): boolean;
  /** Distinct non-empty lines. */
  readonly size: number;
  /** The longest line's length in code points. */
  readonly longest: number;
}

/** The distinct non-empty lines of `text` (split at '\n', a '\r' before it dropped), as they are. */
export function lineSet(text: string): LineSet {
  const starts: number[] = [];
  const ends: number[] = [];
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const stop = end > start && text.charCodeAt(end - 1) === 0x0d ? end - 1 : end;
    if (stop > start) {
      starts.push(start);
      ends.push(stop);
    }
    start = end + 1;
  }
  // A power of two at least twice the lines: probes stay short.
  const slots = 2 ** Math.ceil(Math.log2(Math.max(2, starts.length * 2)));
  const mask = slots - 1;
  const lineStart = Uint32Array.from(starts);
  const lineEnd = Uint32Array.from(ends);
  /** Line number + 1 in each slot; 0: empty. */
  const table = new Uint32Array(slots);

  const equals = (line: number, word: string, from: number, to: number): boolean => {
    const start = lineStart[line] as number;
    if ((lineEnd[line] as number) - start !== to - from) return false;
    for (let i = 0; i < to - from; i++) if (text.charCodeAt(start + i) !== word.charCodeAt(from + i)) return false;
    return true;
  };
  /** The slot holding `word.slice(from, to)`, or the empty slot where it would go. */
  const slotOf = (word: string, from: number, to: number): number => {
    let slot = hash(word, from, to) & mask;
    for (;;) {
      const entry = table[slot] as number;
      if (entry === 0 || equals(entry - 1, word, from, to)) return slot;
      slot = (slot + 1) & mask;
    }
  };

  let size = 0;
  let longest = 0;
  for (let line = 0; line < lineStart.length; line++) {
    const from = lineStart[line] as number;
    const to = lineEnd[line] as number;
    const slot = slotOf(text, from, to);
    if (table[slot] !== 0) continue;
    table[slot] = line + 1;
    size++;
    // Code points are at most the UTF-16 units: only a line longer in units can be longer.
    if (to - from > longest) longest = Math.max(longest, codePoints(text, from, to));
  }
  return { has: (word) => table[slotOf(word, 0, word.length)] !== 0, size, longest };
}

/** FNV-1a over the UTF-16 units of `text.slice(from, to)`. */
function hash(text: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function codePoints(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    // The high half of a pair is counted; its low half is not.
    if (c < 0xdc00 || c > 0xdfff || i === from || (text.charCodeAt(i - 1) & 0xfc00) !== 0xd800) count++;
  }
  return count;
}
