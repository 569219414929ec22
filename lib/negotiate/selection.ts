// The weighing of offered types against Accept ranges (RFC 9110 §12.5.1; N-2, N-3). Internal.
import { isUtf8Label, type AcceptScanner } from './accept-scanner.js';
import type { MediaRange } from './accept.js';
import type { OfferedTypes } from './offered-types.js';
import { argumentError } from '../validate.js';

const STAR = 0x2a;
// Specificity = level * LEVEL + number of parameters on the range: the type decides first
// (type/subtype > type/* > */*), then parameters (text/html;level=1 > text/html), RFC 9110 §12.5.1.
const LEVEL = 4096;
const MAX_PARAMS = LEVEL - 1;

/**
 * For each offered type, the range that decides its weight; then the winner or the ranking.
 * Reusable: every `read` starts from a clean slate and never calls out, so one instance can serve
 * a negotiator.
 */
export class Selection {
  // The offered slots (see OfferedTypes), held directly: #consider reads them for every range.
  readonly #keys: readonly string[];
  readonly #slash: readonly number[];
  readonly #params: ReadonlyArray<ReadonlyMap<string, string> | undefined>;
  readonly #index: readonly number[];
  readonly #anyParams: boolean;
  /** N-2 option: the offered types are sent as UTF-8, so `charset=utf-8` on a range is met. */
  readonly #utf8: boolean;
  // Per offered slot k, at 3k, 3k+1, 3k+2: specificity of the deciding range (-1: none covers
  // it), its q and its position. One flat array: this runs once per request.
  readonly #state: number[] = [];

  constructor(types: OfferedTypes, utf8: boolean) {
    this.#keys = types.keys;
    this.#slash = types.slash;
    this.#params = types.params;
    this.#index = types.index;
    this.#anyParams = types.anyParams;
    this.#utf8 = utf8;
    for (let k = 0; k < types.keys.length; k++) this.#state.push(-1, 0, 0);
  }

  /** Whether ranges' parameters must be collected by the scanner (some offered type has parameters). */
  get needsParams(): boolean {
    return this.#anyParams;
  }

  /** Weighs a raw header; `undefined`, or one with no entries at all, reads as `*\/*` (N-2). */
  readHeader(accept: string | undefined, scanner: AcceptScanner): void {
    this.#clear();
    if (accept !== undefined) {
      scanner.reset(accept);
      const anyParams = this.#anyParams;
      while (scanner.next()) {
        let required: ReadonlyMap<string, string> | undefined;
        let count = 0;
        if (scanner.foreign || scanner.charsetUtf8) {
          // The range has parameters. With none on the offered side only N-2's charset can be met.
          if (anyParams) {
            required = scanner.params;
            count = required?.size ?? 0;
          } else if (this.#utf8 && scanner.charsetUtf8) {
            count = 1;
          } else {
            continue;
          }
        }
        this.#consider(scanner.header, scanner.typeStart, scanner.typeEnd, scanner.subtypeEnd, required, count, scanner.qMillis / 1000, scanner.position);
      }
      if (scanner.seen > 0) return;
    }
    // As "*/*" would (not through #consider: a second kind of string there costs every request).
    const state = this.#state;
    for (let k = 0; k < state.length; k += 3) {
      state[k] = 0;
      state[k + 1] = 1;
      state[k + 2] = 0;
    }
  }

  /** Weighs ranges from `parseAccept` or built by hand; `[]` accepts nothing. */
  readRanges(ranges: readonly MediaRange[]): void {
    this.#clear();
    for (const range of ranges) {
      if (typeof range.q !== 'number' || !(range.q >= 0 && range.q <= 1)) {
        throw argumentError(`MediaRange q must be a number from 0 to 1, got ${String(range.q)}`);
      }
      const params = range.params;
      const text = `${range.type}/${range.subtype}`;
      this.#consider(text, 0, range.type.length, text.length, params.size > 0 ? params : undefined, params.size, range.q, range.position);
    }
  }

