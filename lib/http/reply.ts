import { constants as h2 } from 'node:http2';
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { RequestContext } from './context.js';
import { mayHoldUnsent } from './http2-sessions.js';
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

/** Headers that every response carries (T-4), resolved once per listener. */
export type CommonHeaders = Readonly<Record<string, string>>;

/**
 * RFC 9113 §8.2.2: connection-specific fields are malformed in HTTP/2 (Node's stream API refuses a
 * response with any of them, TE and HTTP2-Settings included, by throwing); the reply's "close the
 * connection" becomes the end of its stream instead.
 */
const CONNECTION_SPECIFIC = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'http2-settings'] as const;

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
  res.writeHead(status, replyHeaders(ctx, reply, status, common) as Record<string, string | string[]>);
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
 * object with `:status`, and the body as the stream's only DATA. Returns the status written.
 */
export function writeStreamReply(ctx: RequestContext, stream: ServerHttp2Stream, reply: Reply, common: CommonHeaders): number {
  const status = replyStatus(ctx, reply);
  const headers = replyHeaders(ctx, reply, status, common) as OutgoingHttpHeaders;
  headers[':status'] = status;
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

/** The response's header fields (names in lowercase), for `status` as replyStatus() chose it. */
function replyHeaders(ctx: RequestContext, reply: Reply, status: number, common: CommonHeaders): Record<string, string | readonly string[]> {
  // Copied key by key into a fresh object: V8 gives a `{ ...common }` clone its source's map, and
  // adding properties to it then costs about 1 µs each (measured, Node 20), 20x a plain object.
  const headers: Record<string, string | readonly string[]> = {};
  for (const name in common) headers[name] = common[name] as string;
  headers['x-request-id'] = ctx.id;
  const own = reply.headers;
  if (own !== undefined) for (const name in own) headers[name] = own[name] as string | readonly string[];
  const vary = reply.vary;
  if (vary !== undefined && vary.length > 0) headers['vary'] = vary.length === 1 ? (vary[0] as string) : vary.join(', ');
  if (!ctx.http2) {
    if (reply.close === true) headers['connection'] = 'close';
  } else if (own !== undefined) {
    // Only a reply's own headers can bring them; deleting makes the object slower, so only when there.
    for (const name of CONNECTION_SPECIFIC) if (name in headers) delete headers[name];
    assertFieldValues(own);
  }
  if (reply.etag !== undefined) headers['etag'] = reply.etag;
  if (status === 304 && reply.status !== 304) {
    for (const name of Object.keys(headers)) {
      if (!KEPT_ON_304.has(name) && !(name in common)) delete headers[name];
    }
    return headers;
  }
  const body = reply.body;
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  else if (status !== 304 && status !== 204 && status >= 200) headers['content-length'] = '0';
  return headers;
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
