// E-4: conditional requests, RFC 9110 §13. Pure: the caller says what the target resource is
// (exists, its current ETags, its modification time) and gets the outcome; it decides when to ask.
// RFC 9110 §13.2.1 says when: after authentication and authorization, and only when the response
// without the conditions would be 2xx (a 404, 401 or 406 wins over any precondition), before the
// request content is processed and before the method is performed.
import { parseHttpDate } from './http-date.js';
import { HttpError, problem } from './problem.js';

/** The conditional request headers, as node:http (and http2 compat) hand them over. */
export interface ConditionalHeaders {
  readonly 'if-match'?: string | undefined;
  readonly 'if-none-match'?: string | undefined;
  readonly 'if-modified-since'?: string | undefined;
  readonly 'if-unmodified-since'?: string | undefined;
}

/** Whether a request carries a condition an entity tag decides (If-Match, If-None-Match). */
export function hasTagConditions(headers: ConditionalHeaders): boolean {
  return headers['if-match'] !== undefined || headers['if-none-match'] !== undefined;
}

/** What the target resource is now. */
export interface ResourceState {
  /** Whether the target has a current representation (`If-Match: *` is true, `If-None-Match: *` false). */
  readonly exists: boolean;
  /**
   * Quoted strong ETags (`"abc"`) of every representation of the current state: `If-Match` holds
   * when it names any of them (E-4, for negotiated resources). Empty for a resource we serve no
   * representation of (a password): then only `*` can hold.
   */
  readonly etags: readonly string[];
  /** The ETag of the representation this response would carry, for `If-None-Match`; default: any of `etags`. */
  readonly selected?: string | undefined;
  /** Last modification (ms since the epoch); undefined when the resource has none (the date headers are ignored). */
  readonly lastModified?: number | Date | undefined;
}

/** `ok`: perform the method; `not-modified`: answer 304 (GET/HEAD only); `failed`: answer 412. */
export type PreconditionOutcome = 'ok' | 'not-modified' | 'failed';

/** One member of an entity-tag list (RFC 9110 §8.8.3): `tag` is the opaque-tag with its quotes. */
export interface EntityTag {
  readonly weak: boolean;
  readonly tag: string;
}

/**
 * Evaluates the preconditions in RFC 9110 §13.2.2's order: If-Match, else If-Unmodified-Since;
 * then If-None-Match, else (GET/HEAD) If-Modified-Since. If-Range does not apply (no ranges here).
 *
 * Values that do not parse: a date that is not an HTTP-date is ignored, as §13.1.3/§13.1.4 say.
 * An entity-tag list that does not parse cannot name the current representation, so an
 * unparsable `If-Match` is false (412): a condition the server cannot read is never taken as
 * permission to change state. For the same reason an unparsable `If-None-Match` is false for
 * methods other than GET/HEAD (412), while on GET/HEAD it is ignored (the full response is
 * always a correct answer to a read).
 */
export function evaluatePreconditions(method: string, headers: ConditionalHeaders, state: ResourceState, now: number = Date.now()): PreconditionOutcome {
  const read = method === 'GET' || method === 'HEAD';
  const modified = lastModifiedSeconds(state);
  const ifMatch = headers['if-match'];
  if (ifMatch !== undefined) {
    if (!ifMatchHolds(parseEntityTags(ifMatch), state)) return 'failed';
  } else if (modified !== undefined) {
    // §13.1.4: false when the resource changed after the date given.
    const date = parseHttpDate(headers['if-unmodified-since'], now);
    if (date !== undefined && modified > date) return 'failed';
  }
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    const tags = parseEntityTags(ifNoneMatch);
    if (tags === undefined) return read ? 'ok' : 'failed';
    if (!ifNoneMatchHolds(tags, state)) return read ? 'not-modified' : 'failed';
  } else if (read && modified !== undefined) {
    // §13.1.3: false (not modified) when the resource has not changed since the date given.
    const date = parseHttpDate(headers['if-modified-since'], now);
    if (date !== undefined && modified <= date) return 'not-modified';
  }
  return 'ok';
}

