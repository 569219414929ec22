import { AcceptScanner } from './accept-scanner.js';
import { argumentError } from '../validate.js';

export { MAX_ACCEPT_ENTRIES, MAX_ACCEPT_LENGTH } from './accept-scanner.js';

/** One media range of an `Accept` header (RFC 9110 §12.5.1). */
export interface MediaRange {
  readonly type: string; // lowercase: "application" or "*"
  readonly subtype: string; // lowercase: "json" or "*"
  /** Media-type parameters before `q`, names lowercased, values unquoted; the first of a repeated name wins. */
  readonly params: ReadonlyMap<string, string>;
  readonly q: number; // 0..1, three decimals at most
  /** Index of the entry among the header's non-empty entries (skipped ones keep their slot), for tie-breaks. */
  readonly position: number;
}

/**
 * Reads an `Accept` header into its valid media ranges, in header order (N-2).
 * No header, or one with no entries (empty, blanks, only commas), means `*\/*`; a header whose
 * entries are all invalid gives `[]`, which accepts nothing. Never throws on wire input.
 */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (header !== undefined && typeof header !== 'string') throw argumentError('header must be an Accept header (a string) or undefined');
  const scanner = new AcceptScanner(true);
  scanner.reset(header);
  const ranges: MediaRange[] = [];
  while (scanner.next()) {
    const h = scanner.header;
    ranges.push({
      type: h.slice(scanner.typeStart, scanner.typeEnd).toLowerCase(),
      subtype: h.slice(scanner.subtypeStart, scanner.subtypeEnd).toLowerCase(),
      params: scanner.params ?? new Map<string, string>(),
      q: scanner.qMillis / 1000,
      position: scanner.position,
    });
  }
  if (scanner.seen === 0) return [{ type: '*', subtype: '*', params: new Map<string, string>(), q: 1, position: 0 }];
  return ranges;
}