  /** N-3: the slot with the best weight; on a tie the more specific range, then the earlier one, then server order. -1: none. */
  best(): number {
    // Inline and strict (not #compare): this runs once per request, and strict keeps the earlier slot.
    let best = -1;
    let bestQ = 0;
    let bestSpecificity = 0;
    let bestPosition = 0;
    const state = this.#state;
    for (let k = 0; k < this.#keys.length; k++) {
      const specificity = state[3 * k] as number;
      const q = state[3 * k + 1] as number;
      if (specificity < 0 || q === 0) continue;
      const position = state[3 * k + 2] as number;
      if (best < 0 || q > bestQ || (q === bestQ && (specificity > bestSpecificity || (specificity === bestSpecificity && position < bestPosition)))) {
        best = k;
        bestQ = q;
        bestSpecificity = specificity;
        bestPosition = position;
      }
    }
    return best < 0 ? -1 : (this.#index[best] as number);
  }

  /** Every acceptable slot, best first, by the order of `best`; as indexes into the caller's list. */
  ranking(): number[] {
    const state = this.#state;
    const slots: number[] = [];
    for (let k = 0; k < this.#keys.length; k++) {
      if ((state[3 * k] as number) >= 0 && state[3 * k + 1] !== 0) slots.push(k);
    }
    slots.sort((a, b) => this.#compare(a, b) || a - b);
    return slots.map((k) => this.#index[k] as number);
  }

  // Negative when slot a goes before slot b: higher q, then more specific, then earlier in the header.
  #compare(a: number, b: number): number {
    const s = this.#state;
    return (s[3 * b + 1] as number) - (s[3 * a + 1] as number) || (s[3 * b] as number) - (s[3 * a] as number) || (s[3 * a + 2] as number) - (s[3 * b + 2] as number);
  }

  #clear(): void {
    const state = this.#state;
    for (let k = 0; k < state.length; k += 3) state[k] = -1;
  }

  // RFC 9110 §12.5.1: "If more than one media range applies to a given type, the most specific
  // reference has precedence." Among equally specific ranges the highest q wins (as the
  // `negotiator` package does), then the earlier one. So "application/json;q=0, */*" excludes
  // JSON, and q=0 on the deciding range excludes a type whatever broader ranges say.
  // The range is src[start, end): "type/subtype", the slash at typeEnd; `required` its parameters
  // when an offered type must carry them (undefined: none, or N-2's charset alone), `count` how many.
  #consider(src: string, start: number, typeEnd: number, end: number, required: ReadonlyMap<string, string> | undefined, count: number, q: number, position: number): void {
    const typeLength = typeEnd - start;
    const starType = typeLength === 1 && src.charCodeAt(start) === STAR;
    const starSubtype = end - typeEnd === 2 && src.charCodeAt(typeEnd + 1) === STAR;
    if (starType && !starSubtype) return; // "*/json" covers nothing (parseAccept never yields it)
    const bonus = count < MAX_PARAMS ? count : MAX_PARAMS;
    const keys = this.#keys;
    const slash = this.#slash;
    const state = this.#state;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k] as string;
      const keySlash = slash[k] as number;
      let level: number;
      if (starType) {
        level = 0;
      } else if (typeLength !== keySlash) {
        continue;
      } else if (starSubtype) {
        if (!equalsLower(src, start, typeEnd, key, keySlash)) continue;
        level = 2;
      } else {
        // Compare "type/subtype" in one go; startsWith is the fast path for lowercase headers.
        if (end - start !== key.length || !(src.startsWith(key, start) || equalsLower(src, start, end, key, key.length))) continue;
        level = 4;
      }
      if (required !== undefined && !paramsMet(required, this.#params[k], this.#utf8)) continue;
      const specificity = level * LEVEL + bonus;
      const current = state[3 * k] as number;
      if (specificity > current || (specificity === current && q > (state[3 * k + 1] as number))) {
        state[3 * k] = specificity;
        state[3 * k + 1] = q;
        state[3 * k + 2] = position;
      }
    }
  }
}

// RFC 9110 §12.5.1: a range's parameters must all be on the offered type. Names are compared
// lowercased (both sides arrive so), values as given once unquoted (§5.6.6), except `charset`,
// whose values are case-insensitive (§8.3.2). With the N-2 option, an offered type without a
// charset is sent as UTF-8, so `charset=utf-8` (or the WHATWG label `utf8`) is met by it.
function paramsMet(required: ReadonlyMap<string, string>, offered: ReadonlyMap<string, string> | undefined, utf8: boolean): boolean {
  for (const [name, value] of required) {
    const have = offered?.get(name);
    if (have === value) continue;
    if (name !== 'charset') return false;
    if (have === undefined) {
      if (!(utf8 && isUtf8Label(value, 0, -1))) return false;
    } else if (have.toLowerCase() !== value.toLowerCase() && !(utf8 && isUtf8Label(have, 0, -1) && isUtf8Label(value, 0, -1))) {
      return false;
    }
  }
  return true;
}

// Case-insensitive comparison of src[start, end) with target[0, targetEnd), target being lowercase.
function equalsLower(src: string, start: number, end: number, target: string, targetEnd: number): boolean {
  if (end - start !== targetEnd) return false;
  for (let i = start, j = 0; i < end; i++, j++) {
    let c = src.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c !== target.charCodeAt(j)) return false;
  }
  return true;
}
