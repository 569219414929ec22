import { createMemo } from '../memo.js';
import { AcceptScanner } from './accept-scanner.js';
import type { MediaRange } from './accept.js';
import { parseOfferedTypes } from './offered-types.js';
import { Selection } from './selection.js';
import { argumentError } from '../validate.js';

export interface NegotiateOptions {
  /**
   * The offered types are sent as UTF-8, so a `charset=utf-8` (or `utf8`) parameter on a range is
   * met by an offered type that names no charset. Off, a range's parameters must all be on the
   * offered type (RFC 9110 §12.5.1); the service turns it on (N-2). @default false
   */
  readonly charsetUtf8?: boolean;
}

export interface NegotiatorOptions extends NegotiateOptions {
  /** Most recent `Accept` values remembered (rounded up to an even number; a value from its second time on); 0 turns the cache off. @default 256 */
  readonly cacheSize?: number;
}

/** Longer headers are answered but not remembered, so the cache stays small in bytes too. */
const MAX_CACHED_HEADER = 512;
const MAX_CACHE_SIZE = 65_536;
const NO_OPTIONS: NegotiatorOptions = {};
const NEGOTIATE_KEYS: ReadonlySet<string> = new Set<keyof NegotiateOptions>(['charsetUtf8']);
const NEGOTIATOR_KEYS: ReadonlySet<string> = new Set<keyof NegotiatorOptions>(['charsetUtf8', 'cacheSize']);

/**
 * Picks the offered media type an `Accept` header prefers (RFC 9110 §12.5.1; N-2, N-3), or
 * `undefined` when none is acceptable (a 406). `accept` is the raw header (`undefined` when absent)
 * or ranges from `parseAccept`. `offered` lists media types in server order, in any case, with or
 * without parameters (`application/vnd.example+json;version=2`); the answer is one of them, as
 * given. A malformed entry is skipped; a wildcard (`text/*`) is refused (ServiceError ERR_INVALID_ARGUMENT).
 *
 * @example negotiate('application/json;q=0, *\/*', ['application/json', 'application/xml']) // 'application/xml'
 */
export function negotiate(accept: string | undefined | readonly MediaRange[], offered: readonly string[], options: NegotiateOptions = NO_OPTIONS): string | undefined {
  const selection = read(accept, offered, options);
  const index = selection.best();
  return index < 0 ? undefined : offered[index];
}

/**
 * Every acceptable offered type, best first: by weight, then the more specific range, then header
 * order, then server order (so the first is what `negotiate` answers). Types with q=0 or no
 * covering range are left out. The `mediaTypes(available)` of the `negotiator` package.
 *
 * @example negotiateAll('text/*, application/json;q=0.5', ['application/json', 'text/html', 'image/png']) // ['text/html', 'application/json']
 */
export function negotiateAll(accept: string | undefined | readonly MediaRange[], offered: readonly string[], options: NegotiateOptions = NO_OPTIONS): string[] {
  const selection = read(accept, offered, options);
  return selection.ranking().map((index) => offered[index] as string);
}

function read(accept: string | undefined | readonly MediaRange[], offered: readonly string[], options: NegotiateOptions): Selection {
  if (accept !== undefined && typeof accept !== 'string' && !Array.isArray(accept)) throw argumentError('accept must be an Accept header (a string), undefined, or ranges from parseAccept');
  const selection = new Selection(parseOfferedTypes(offered), checkOptions(options, NEGOTIATE_KEYS).charsetUtf8 === true);
  if (typeof accept === 'object') selection.readRanges(accept);
  else selection.readHeader(accept, new AcceptScanner(selection.needsParams));
  return selection;
}

/**
 * `negotiate` for a fixed list of offered types, read once, with a small bounded cache keyed by
 * the header value (never unbounded: a hostile client could otherwise grow it forever). All state
 * belongs to the returned function.
 */
export function createNegotiator(offered: readonly string[], options: NegotiatorOptions = NO_OPTIONS): (accept: string | undefined) => string | undefined {
  const parsed = parseOfferedTypes(offered);
  const types = [...offered];
  checkOptions(options, NEGOTIATOR_KEYS);
  const selection = new Selection(parsed, options.charsetUtf8 === true);
  const cacheSize = options.cacheSize ?? 256;
  if (!Number.isInteger(cacheSize) || cacheSize < 0 || cacheSize > MAX_CACHE_SIZE) {
    throw argumentError(`cacheSize must be an integer from 0 to ${MAX_CACHE_SIZE}, got ${String(cacheSize)}`);
  }
  const scanner = new AcceptScanner(selection.needsParams);
  selection.readHeader(undefined, scanner);
  const whenAbsent = types[selection.best()];
  const indexOf = createMemo(
    (accept) => {
      selection.readHeader(accept, scanner);
      return selection.best();
    },
    { size: cacheSize, maxKeyLength: MAX_CACHED_HEADER },
  );
  return (accept) => {
    if (accept === undefined) return whenAbsent;
    if (typeof accept !== 'string') throw argumentError('accept must be an Accept header (a string) or undefined');
    const index = indexOf(accept);
    return index < 0 ? undefined : types[index];
  };
}

// Programmer input: unknown keys are typos, and the flag must be a boolean.
function checkOptions(options: NegotiatorOptions, known: ReadonlySet<string>): NegotiatorOptions {
  if (options === NO_OPTIONS) return options;
  if (typeof options !== 'object' || options === null) throw argumentError('options must be an object');
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw argumentError(`unknown option "${key}"; known: ${[...known].join(', ')}`);
  }
  if (options.charsetUtf8 !== undefined && typeof options.charsetUtf8 !== 'boolean') {
    throw argumentError(`charsetUtf8 must be a boolean, got ${typeof options.charsetUtf8}`);
  }
  return options;
}
