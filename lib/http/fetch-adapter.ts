import { Buffer } from 'node:buffer';
import { IncomingMessage, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ServiceError } from '../errors.js';
import { invalidArgument, validateOptionalObject } from '../validate.js';
import type { HttpRequest, HttpResponse, RequestHandler } from './messages.js';
import type { BodySink } from './send-body.js';
import { bufferedResponse } from './buffered-response.js';

/** What `service.fetch` takes besides the global fetch's `RequestInit`: the client's address. */
export interface FetchInit extends RequestInit {
  /** The client's address the service sees (throttling, logs, trust-proxy). @default '127.0.0.1' */
  readonly address?: string;
}

/**
 * `service.fetch`: the global fetch's arguments in, a WHATWG Response out; or, as a fetch
 * framework calls its handler, a Request and the framework's own context (Hono's `env` and
 * execution context), which is not an init and is left alone (`fetchInit`).
 */
export interface FetchHandler {
  (input: Request | URL | string, init?: FetchInit): Promise<Response>;
  (request: Request, context?: unknown, ...rest: unknown[]): Promise<Response>;
}

/** RequestInit's members (Fetch, and undici's `dispatcher`). */
const INIT_MEMBERS = ['method', 'headers', 'body', 'signal', 'redirect', 'referrer', 'referrerPolicy', 'mode', 'credentials', 'cache', 'integrity', 'keepalive', 'duplex', 'priority', 'window', 'dispatcher'];

/** Whether `init` has any of RequestInit's members (or A-8's `address`, when `address` says so). */
function hasInitMembers(init: object, address: boolean): boolean {
  return INIT_MEMBERS.some((member) => member in init) || (address && 'address' in init);
}

/**
 * The init of a call to `service.fetch`. With a Request, a second argument that has none of an
 * init's members is a fetch framework's context (Hono passes its `env` there), not an init: it is
 * ignored, but for the client's address where @hono/node-server gives its node:http request as
 * `incoming`, so throttling and the log see the real client rather than 127.0.0.1.
 */
function fetchInit(input: unknown, second: unknown): FetchInit | undefined {
  if (!(input instanceof Request) || second === null || typeof second !== 'object') return second as FetchInit | undefined;
  if (hasInitMembers(second, true)) return second as FetchInit;
  const address = (second as { incoming?: { socket?: { remoteAddress?: unknown } } }).incoming?.socket?.remoteAddress;
  return typeof address === 'string' && address !== '' ? { address } : undefined;
}

/** What a path such as `/api/books.xml` is resolved against: HTTPS, so every route is served (T-3). */
const ORIGIN = 'https://localhost';

