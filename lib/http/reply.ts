import { Buffer } from 'node:buffer';
import { constants as h2 } from 'node:http2';
import type { OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { Http2ServerResponse, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { RequestContext } from './context.js';
import { discardUnreadBody, mayHoldUnsent } from './http2-sessions.js';
import type { HttpResponse } from './messages.js';
import { sendBody } from './send-body.js';

/** What a handler returns; only writeReply() turns it into bytes on the socket. */
export interface Reply {
  readonly status: number;
  /** Header names in lowercase (errorReply lowercases what an HttpError brings). */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: string;
  /** Strong entity tag, quoted (`"abc"`); enables If-None-Match → 304 (N-7). */
  readonly etag?: string;
  /** Request header names the choice of representation depended on (N-5). */
  readonly vary?: readonly string[];
  /** Close the connection after this response (e.g. a request body we stopped reading). */
  readonly close?: boolean;
}

/**
 * Headers that every response carries (T-4), resolved once per listener: as name, value pairs in
 * one array (how the response fields are built, below), and as an object for a response written
 * without them.
 */
export interface CommonHeaders {
  readonly object: Readonly<Record<string, string>>;
  readonly fields: readonly string[];
  /** The names above and `x-request-id`: a reply's own header of one of these names replaces ours. */
  readonly names: ReadonlySet<string>;
  /** By a header set's pairs (headerSet()): the response's first fields, made once (leadingFields()). */
  readonly leading: WeakMap<readonly string[], LeadingFields>;
}

/** `headers` (lowercase names) as CommonHeaders. */
export function commonHeaders(headers: Readonly<Record<string, string>>): CommonHeaders {
  return { object: headers, fields: Object.entries(headers).flat(), names: new Set([...Object.keys(headers), 'x-request-id']), leading: new WeakMap() };
}

/**
 * What every response with one header set starts with: the set's pairs, then the common fields it
 * does not replace; and whether the request id follows them (unless the set has its own).
 */
interface LeadingFields {
  readonly fields: readonly string[];
  readonly requestId: boolean;
}

/** The leading fields of a response with the header set whose pairs are `pairs` (made once per set and listener). */
function leadingFields(pairs: readonly string[], common: CommonHeaders): LeadingFields {
  const known = common.leading.get(pairs);
  if (known !== undefined) return known;
  const own = new Set(pairs.filter((_, i) => i % 2 === 0));
  const fields = [...pairs];
  for (let i = 0; i < common.fields.length; i += 2) {
    if (!own.has(common.fields[i] as string)) fields.push(common.fields[i] as string, common.fields[i + 1] as string);
  }
  const made = { fields, requestId: !own.has('x-request-id') };
  common.leading.set(pairs, made);
  return made;
}

/**
 * A response's header fields as node:http's `writeHead` takes them without an object in between:
 * name, value, name, value … (names in lowercase, each once). An array is built and read by index;
 * a header object made per response has a shape of its own, so every store into it and every read
 * of it by node:http (a `for…in` with `hasOwnProperty`) goes through V8's slowest property paths
 * (about 4,000 instructions a response, counted with callgrind: bench/README.md).
 */
export type Fields = Array<string | readonly string[]>;

/**
 * RFC 9113 §8.2.2: connection-specific fields are malformed in HTTP/2 (Node's stream API refuses a
 * response with any of them, TE and HTTP2-Settings included, by throwing); the reply's "close the
 * connection" becomes the end of its stream instead.
 */
const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'http2-settings']);

/** Headers a 304 repeats from the 200 it stands for (RFC 9110 §15.4.5). */
const KEPT_ON_304 = new Set(['cache-control', 'content-location', 'date', 'etag', 'expires', 'vary', 'link', 'x-request-id']);

/**
 * RFC 9113 §8.2.1: a field value with CR, LF or NUL is malformed in HTTP/2, and a proxy that turns
 * the response into HTTP/1.1 would split it there (response splitting). node:http refuses such a
 * value by throwing; node:http2's stream API sends it. The same characters node:http refuses
 * (RFC 9110 §5.5: field-vchar, obs-text, SP and HTAB) are refused here, by the same throw: the
 * caller answers 500.
 */
function assertFieldValues(own: Readonly<Record<string, string | readonly string[]>>): void {
  for (const name in own) {
    const value = own[name];
    // A string is checked as it is: no array per header on every HTTP/2 reply.
    if (typeof value === 'string' ? INVALID_FIELD_VALUE.test(value) : (value ?? []).some((one) => INVALID_FIELD_VALUE.test(one))) {
      throw new TypeError(`the response header "${name}" has a character a field value must not have (RFC 9110 §5.5)`);
    }
  }
}

