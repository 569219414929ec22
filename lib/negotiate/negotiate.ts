import { createMemo } from '../memo.js';
import { AcceptScanner } from './accept-scanner.js';
import type { MediaRange } from './accept.js';

export interface NegotiatorOptions {
  /** Most recent `Accept` values remembered (rounded up to an even number); 0 turns the cache off. @default 256 */
  readonly cacheSize?: number;
}

const STAR = 0x2a;
const SLASH = 0x2f;
/** Longer headers are answered but not remembered, so the cache stays small in bytes too. */
const MAX_CACHED_HEADER = 512;
const MAX_CACHE_SIZE = 65_536;

/**
 * Picks the offered media type an `Accept` header prefers (RFC 9110 §12.5.1; N-2, N-3), or
 * `undefined` when none is acceptable (a 406). `accept` is the raw header (`undefined` when absent)
 * or ranges from `parseAccept`; `offered` holds lowercase `type/subtype` strings in server order,
 * and the answer is one of them, as given.
 *
 * @example negotiate('application/json;q=0, *\/*', ['application/json', 'application/xml']) // 'application/xml'
 */
export function negotiate(accept: string | undefined | readonly MediaRange[], offered: readonly string[]): string | undefined {
  const selection = new Selection(offered);
  const index = typeof accept === 'object' ? selection.fromRanges(accept) : selection.fromHeader(accept, new AcceptScanner(false));
  return index < 0 ? undefined : offered[index];
}

/**
 * `negotiate` for a fixed list of offered types, with a small bounded cache keyed by the header
 * value (never unbounded: a hostile client could otherwise grow it forever). All state belongs to
 * the returned function.
 */
export function createNegotiator(offered: readonly string[], options: NegotiatorOptions = {}): (accept: string | undefined) => string | undefined {
  const types = [...offered];
  const selection = new Selection(types);
  const cacheSize = options.cacheSize ?? 256;
  if (!Number.isInteger(cacheSize) || cacheSize < 0 || cacheSize > MAX_CACHE_SIZE) {
    throw new TypeError(`cacheSize must be an integer from 0 to ${MAX_CACHE_SIZE}, got ${String(cacheSize)}`);
  }
  const scanner = new AcceptScanner(false);
  const whenAbsent = types[0];
  const indexOf = createMemo((accept) => selection.fromHeader(accept, scanner), { size: cacheSize, maxKeyLength: MAX_CACHED_HEADER });
  return (accept) => {
    if (accept === undefined) return whenAbsent;
    const index = indexOf(accept);
    return index < 0 ? undefined : types[index];
  };
}

/**
 * For each offered type, the range that decides its weight; then the winner. Reusable: every
 * run starts from a clean slate, and a run never calls out, so one instance can serve a negotiator.
 */
class Selection {
  readonly #offered: readonly string[];
  readonly #slash: number[] = [];
  // Per offered type k, at 3k, 3k+1, 3k+2: specificity of the deciding range (-1: none covers
  // it), its q and its position. One flat array: this runs once per request.
  readonly #state: number[] = [];

  constructor(offered: readonly string[]) {
    if (!Array.isArray(offered)) throw new TypeError('offered must be an array of media types');
    this.#offered = offered;
    for (let k = 0; k < offered.length; k++) {
      this.#slash.push(checkOffered(offered[k]));
      this.#state.push(-1, 0, 0);
    }
  }

  fromHeader(accept: string | undefined, scanner: AcceptScanner): number {
    if (accept === undefined) return this.#offered.length > 0 ? 0 : -1;
    this.#clear();
    scanner.reset(accept);
    while (scanner.next()) {
      if (scanner.foreign) continue;
      this.#consider(scanner.header, scanner.typeStart, scanner.typeEnd, scanner.subtypeEnd, scanner.charsetUtf8, scanner.qMillis / 1000, scanner.position);
    }
    // No entries at all (empty, blanks, commas) reads as "*/*", like no header.
    if (scanner.seen === 0) return this.#offered.length > 0 ? 0 : -1;
    return this.#winner();
  }

  fromRanges(ranges: readonly MediaRange[]): number {
    this.#clear();
    for (const range of ranges) {
      if (typeof range.q !== 'number' || !(range.q >= 0 && range.q <= 1)) {
        throw new TypeError(`MediaRange q must be a number from 0 to 1, got ${String(range.q)}`);
      }
      // N-2: a charset naming UTF-8 is the only parameter our representations satisfy.
      const params = range.params;
      let charsetUtf8 = false;
      if (params.size > 0) {
        const charset = params.size === 1 ? params.get('charset')?.toLowerCase() : undefined;
        if (charset !== 'utf-8' && charset !== 'utf8') continue;
        charsetUtf8 = true;
      }
      const text = `${range.type}/${range.subtype}`;
      this.#consider(text, 0, range.type.length, text.length, charsetUtf8, range.q, range.position);
    }
    return this.#winner();
  }