/**
 * Connection-specific fields (RFC 9110 §7.6.1) mean nothing in a Response handed to a caller in
 * the same process (a reply's "close the connection" has no connection here), and a framework
 * that sends the Response on would apply them to its own connection.
 */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** Statuses whose Response must have no body (Fetch: null body status). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * requests without a socket. Each call hands `handler` (the dispatcher: routing,
 * negotiation, authentication, throttling, problems, log, metrics) a request and a response that
 * live in memory: the request carries what the dispatcher reads of a node:http request (method,
 * target, headers, the peer's address and whether it came over TLS) and its body as a Readable
 * only when there is one; the response takes `writeHead` and `end` and resolves the Response.
 */
export function createFetchHandler(handler: RequestHandler): FetchHandler {
  return async function fetch(input: Request | URL | string, second?: unknown): Promise<Response> {
    const init = fetchInit(input, second);
    const signal = abortSignal(input, init);
    const { method, url, headers, body } = requestParts(input, init);
    // As the global fetch: an aborted signal rejects with its reason, before anything is sent.
    signal?.throwIfAborted();
    const stream = body === null || body instanceof Uint8Array ? undefined : Readable.fromWeb(body as WebReadableStream<Uint8Array>);
    const req = stream ?? (body === null ? noBody() : bytesBody(body as Uint8Array));
    Object.assign(req, {
      method,
      url: `${url.pathname}${url.search}`,
      headers: nodeHeaders(headers, url, body),
      httpVersionMajor: 1,
      httpVersionMinor: 1,
      socket: { encrypted: url.protocol === 'https:', remoteAddress: init?.address ?? '127.0.0.1' },
    });
    return new Promise<Response>((resolve, reject) => {
      if (signal === undefined) {
        handler(req as unknown as HttpRequest, new InProcessResponse(method, resolve, reject) as unknown as HttpResponse);
        return;
      }
      // Aborted while the service works on it: rejected with the signal's reason, the request's body
      // cut (a handler reading it gets an error), and whatever the service answers later dropped.
      const onAbort = (): void => {
        response.abort(signal.reason);
        // Only a stream is still arriving; bytes given whole are all here (and their message has no socket to destroy).
        stream?.destroy();
      };
      const settled = (): void => signal.removeEventListener('abort', onAbort);
      const response = new InProcessResponse(method, (r) => (settled(), resolve(r)), (e) => (settled(), reject(e)));
      signal.addEventListener('abort', onAbort, { once: true });
      handler(req as unknown as HttpRequest, response as unknown as HttpResponse);
    });
  };
}

/**
 * The signal the call is aborted by: init's (`null` there: none, as Fetch has it), else a Request's
 * own, or undefined; anything else as `init.signal` is refused.
 */
function abortSignal(input: unknown, init: FetchInit | undefined): AbortSignal | undefined {
  const given = init?.signal;
  if (given === null) return undefined;
  if (given !== undefined) {
    if (!(given instanceof AbortSignal)) throw invalidArgument('init.signal', 'an AbortSignal', given);
    return given;
  }
  return input instanceof Request ? input.signal : undefined;
}

/** What a request is made of, as the Fetch standard reads it from `fetch`'s arguments. */
interface RequestParts {
  readonly method: string;
  readonly url: URL;
  readonly headers: Headers;
  /** Bytes when the caller gave them whole (a string, a buffer): no stream to build or to read. */
  readonly body: ReadableStream<Uint8Array> | Uint8Array | null;
}

/**
 * The input and init as the Fetch standard would make them a Request, or ERR_INVALID_ARGUMENT
 * naming what is wrong (never a TypeError from inside). A URL or a path without a body (the usual
 * test request) is read without building a Request, which costs more than the rest of the call.
 */
function requestParts(input: unknown, init: FetchInit | undefined): RequestParts {
  validateOptionalObject(init as unknown, 'init');
  if (init?.address !== undefined && (typeof init.address !== 'string' || init.address === '')) throw invalidArgument('init.address', 'an IP address (a string)', init.address);
  let url: URL | undefined;
  if (typeof input === 'string') {
    try {
      url = new URL(input, ORIGIN);
    } catch {
      throw invalidArgument('input', 'a URL or a path', input);
    }
  } else if (input instanceof URL) url = input;
  else if (!(input instanceof Request)) throw invalidArgument('input', 'a Request, a URL or a string', input);
  else if (input.bodyUsed || input.body?.locked === true) throw new ServiceError('ERR_INVALID_ARGUMENT', 'input is a Request whose body was already read');
  if (url !== undefined && url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidArgument('input', 'an http: or https: URL', url.href);
  try {
    if (url !== undefined && (init?.body === undefined || init.body === null)) {
      return { method: normalizeMethod(init?.method ?? 'GET'), url, headers: new Headers(init?.headers), body: null };
    }
    if (url !== undefined && init !== undefined) {
      const whole = wholeBody(init.body);
      if (whole !== undefined) {
        const method = normalizeMethod(init.method ?? 'GET');
        if (method === 'GET' || method === 'HEAD') throw new TypeError('Request with GET/HEAD method cannot have body.');
        const headers = new Headers(init.headers);
        // Fetch's "extract a body": a string is text/plain;charset=UTF-8 unless the caller said otherwise.
        if (whole.type !== undefined && !headers.has('content-type')) headers.set('content-type', whole.type);
        return { method, url, headers, body: whole.bytes };
      }
    }
    // A Request with no init, or with only A-8's address, is read as it is: no copy (a framework's
    // own request class, as @hono/node-server's, need not survive Request's constructor).
    // The copy does not follow the caller's signal (fetch() does, and leaves no listener behind).
    const copied = init === undefined ? undefined : { ...init, signal: null };
    const request = url === undefined ? (init === undefined || !hasInitMembers(init, false) ? (input as Request) : new Request(input as Request, copied)) : new Request(url, copied);
    return { method: request.method, url: url ?? new URL(request.url), headers: request.headers, body: request.body };
  } catch (error) {
    // The Fetch standard's own refusals (a body on GET, a forbidden method, a bad header…): what the message says.
    throw new ServiceError('ERR_INVALID_ARGUMENT', `${init === undefined ? 'input' : 'init'} is not a request the Fetch standard allows: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * A body given whole: a string (UTF-8, with the type Fetch gives it) or bytes (a copy, as Fetch
 * takes one, so the caller may reuse its buffer). Anything else (a stream, a Blob, FormData,
 * URLSearchParams) goes through a standard Request.
 */
function wholeBody(body: unknown): { readonly bytes: Uint8Array; readonly type?: string } | undefined {
  if (typeof body === 'string') return { bytes: Buffer.from(body), type: 'text/plain;charset=UTF-8' };
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body.slice(0)) };
  if (ArrayBuffer.isView(body)) return { bytes: Buffer.from(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)) };
  return undefined;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/** Fetch §2.2.1: a method is a token; CONNECT, TRACE and TRACK are forbidden; the six common ones are uppercased. */
function normalizeMethod(method: unknown): string {
  if (typeof method !== 'string' || !TOKEN.test(method)) throw new TypeError(`'${String(method)}' is not a valid HTTP method.`);
  const upper = method.toUpperCase();
  if (FORBIDDEN_METHODS.has(upper)) throw new TypeError(`'${method}' HTTP method is unsupported.`);
  return NORMALIZED_METHODS.has(upper) ? upper : method;
}

/**
 * The request's fields as node:http gives them: lowercase names, repeated fields joined (the
 * Headers object has already joined them), `host` from the URL when not given, and a body's
 * framing (bytes given whole: their length, as fetch sends it; a stream of unknown length: chunked).
 */
function nodeHeaders(fields: Headers, url: URL, body: RequestParts['body']): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of fields) headers[name] = value;
  headers.host ??= url.host;
  if (body instanceof Uint8Array) headers['content-length'] = String(body.byteLength);
  else if (body !== null && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  return headers;
}

/**
 * A body whose bytes are all here: a node:http request the parser has finished (one chunk, then
 * the end, `complete`), so it is read as a socket's small body is, in one `read()`.
 */
function bytesBody(bytes: Uint8Array): Readable {
  const message = new IncomingMessage(null as unknown as Socket);
  message.push(bytes);
  message.push(null);
  message.complete = true;
  return message;
}

/** A request without a body: already ended, as node:http's is once its headers are parsed. */
function noBody(): object {
  return { readableEnded: true, destroyed: false, readableAborted: false, complete: true };
}

/**
 * The response the dispatcher writes to (reply.ts: `writeHead`, then `end`, or for a large body
 * `write`s of pieces and a last `end`, send-body.ts). It becomes the Response; `destroy()` before
 * the end (a write that failed half-way) rejects, as the global fetch rejects when a connection
 * drops mid-response. Nothing waits on a reader here: every piece is taken at once.
 */
class InProcessResponse implements BodySink {
  headersSent = false;
  destroyed = false;
  statusCode = 200;
  readonly writableLength = 0;
  /** As writeHead was given them: name, value pairs (reply.ts), or an object (the 500 written when a reply could not be). */
  #headers: ReadonlyArray<string | readonly string[]> | Readonly<Record<string, string | readonly string[]>> = [];
  #pieces: Buffer[] | undefined;
  #onClose: (() => void) | undefined;
  readonly #method: string;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (error: Error) => void;

  constructor(method: string, resolve: (response: Response) => void, reject: (error: Error) => void) {
    this.#method = method;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  writeHead(status: number, headers: ReadonlyArray<string | readonly string[]> | Readonly<Record<string, string | readonly string[]>>): this {
    this.statusCode = status;
    this.#headers = headers;
    this.headersSent = true;
    return this;
  }

  write(piece: Buffer, callback?: (error?: Error | null) => void): boolean {
    (this.#pieces ??= []).push(piece);
    if (callback !== undefined) queueMicrotask(() => callback(null));
    return true;
  }

  end(last?: string | Buffer, callback?: () => void): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    const pieces = this.#pieces;
    const body = pieces === undefined ? last : Buffer.concat(last === undefined ? pieces : [...pieces, Buffer.from(last)]);
    const headers = new Headers();
    const given = this.#headers;
    const pairs = Array.isArray(given) ? given : Object.entries(given).flat();
    for (let i = 0; i < pairs.length; i += 2) {
      const name = pairs[i] as string;
      if (CONNECTION_SPECIFIC.has(name)) continue;
      const value = pairs[i + 1] as string | readonly string[];
      if (typeof value === 'string') headers.append(name, value);
      else for (const one of value) headers.append(name, one);
    }
    const status = this.statusCode;
    const bodyless = body === undefined || this.#method === 'HEAD' || NULL_BODY.has(status);
    this.#resolve(bodyless ? new Response(null, { status, headers }) : bufferedResponse(typeof body === 'string' ? Buffer.from(body) : body, { status, headers }));
    callback?.();
    this.#onClose?.();
    return this;
  }

  once(event: string, listener: () => void): this {
    if (event === 'close') this.#onClose = listener;
    return this;
  }

  destroy(): this {
    return this.abort(new TypeError('fetch failed: the response could not be written'));
  }

  /** Ends the exchange unanswered: the call rejects with `reason`, and what is written later is dropped. */
  abort(reason: unknown): this {
    if (!this.destroyed) {
      this.destroyed = true;
      this.#reject(reason as Error);
      this.#onClose?.();
    }
    return this;
  }
}