const INVALID_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

// `stream.respond()` copies its options: one constant object serves every response without a body.
const END_STREAM = { endStream: true } as const;

/**
 * The writer to node:http's and node:http2's compatibility response: common headers, Vary,
 * ETag/If-None-Match → 304, HEAD without body, Content-Length. Never throws for a reply built by
 * our handlers. Returns the status written.
 */
export function writeReply(ctx: RequestContext, res: HttpResponse, reply: Reply, common: CommonHeaders): number {
  const status = replyStatus(ctx, reply);
  // node:http2's compatibility response takes the same pairs (its typings say only an object).
  (res as ServerResponse).writeHead(status, replyFields(ctx, reply, status, common) as OutgoingHttpHeader[]);
  const body = status === 304 ? undefined : reply.body;
  if (ctx.method === 'HEAD' || body === undefined) res.end();
  else if (ctx.http2) sendBody(res as Http2ServerResponse, body);
  // L-2: a reader that stops taking the response loses its connection after the request time-out.
  else sendBody(res as ServerResponse, body, stallLimit(res as ServerResponse));
  // RFC 9113 §8.1: a response sent before the whole request arrived (a body refused unread) asks
  // the client to stop sending with RST_STREAM(NO_ERROR); Node sends it once the response is out.
  if (ctx.http2 && reply.close === true) (res as Http2ServerResponse).stream.close(h2.NGHTTP2_NO_ERROR);
  return status;
}

/**
 * The same response written on an HTTP/2 stream with node:http2's stream API (H-1): one header
 * object with `:status` (the API takes no other form), and the body as the stream's only DATA.
 * Returns the status written.
 */
export function writeStreamReply(ctx: RequestContext, stream: ServerHttp2Stream, reply: Reply, common: CommonHeaders): number {
  const status = replyStatus(ctx, reply);
  const fields = replyFields(ctx, reply, status, common);
  const headers: OutgoingHttpHeaders = { ':status': status };
  for (let i = 0; i < fields.length; i += 2) headers[fields[i] as string] = fields[i + 1] as string | string[];
  const body = status === 304 || status === 204 ? undefined : reply.body;
  if (ctx.method === 'HEAD' || body === undefined) {
    stream.respond(headers, END_STREAM);
    // RFC 9113 §8.1: a complete response to a request still open (a HEAD whose HEADERS did not end
    // the stream) asks the client to stop with RST_STREAM(NO_ERROR), which frees the stream now
    // rather than at the request time-out. Node does it itself once a body is written.
    if (!stream.endAfterHeaders && !stream.readableEnded && reply.close !== true) stream.close(h2.NGHTTP2_NO_ERROR);
  } else if (!mayHoldUnsent(stream, body)) {
    // L-2: the session's reader already leaves too much unsent (RFC 9113 §7: excessive load).
    stream.close(h2.NGHTTP2_ENHANCE_YOUR_CALM);
    return 503;
  } else {
    stream.respond(headers);
    sendBody(stream, body);
    discardUnreadBody(stream);
  }
  if (reply.close === true) stream.close(h2.NGHTTP2_NO_ERROR);
  return status;
}

/** The request time-out of the node:http server `res` came from, which keeps it (L-1). */
function stallLimit(res: ServerResponse): number | undefined {
  // The request's socket: a response pipelined behind another has none of its own until its turn.
  const server = ((res.socket ?? (res as { req?: { socket?: Socket } }).req?.socket) as (Socket & { server?: { requestTimeout?: unknown } }) | null | undefined)?.server;
  return typeof server?.requestTimeout === 'number' && server.requestTimeout > 0 ? server.requestTimeout : undefined;
}

/** The reply's status, or 304 for a 200 to a GET or HEAD whose If-None-Match names its ETag (N-7). */
function replyStatus(ctx: RequestContext, reply: Reply): number {
  const status = reply.status;
  if (reply.etag === undefined || status !== 200) return status;
  const method = ctx.method;
  const ifNoneMatch = ctx.headers['if-none-match'];
  return (method === 'GET' || method === 'HEAD') && ifNoneMatchHits(ifNoneMatch, reply.etag) ? 304 : status;
}

/** Where a header set made by headerSet() keeps its pairs (not enumerable: the set reads as a plain object). */
const PAIRS = Symbol('header pairs');

/** Names a reply's own header set must not have for its pairs to be copied as they are: the writer decides these. */
const WRITERS_NAMES: ReadonlySet<string> = new Set(['content-length', 'vary', 'etag', ...CONNECTION_SPECIFIC]);