  #clear(): void {
    const state = this.#state;
    for (let k = 0; k < state.length; k += 3) state[k] = -1;
  }

  // RFC 9110 §12.5.1: "If more than one media range applies to a given type, the most specific
  // reference has precedence": type/subtype (4) > type/* (2) > */* (0), plus 1 for a matching
  // charset, as the RFC counts parameters as more specific (text/plain;format=flowed > text/plain).
  // Among equally specific ranges the highest q wins (as the `negotiator` package does), then the
  // earlier one. So "application/json;q=0, */*" excludes JSON, and q=0 on the deciding range
  // excludes a type whatever broader ranges say.
  // The range is src[start, end): "type/subtype", the slash at typeEnd.
  #consider(src: string, start: number, typeEnd: number, end: number, charsetUtf8: boolean, q: number, position: number): void {
    const typeLength = typeEnd - start;
    const starType = typeLength === 1 && src.charCodeAt(start) === STAR;
    const starSubtype = end - typeEnd === 2 && src.charCodeAt(typeEnd + 1) === STAR;
    if (starType && !starSubtype) return; // "*/json" covers nothing (parseAccept never yields it)
    const bonus = charsetUtf8 ? 1 : 0;
    const offered = this.#offered;
    for (let k = 0; k < offered.length; k++) {
      const type = offered[k] as string;
      const slash = this.#slash[k] as number;
      let specificity: number;
      if (starType) {
        specificity = bonus;
      } else if (typeLength !== slash) {
        continue;
      } else if (starSubtype) {
        if (!equalsLower(src, start, typeEnd, type, 0, slash)) continue;
        specificity = 2 + bonus;
      } else {
        // Compare "type/subtype" in one go; startsWith is the fast path for lowercase headers.
        if (end - start !== type.length || !(src.startsWith(type, start) || equalsLower(src, start, end, type, 0, type.length))) continue;
        specificity = 4 + bonus;
      }
      const state = this.#state;
      const current = state[3 * k] as number;
      if (specificity > current || (specificity === current && q > (state[3 * k + 1] as number))) {
        state[3 * k] = specificity;
        state[3 * k + 1] = q;
        state[3 * k + 2] = position;
      }
    }
  }

  // N-3: best weight; on a tie the more specific deciding range, then the one earlier in the
  // header, then server order (strict comparisons keep the earlier offered type).
  #winner(): number {
    let best = -1;
    let bestQ = 0;
    let bestSpecificity = 0;
    let bestPosition = 0;
    const state = this.#state;
    for (let k = 0; k < this.#offered.length; k++) {
      const specificity = state[3 * k] as number;
      const q = state[3 * k + 1] as number;
      if (specificity < 0 || q === 0) continue;
      const position = state[3 * k + 2] as number;
      if (
        best < 0 ||
        q > bestQ ||
        (q === bestQ && (specificity > bestSpecificity || (specificity === bestSpecificity && position < bestPosition)))
      ) {
        best = k;
        bestQ = q;
        bestSpecificity = specificity;
        bestPosition = position;
      }
    }
    return best;
  }
}

// Programmer input: offered types are lowercase "type/subtype" tokens, no wildcard, no parameters.
// One pass that also finds the slash: negotiate() checks its list on every call.
function checkOffered(type: unknown): number {
  if (typeof type !== 'string') throw new TypeError(`offered media types must be strings, got ${typeof type}`);
  let slash = -1;
  let valid = true;
  for (let i = 0; i < type.length; i++) {
    const c = type.charCodeAt(i);
    if (c === SLASH && slash < 0) slash = i;
    else if (c >= 128 || LOWER_TCHAR[c] !== 1) valid = false;
  }
  valid &&=
    slash > 0 &&
    slash < type.length - 1 &&
    !(slash === 1 && type.charCodeAt(0) === STAR) &&
    !(slash === type.length - 2 && type.charCodeAt(slash + 1) === STAR);
  if (!valid) throw new TypeError(`offered media types must be lowercase "type/subtype" without wildcards or parameters, got ${JSON.stringify(type)}`);
  return slash;
}

// tchar (RFC 9110 §5.6.2) without upper-case letters.
const LOWER_TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz";
const LOWER_TCHAR: Readonly<Uint8Array> = Uint8Array.from({ length: 128 }, (_, c) => (LOWER_TCHARS.includes(String.fromCharCode(c)) ? 1 : 0));

// Case-insensitive comparison of src[start, end) with target[tStart, tEnd), target being lowercase.
function equalsLower(src: string, start: number, end: number, target: string, tStart: number, tEnd: number): boolean {
  if (end - start !== tEnd - tStart) return false;
  for (let i = start, j = tStart; i < end; i++, j++) {
    let c = src.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c !== target.charCodeAt(j)) return false;
  }
  return true;
}
