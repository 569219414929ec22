// Answers the listeners write themselves, for requests that never reach the dispatcher: HTTP/1.1
// parse errors and time-outs (written raw on the socket), CONNECT, and an HTTP/2 header block over
// the limit. Each is a problem document with the T-4 headers.
import { Buffer } from 'node:buffer';
import type { ServerResponse } from 'node:http';
import { Http2ServerResponse, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { HttpRequest, HttpResponse } from './messages.js';
import { problem, type Problem } from './problem.js';

// T-4: what every response carries, including the ones written here.
const SECURITY_HEADERS = { 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'" } as const;

// The problems written here (E-2: each type with its own status).
const BAD_REQUEST = problem(400, 'bad-request');
const TIMED_OUT = problem(408, 'request-timeout');
const HEADERS_TOO_LARGE = problem(431, 'request-header-fields-too-large');

/** Sockets already set to close after their response in flight (one listener and one timer each). */
const closingAfter = new WeakSet<Socket>();

/**
 * Malformed requests that never reach a handler (bad framing, smuggling shapes, huge headers) get
 * a problem response and a closed connection (RFC 9112 §6.3: 400, then close). llhttp reports
 * some framing errors (a Transfer-Encoding other than chunked, a bad chunk) only after it has
 * handed the request to the handler: that request's response, not yet started, carries the 400.
 * `stallMs` (the request time-out) bounds how long a response in flight may hold its connection
 * open after such an error; `onRefused` hears of each refusal written here (the log's line for it).
 */
export function clientErrorHandler(
  extraHeaders: Readonly<Record<string, string>>,
  stallMs: number,
  onRefused?: (fields: { readonly status: number; readonly code: string; readonly address: string }) => void,
): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    const refusal = error.code === 'HPE_HEADER_OVERFLOW' ? HEADERS_TOO_LARGE : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? TIMED_OUT : BAD_REQUEST;
    const { status, title } = refusal;
    const { body, headers: common } = problemAnswer(refusal, extraHeaders);
    const headers = { ...common, Connection: 'close' };
    // null once a response has finished on a kept-alive connection; a ServerResponse while one is in flight.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    if (inFlight !== undefined) {
      if (!inFlight.headersSent && !inFlight.req.complete) {
        // The error is in this request's own body: its response carries the 400.
        inFlight.writeHead(status, headers).end(body);
      } else if (!inFlight.headersSent) {
        // The error is in a request pipelined behind one still being handled: that one gets its
        // answer, then the connection closes (RFC 9112 §9.3); the bad one gets none.
        inFlight.shouldKeepAlive = false;
      } else if (inFlight.writableFinished) {
        socket.end();
      } else if (!closingAfter.has(socket)) {
        // Node reports this again on every read while its parser waits (HPE_PAUSED, for a client
        // that pipelines and does not read its answers): one listener, one timer. A response its
        // client never takes never finishes, and Node no longer reads or writes that socket, so
        // not even the client's reset would free it: it is cut after the request time-out.
        closingAfter.add(socket);
        inFlight.once('finish', () => socket.end());
        const stalled = setTimeout(() => socket.destroy(), stallMs);
        stalled.unref();
        socket.once('close', () => clearTimeout(stalled));
      }
      return;
    }
    socket.end(rawResponse(status, title, headers, body));
    // C-6: a request the parser refused never reaches the dispatcher, which logs the others. A
    // time-out (408) is no request refused: most are connections that never sent one.
    if (status !== 408) onRefused?.({ status, code: error.code ?? 'unknown', address: socket.remoteAddress ?? '' });
  };
}

const CONNECT_ALLOW = 'GET, HEAD, OPTIONS, PUT, POST';

/**
 * CONNECT asks for a tunnel, which this origin server never opens (RFC 9110 §9.3.6 lets us refuse
 * with any 4xx): 405. Over HTTP/1.1 Node hands over the raw socket; over HTTP/2 (RFC 9113 §8.5) a
 * request and its response (node:http2's compatibility API; refuseConnectStream for the stream API).
 */