/**
 * `evaluatePreconditions` for a handler: throws the 412 `precondition-failed` problem when the
 * outcome is `failed`, and otherwise returns it (`not-modified` is left to the caller: a GET's
 * 304 is written by writeReply from the reply's ETag).
 */
export function requirePreconditions(method: string, headers: ConditionalHeaders, state: ResourceState): 'ok' | 'not-modified' {
  const outcome = evaluatePreconditions(method, headers, state);
  if (outcome === 'failed') {
    throw new HttpError(
      problem(412, 'precondition-failed', {
        detail: 'A precondition (If-Match, If-Unmodified-Since or If-None-Match) does not hold for the current state; nothing was done.',
      }),
    );
  }
  return outcome;
}

/**
 * `If-Match` / `If-None-Match` field values (RFC 9110 §13.1.1): `"*"` alone, or a comma-separated
 * list of entity-tags, empty members allowed (§5.6.1). Undefined when the value is neither.
 * Linear in the value's length.
 */
export function parseEntityTags(value: string): '*' | EntityTag[] | undefined {
  const n = value.length;
  let i = skipSpace(value, 0);
  if (value.charCodeAt(i) === 0x2a /* * */ && skipSpace(value, i + 1) === n) return '*';
  const tags: EntityTag[] = [];
  while (i < n) {
    if (value.charCodeAt(i) === 0x2c /* , */) {
      i = skipSpace(value, i + 1);
      continue;
    }
    const weak = value.startsWith('W/', i);
    const start = weak ? i + 2 : i;
    if (value.charCodeAt(start) !== 0x22 /* " */) return undefined;
    let end = start + 1;
    for (; end < n; end++) {
      const c = value.charCodeAt(end);
      if (c === 0x22) break;
      // etagc = %x21 / %x23-7E / obs-text
      if (c < 0x21 || c === 0x7f || c > 0xff) return undefined;
    }
    if (end >= n) return undefined;
    tags.push({ weak, tag: value.slice(start, end + 1) });
    i = skipSpace(value, end + 1);
    if (i < n && value.charCodeAt(i) !== 0x2c) return undefined;
  }
  return tags;
}

/** §13.1.1: `*` holds for an existing resource; a list when one strong member equals a current strong ETag. */
function ifMatchHolds(tags: '*' | EntityTag[] | undefined, state: ResourceState): boolean {
  if (tags === undefined) return false;
  if (tags === '*') return state.exists;
  if (!state.exists) return false;
  // §8.8.3.2 strong comparison: neither side weak, opaque-tags identical.
  for (const { weak, tag } of tags) if (!weak && state.etags.includes(tag)) return true;
  return false;
}

/** §13.1.2: `*` is false for an existing resource; a list is false when a member weakly matches. */
function ifNoneMatchHolds(tags: '*' | EntityTag[], state: ResourceState): boolean {
  if (tags === '*') return !state.exists;
  if (!state.exists) return true;
  const current = state.selected === undefined ? state.etags : [state.selected];
  // §8.8.3.2 weak comparison: the opaque-tags alone.
  for (const { tag } of tags) for (const etag of current) if (opaqueOf(etag) === tag) return false;
  return true;
}

/** The modification time at HTTP-date resolution (whole seconds), so a date copied from it compares equal. */
function lastModifiedSeconds(state: ResourceState): number | undefined {
  if (!state.exists || state.lastModified === undefined) return undefined;
  const ms = typeof state.lastModified === 'number' ? state.lastModified : state.lastModified.getTime();
  return Number.isFinite(ms) ? Math.floor(ms / 1000) * 1000 : undefined;
}

function opaqueOf(etag: string): string {
  return etag.startsWith('W/') ? etag.slice(2) : etag;
}

function skipSpace(value: string, i: number): number {
  while (i < value.length && (value.charCodeAt(i) === 0x20 || value.charCodeAt(i) === 0x09)) i++;
  return i;
}
