// a JSON request body, strictly: its media type, its size, its encoding and its syntax are
// each checked, and each refusal is the problem a client can act on.
import type { IncomingHttpHeaders } from 'node:http';
import { decodeUtf8Strict } from '../users/prepare.js';
import { parseContentType, sentContentType } from './body.js';
import { findJsonSyntaxError, nestingTooDeep } from './json-syntax.js';
import { HttpError, problem } from './problem.js';

/** What a JSON body is read from: a `RequestContext` is one. */
export interface JsonBodySource {
  readonly headers: IncomingHttpHeaders;
  /** The body's bytes, at most `limit` (a 413 `HttpError` beyond, the rest not read). */
  readBody(limit: number): Promise<Buffer>;
}

export interface JsonBodyOptions {
  /** Most bytes read; beyond them 413 `payload-too-large`, and nothing more is read. */
  readonly limit: number;
  /** Accepted media types, lowercase (`['application/json']`; PATCH: `['application/merge-patch+json']`). */
  readonly types: readonly string[];
  /**
   * The header a 415 names the accepted types in: `accept-post` (W3C LDP, for POST) or
   * `accept-patch` (RFC 5789 §3.1, for PATCH); none for a PUT, which has no such header (the
   * problem's `accepted` member names them for every method).
   */
  readonly acceptHeader?: 'accept-post' | 'accept-patch';
  /**
   * Deepest nesting of arrays and objects accepted (the top-level value is depth 1); deeper is 400.
   * Every later step (the checks, the method, the response's serializer) walks the value. @default 256
   */
  readonly maxDepth?: number;
}

/** Default of `maxDepth`: far beyond any document a person designs, far below what a recursive walk can take. */
export const DEFAULT_MAX_JSON_DEPTH = 256;

/**
 * Reads a request body as JSON (RFC 8259, UTF-8). The media type is checked before a byte is read:
 * missing, another type or a charset other than utf-8 is 415 `unsupported-media-type` naming the
 * accepted types in `acceptHeader`. Then: over `limit` bytes 413 (read no further); not UTF-8,
 * empty, not JSON (`detail` gives the line and column, also as members `line` and `column`) or
 * nested deeper than `maxDepth`: 400 `bad-request`. One leading byte order mark is ignored
 * (RFC 8259 §8.1). Member names such as `__proto__` are the value's own members (JSON.parse).
 */
export async function readJsonBody(req: JsonBodySource, options: JsonBodyOptions): Promise<unknown> {
  const { limit, types, acceptHeader, maxDepth = DEFAULT_MAX_JSON_DEPTH } = options;
  const contentType = parseContentType(req.headers['content-type']);
  if (contentType === undefined || !types.includes(contentType.type) || (contentType.charset !== undefined && contentType.charset !== 'utf-8')) {
    const accepted = types.join(', ');
    const refusal = problem(415, 'unsupported-media-type', { detail: `The body was sent with ${sentContentType(req.headers['content-type'])}; send ${accepted} (UTF-8).`, accepted: [...types] });
    throw acceptHeader === undefined ? new HttpError(refusal) : new HttpError(refusal, { [acceptHeader]: accepted });
  }
  const bytes = await req.readBody(limit);
  if (bytes.length === 0) throw badRequest('The body is empty; send a JSON value.');
  const decoded = decodeUtf8Strict(bytes);
  if (decoded === undefined) throw badRequest('The body is not valid UTF-8.');
  const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw syntaxError(text);
  }
  // RFC 8259 §6: a number past a double's range would be JSON.parse's ±Infinity, stored and served back as null.
  if (MAYBE_HUGE.test(text)) {
    const at = infiniteAt(value);
    if (at !== undefined) throw badRequest(`The body holds a number too large for a double (beyond ±1.8e308) at ${at === '' ? 'its top' : at}.`, { pointer: at });
  }
  if (containersAtLeast(text, maxDepth + 1) && deeperThan(value, maxDepth)) {
    // Rare: only then is the text scanned, for the place to show.
    const at = where(text, Math.max(0, nestingTooDeep(text, maxDepth)));
    throw badRequest(`The body nests arrays and objects deeper than ${maxDepth} levels (${at.text}).`, at.members);
  }
  return value;
}

/** An exponent of two digits or more, or 300 digits in a row: no other JSON number can be past ±1.8e308. */
const MAYBE_HUGE = /[eE][+]?0*[1-9]\d|\d{300}/;

/** The RFC 6901 pointer of the first number in a parsed value that is not finite, if any. */
function infiniteAt(value: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[value, '']];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [v, pointer] = next;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return pointer;
    } else if (typeof v === 'object' && v !== null) {
      for (const key in v) stack.push([(v as Record<string, unknown>)[key], `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`]);
    }
  }
  return undefined;
}

/**
 * Whether `text` has `n` or more `[` and `{` (inside strings too): fewer, and no value parsed from
 * it can nest `n` deep. Counted with indexOf, which skips the text between them natively: a
 * 1 KiB body with a few containers costs a fraction of the walk below.
 */
function containersAtLeast(text: string, n: number): boolean {
  let count = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count >= n) return true;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count >= n) return true;
  return false;
}

/**
 * Whether a parsed value nests containers deeper than `max` (the top level is depth 1). A walk of
 * the value, not of the text: its cost is the number of containers, and long strings cost nothing.
 */
function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    const depth = depths.pop() as number;
    if (depth > max) return true;
    // JSON.parse's objects have no enumerable inherited members: for…in is their own members, __proto__ included.
    for (const key in v) {
      const child = (v as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

function syntaxError(text: string): HttpError {
  // JSON.parse refused it, so the scan finds a place; the fallback only guards against an engine that disagrees.
  const found = findJsonSyntaxError(text) ?? { offset: text.length, expected: 'JSON' };
  const at = where(text, found.offset);
  const got = found.offset >= text.length ? 'the end of the body' : describeChar(text, found.offset);
  return badRequest(`The body is not valid JSON: ${at.text}, expected ${found.expected}, found ${got}.`, at.members);
}

/** Line and column (1-based; columns count code points; CR, LF and CRLF end a line) of a UTF-16 offset. */
function where(text: string, offset: number): { text: string; members: { line: number; column: number } } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || (c === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line++;
      lineStart = i + 1;
    }
  }
  let column = 1;
  for (let i = lineStart; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff || !(text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff)) column++;
  }
  return { text: `at line ${line}, column ${column}`, members: { line, column } };
}

/** A character of the body, shown safely: printable ASCII quoted, anything else as U+XXXX. */
function describeChar(text: string, offset: number): string {
  const cp = text.codePointAt(offset) as number;
  if (cp > 0x20 && cp < 0x7f) return `'${String.fromCharCode(cp)}'`;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

function badRequest(detail: string, members: Readonly<Record<string, unknown>> = {}): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail, ...members }));
}