export function refuseConnect(extraHeaders: Readonly<Record<string, string>>): (req: HttpRequest, socketOrResponse: Socket | HttpResponse) => void {
  return (_req, target) => {
    const { body, headers } = connectRefusal(extraHeaders);
    if (target instanceof Http2ServerResponse) {
      target.writeHead(405, headers).end(body);
      return;
    }
    const socket = target as Socket;
    socket.on('error', () => socket.destroy());
    socket.end(rawResponse(405, 'Method Not Allowed', { ...headers, Connection: 'close' }, body));
  };
}

export function refuseConnectStream(stream: ServerHttp2Stream, extraHeaders: Readonly<Record<string, string>>): void {
  const { body, headers } = connectRefusal(extraHeaders);
  respondOnStream(stream, 405, headers, body);
}

function connectRefusal(extraHeaders: Readonly<Record<string, string>>): ProblemAnswer {
  return problemAnswer(problem(405, 'method-not-allowed', { detail: `Allowed: ${CONNECT_ALLOW}.` }), extraHeaders, { Allow: CONNECT_ALLOW });
}

interface ProblemAnswer {
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A problem document and its headers (T-4, no-store), for the answers written here. */
function problemAnswer(fields: Problem, extraHeaders: Readonly<Record<string, string>>, own: Readonly<Record<string, string>> = {}): ProblemAnswer {
  const body = JSON.stringify(fields);
  const headers = {
    'Content-Type': 'application/problem+json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...own,
    ...SECURITY_HEADERS,
    ...extraHeaders,
    'Cache-Control': 'no-store',
  };
  return { body, headers };
}

/**
 * RFC 9112 §3.2: whether a request's Host must be refused: none on HTTP/1.1 (`required`), more than
 * one on any version, or a value that is no `uri-host [ ":" port ]` (RFC 3986 §3.2.2; empty is allowed).
 */
export function badHost(rawHeaders: readonly string[], required: boolean): boolean {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    // As clients spell it first: no lowercase copy of every four-letter name.
    if (name.length !== 4 || (name !== 'Host' && name !== 'host' && name.toLowerCase() !== 'host')) continue;
    if (value !== undefined) return true;
    value = rawHeaders[i + 1] as string;
  }
  if (value === undefined) return required;
  if (value === lastValidHost) return false;
  if (!validHost(value)) return true;
  lastValidHost = value;
  return false;
}

/** The last Host value found valid: clients send the same one request after request, compared whole instead of checked again. */
let lastValidHost: string | undefined;

/** reg-name's characters (unreserved, pct-encoded, sub-delims); an IP-literal's add ':'. */
const REG_NAME = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%!$&'()*+,;=") REG_NAME[c.charCodeAt(0)] = 1;
const IP_LITERAL = REG_NAME.slice();
IP_LITERAL[0x3a] = 1;

