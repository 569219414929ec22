// The blocklist of CONTRACT P-6 / NIST SP 800-63B-4 §3.1.1.2: "known commonly used,
// expected, or compromised passwords … The entire password SHALL be subject to
// comparison". The bundled list (assets/README.md) has few entries as long as our
// 15-character minimum, so long passwords are also judged by how they are built:
// one that is only a couple of repeats, sequences or keyboard walks plus at most
// one listed password counts as listed (passwordpassword, password12345678).

import { readFileSync } from 'node:fs';
import { lineSet, type LineSet } from './line-set.js';

// lib/users/ → assets/ in the repository; dist/lib/users/ → dist/assets/ once built.
const LIST_URL = new URL('../../assets/common-passwords.txt', import.meta.url);

// Orderings people walk along, read cyclically (…9 0 1…, …z a…, a keyboard's rows
// end to end, and its columns). Each character occurs once in each.
const SEQUENCES: readonly string[] = [
  'abcdefghijklmnopqrstuvwxyz',
  '0123456789',
  'qwertyuiopasdfghjklzxcvbnm',
  '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/',
];

// A password of at most this many pieces (each a run of one repeated character,
// a run along a sequence, a single character, or the one listed password) counts
// as common. Three pieces of a 15-character password leave ~30 bits or less.
const MAX_PIECES = 3;
// A repeated unit this short is weak whatever it is ("abcd" × 4).
const MAX_WEAK_UNIT = 4;
// Below this many code points the rules above would call every string common;
// such a password is too short under any configuration (P-6 allows 8 at least),
// so only the list itself is consulted.
const MIN_JUDGED_LENGTH = 8;

interface Blocklist {
  readonly words: Pick<LineSet, 'has'>;
  readonly longestWord: number; // in code points
}

const STEPS: ReadonlyArray<(a: string, b: string) => boolean> = [
  (a, b) => a === b,
  ...SEQUENCES.flatMap((order) => [follows(order, 1), follows(order, -1)]),
];

// Read once, on first use: a lazily computed constant (it never changes after),
// so importing the library costs nothing until a password is checked.
const blocklist = once(loadBlocklist);

/**
 * True when the candidate is in the bundled list of common passwords, or is
 * built from too few obvious pieces (see above). Case-insensitive; call it
 * with the prepared password. Linear in the candidate's length.
 */
export function isCommonPassword(candidate: string): boolean {
  const list = blocklist(); // first: isCommonPassword('') at start-up loads the list, or throws
  const text = candidate.normalize('NFC').toLowerCase();
  if (text === '') return false;
  if (list.words.has(text)) return true;
  const chars = Array.from(text);
  if (chars.length < MIN_JUDGED_LENGTH) return false;
  return isWeakRepetition(chars, list) || isFewPieces(chars, list);
}

// A short unit repeated to length: "aaaaaaaaaaaaaaaa", "passwordpassword",
// "abcabcabcabcabca". The smallest period comes from the KMP prefix function.
function isWeakRepetition(chars: readonly string[], list: Blocklist): boolean {
  const n = chars.length;
  const prefix = new Uint32Array(n);
  for (let i = 1; i < n; i++) {
    let k = prefix[i - 1] ?? 0;
    while (k > 0 && chars[i] !== chars[k]) k = prefix[k - 1] ?? 0;
    if (chars[i] === chars[k]) k++;
    prefix[i] = k;
  }
  const period = n - (prefix[n - 1] ?? 0);
  if (period * 2 > n) return false; // not even two whole copies
  if (period <= MAX_WEAK_UNIT) return true;
  const unit = chars.slice(0, period);
  return list.words.has(unit.join('')) || isFewPieces(unit, list);
}

// Fewest pieces covering the whole text, breadth-first by piece count over
// positions; state = (position, listed password used yet). O(n · longestWord).
function isFewPieces(chars: readonly string[], list: Blocklist): boolean {
  const n = chars.length;
  const runEnd = runEnds(chars);
  let free: Uint8Array = new Uint8Array(n + 1); // reachable without a listed password
  let used: Uint8Array = new Uint8Array(n + 1); // reachable having used one
  free[0] = 1;
  for (let pieces = 1; pieces <= MAX_PIECES; pieces++) {
    // Runs reach every position up to their end: mark intervals with difference arrays.
    const freeDiff = new Int32Array(n + 2);
    const usedDiff = new Int32Array(n + 2);
    const nextUsed = new Uint8Array(n + 1);
    for (let i = 0; i < n; i++) {
      const end = runEnd[i] ?? i + 1;
      if (free[i] === 1) mark(freeDiff, i + 1, end);
      if (used[i] === 1) mark(usedDiff, i + 1, end);
      if (free[i] === 1) {
        let word = '';
        for (let j = i; j < n && j - i < list.longestWord; j++) {
          word += chars[j];
          if (list.words.has(word)) nextUsed[j + 1] = 1;
        }
      }
    }
    free = fromDiff(freeDiff, n);
    used = fromDiff(usedDiff, n);
    for (let j = 0; j <= n; j++) if (nextUsed[j] === 1) used[j] = 1;
    if (free[n] === 1 || used[n] === 1) return true;
  }
  return false;
}

// runEnd[i]: the furthest end (exclusive) of one run starting at i, over all
// kinds of run. A single character is a run of one.
function runEnds(chars: readonly string[]): Int32Array {
  const n = chars.length;
  const best = new Int32Array(n);
  for (let i = 0; i < n; i++) best[i] = i + 1;
  for (const step of STEPS) {
    let end = n;
    for (let i = n - 1; i >= 0; i--) {
      const next = chars[i + 1];
      if (next === undefined || !step(chars[i] ?? '', next)) end = i + 1;
      if (end > (best[i] ?? 0)) best[i] = end;
    }
  }
  return best;
}

function mark(diff: Int32Array, from: number, to: number): void {
  diff[from] = (diff[from] ?? 0) + 1;
  diff[to + 1] = (diff[to + 1] ?? 0) - 1;
}

function fromDiff(diff: Int32Array, n: number): Uint8Array {
  const out = new Uint8Array(n + 1);
  let depth = 0;
  for (let j = 0; j <= n; j++) {
    depth += diff[j] ?? 0;
    if (depth > 0) out[j] = 1;
  }
  return out;
}

function follows(order: string, direction: 1 | -1): (a: string, b: string) => boolean {
  const index = new Map(Array.from(order, (c, i) => [c, i] as const));
  const size = index.size;
  return (a, b) => {
    const i = index.get(a);
    return i !== undefined && order[(i + direction + size) % size] === b;
  };
}

function loadBlocklist(): Blocklist {
  let text: string;
  try {
    text = readFileSync(LIST_URL, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the common-password list ${LIST_URL.pathname}`, { cause: error });
  }
  // Normalized as a whole: NFC and lowercasing never reach across a line break (neither composes
  // with '\n' nor counts it as part of a word), so each line is as if normalized on its own.
  const words = lineSet(text.normalize('NFC').toLowerCase());
  return { words, longestWord: words.longest };
}

function once<T>(compute: () => T): () => T {
  let value: { readonly v: T } | undefined;
  return () => (value ??= { v: compute() }).v;
}