/**
 * `headers` (lowercase names) frozen, as a reply's constant header set (a handler's, made once per
 * resource and representation): when it has none of the names the writer decides, its name, value
 * pairs are made now and copied into each response, instead of its properties being walked (a
 * header object's shape differs from set to set, so V8 reads each property the slowest way).
 */
export function headerSet(headers: Record<string, string>): Readonly<Record<string, string>> {
  const names = Object.keys(headers);
  if (!names.some((name) => WRITERS_NAMES.has(name)) && !names.some((name) => INVALID_FIELD_VALUE.test(headers[name] as string))) {
    Object.defineProperty(headers, PAIRS, { value: Object.freeze(names.flatMap((name) => [name, headers[name] as string])) });
  }
  return Object.freeze(headers);
}

function pairsOf(own: Reply['headers']): readonly string[] | undefined {
  return own === undefined ? undefined : (own as { readonly [PAIRS]?: readonly string[] })[PAIRS];
}

/**
 * The response's header fields (names in lowercase, each once), for `status` as replyStatus() chose
 * it: the common ones, the request id, the reply's own (which replace a common one of the same
 * name), then those the writer decides: Vary, Connection, ETag and the framing (Content-Length;
 * one the reply brings is dropped). A 304 keeps only what RFC 9110 §15.4.5 has it repeat.
 */
function replyFields(ctx: RequestContext, reply: Reply, status: number, common: CommonHeaders): Fields {
  const own = reply.headers;
  const notModified = status === 304 && reply.status !== 304;
  const vary = reply.vary;
  const hasVary = vary !== undefined && vary.length > 0;
  const close = !ctx.http2 && reply.close === true;
  const etag = reply.etag;
  const pairs = notModified ? undefined : pairsOf(own);
  let fields: Fields;
  let n: number;
  // Stored by index (a two-argument push is a call into V8's builtin, this is inlined).
  const add = (name: string, value: string | readonly string[]): void => {
    fields[n++] = name;
    fields[n++] = value;
  };
  if (pairs !== undefined) {
    // A header set made by headerSet(): its pairs hold none of the names the writer decides, and
    // values HTTP/2 may send (checked when it was made); with the common fields, made once.
    const leading = leadingFields(pairs, common);
    fields = leading.fields.slice();
    n = fields.length;
    if (leading.requestId) add('x-request-id', ctx.id);
  } else {
    fields = [];
    n = 0;
    let replaced = false;
    if (own !== undefined) {
      // RFC 9113 §8.2.1: a value HTTP/2 would send as it is must not split a header (node:http throws itself).
      if (ctx.http2) assertFieldValues(own);
      for (const name in own) {
        if (
          name === 'content-length' ||
          (hasVary && name === 'vary') ||
          (close && name === 'connection') ||
          (etag !== undefined && name === 'etag') ||
          (ctx.http2 && CONNECTION_SPECIFIC.has(name)) ||
          (notModified && !KEPT_ON_304.has(name))
        ) {
          continue;
        }
        if (common.names.has(name)) replaced = true;
        add(name, own[name] as string | readonly string[]);
      }
    }
    const shared = common.fields;
    for (let i = 0; i < shared.length; i += 2) {
      const name = shared[i] as string;
      if (!replaced || !(name in (own as object))) add(name, shared[i + 1] as string);
    }
    if (!replaced || !('x-request-id' in (own as object))) add('x-request-id', ctx.id);
  }
  if (hasVary) add('vary', vary.length === 1 ? (vary[0] as string) : vary.join(', '));
  if (close) add('connection', 'close');
  if (etag !== undefined) add('etag', etag);
  if (notModified) return fields;
  const body = reply.body;
  if (body !== undefined) add('content-length', String(Buffer.byteLength(body)));
  else if (status !== 304 && status !== 204 && status >= 200) add('content-length', '0');
  return fields;
}

/**
 * If-None-Match (RFC 9110 §13.1.2) uses the weak comparison: `W/"x"` matches `"x"`. `*` matches any
 * current representation. A header that does not parse matches nothing.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const want = opaque(etag);
  let i = 0;
  const n = header.length;
  while (i < n) {
    const c = header.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x2c) {
      i++;
      continue;
    }
    if (c === 0x2a) return true; // '*'
    if (c === 0x57 && header.charCodeAt(i + 1) === 0x2f) i += 2; // 'W/'
    if (header.charCodeAt(i) !== 0x22) return false;
    const end = header.indexOf('"', i + 1);
    if (end < 0) return false;
    if (header.slice(i + 1, end) === want) return true;
    i = end + 1;
  }
  return false;
}

function opaque(etag: string): string {
  const start = etag.startsWith('W/') ? 3 : 1;
  return etag.slice(start, -1);
}