function validHost(value: string): boolean {
  const n = value.length;
  let i = 0;
  if (n > 0 && value.charCodeAt(0) === 0x5b) {
    // '[' IPv6address / IPvFuture ']'
    const close = value.indexOf(']');
    if (close < 2) return false;
    for (i = 1; i < close; i++) if (IP_LITERAL[value.charCodeAt(i)] !== 1) return false;
    i = close + 1;
  } else {
    while (i < n && REG_NAME[value.charCodeAt(i)] === 1) i++;
  }
  if (i === n) return true;
  if (value.charCodeAt(i) !== 0x3a) return false; // ':' port
  for (i++; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** RFC 9112 §3.2: 400 for the Host badHost() refuses; the connection closes after it. */
export function answerBadHost(res: HttpResponse, extraHeaders: Readonly<Record<string, string>>): void {
  const detail = 'Host must appear once (on HTTP/1.1 it is required), holding a host and an optional port (RFC 9112 §3.2).';
  const { body, headers } = problemAnswer(problem(400, 'bad-request', { detail }), extraHeaders);
  (res as ServerResponse).shouldKeepAlive = false;
  res.writeHead(400, headers).end(body);
}

/**
 * A request line on an HTTP/1.x connection that names another major version (`HTTP/2.0`,
 * `HTTP/0.9`, both taken by llhttp) is refused: 400, as L-2 keeps 5xx for overload (RFC 9110
 * §15.6.6's 505 would be the other choice); the connection closes after it.
 */
export function answerOtherVersion(res: ServerResponse, extraHeaders: Readonly<Record<string, string>>, asked: string): void {
  const detail = `This connection speaks HTTP/1.1 (and 1.0), not the HTTP/${asked} its request line names; HTTP/2 is chosen by TLS ALPN (RFC 9113 §3.2).`;
  const { body, headers } = problemAnswer(problem(400, 'bad-request', { detail }), extraHeaders);
  res.shouldKeepAlive = false;
  res.writeHead(400, headers).end(body);
}

/**
 * RFC 9113 §8.3.1: whether an HTTP/2 request's Host names another host or port than its
 * `:authority` (compared as RFC 3986 §6.2 normalises them: case, an empty or default port), or is
 * one badHost() refuses. A request with only one of the two is not refused here.
 */
export function hostDiffersFromAuthority(headers: Readonly<Record<string, string | string[] | undefined>>, rawHeaders: readonly string[]): boolean {
  const host = headers['host'];
  if (host === undefined) return false;
  if (badHost(rawHeaders, false)) return true;
  const authority = headers[':authority'];
  return typeof authority === 'string' && normalAuthority(authority) !== normalAuthority(String(host));
}

/** An https authority as RFC 3986 §6.2.2-6.2.3 normalises it: lowercase, without an empty or default (443) port. */
function normalAuthority(value: string): string {
  const lower = value.toLowerCase();
  if (lower.endsWith(':443')) return lower.slice(0, -4);
  return lower.endsWith(':') ? lower.slice(0, -1) : lower;
}

/** RFC 9113 §8.3.1 / §8.1.1: the 400 for a malformed HTTP/2 request whose Host is refused. */
export function answerHostMismatch(res: Http2ServerResponse | ServerHttp2Stream, extraHeaders: Readonly<Record<string, string>>): void {
  const detail = 'Host, when sent over HTTP/2, must appear once and name the same host and port as :authority (RFC 9113 §8.3.1).';
  const { body, headers } = problemAnswer(problem(400, 'bad-request', { detail }), extraHeaders);
  if (res instanceof Http2ServerResponse) res.writeHead(400, headers).end(body);
  else respondOnStream(res, 400, headers, body);
}

/**
 * L-1 over HTTP/2: a header block past `maxHeaderBytes` (counted as RFC 9113 §6.5.2 counts
 * SETTINGS_MAX_HEADER_LIST_SIZE: name, value and 32 octets per field) is answered 431. Node
 * resets such a stream itself once the client has acknowledged our SETTINGS; a client's first
 * requests may arrive before that, and get this answer.
 */
export function headerListTooLarge(rawHeaders: readonly string[], maxHeaderBytes: number): boolean {
  let size = 0;
  for (const field of rawHeaders) size += field.length + 16;
  return size > maxHeaderBytes;
}

export function answerHeadersTooLarge(res: Http2ServerResponse | ServerHttp2Stream, extraHeaders: Readonly<Record<string, string>>): void {
  const { body, headers } = problemAnswer(HEADERS_TOO_LARGE, extraHeaders);
  if (res instanceof Http2ServerResponse) res.writeHead(431, headers).end(body);
  else respondOnStream(res, 431, headers, body);
}

/** A whole response on an HTTP/2 stream, unless the client has reset it already. */
function respondOnStream(stream: ServerHttp2Stream, status: number, headers: Readonly<Record<string, string>>, body: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ...headers, ':status': status });
  stream.end(body);
}

function rawResponse(status: number, title: string, headers: Readonly<Record<string, string>>, body: string): string {
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${title}\r\n${head}\r\n${body}`;
}
