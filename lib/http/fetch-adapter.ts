import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ServiceError } from '../errors.js';
import { invalidArgument, validateOptionalObject } from '../validate.js';
import type { HttpRequest, HttpResponse, RequestHandler } from './messages.js';

/** What `service.fetch` takes besides the global fetch's `RequestInit`: the client's address. */
export interface FetchInit extends RequestInit {
  /** The client's address the service sees (throttling, logs, trust-proxy). @default '127.0.0.1' */
  readonly address?: string;
}

/** `service.fetch`: the global fetch's arguments in, a WHATWG Response out. */
export type FetchHandler = (input: Request | URL | string, init?: FetchInit) => Promise<Response>;

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
  return async function fetch(input, init) {
    const request = toRequest(input, init);
    const url = new URL(request.url);
    const secure = url.protocol === 'https:';
    const address = init?.address ?? '127.0.0.1';
    const headers = nodeHeaders(request, url);
    const req = request.body === null ? noBody() : Readable.fromWeb(request.body as WebReadableStream<Uint8Array>);
    Object.assign(req, {
      method: request.method,
      url: `${url.pathname}${url.search}`,
      headers,
      httpVersionMajor: 1,
      httpVersionMinor: 1,
      socket: { encrypted: secure, remoteAddress: address },
    });
    return new Promise<Response>((resolve, reject) => {
      handler(req as unknown as HttpRequest, new InProcessResponse(request.method, resolve, reject) as unknown as HttpResponse);
    });
  };
}

/** The input and init as a Request, or ERR_INVALID_ARGUMENT naming what is wrong (never a TypeError from inside). */
function toRequest(input: unknown, init: FetchInit | undefined): Request {
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
  if (url !== undefined && url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidArgument('input', 'an http: or https: URL', url.href);
  try {
    return url === undefined ? (init === undefined ? (input as Request) : new Request(input as Request, init)) : new Request(url, init);
  } catch (error) {
    // The Fetch standard's own refusals (a body on GET, a forbidden method…): what the message says.
    throw new ServiceError('ERR_INVALID_ARGUMENT', `${init === undefined ? 'input' : 'init'} is not a request the Fetch standard allows: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * The request's fields as node:http gives them: lowercase names, repeated fields joined (the
 * Headers object has already joined them), `host` from the URL when not given, and a body's
 * framing (a Request's body is a stream of unknown length: chunked).
 */
function nodeHeaders(request: Request, url: URL): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of request.headers) headers[name] = value;
  headers.host ??= url.host;
  if (request.body !== null && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  return headers;
}

/** A request without a body: already ended, as node:http's is once its headers are parsed. */
function noBody(): object {
  return { readableEnded: true, destroyed: false, readableAborted: false, complete: true };
}

/**
 * The response the dispatcher writes to (reply.ts's writeReply): one `writeHead`, one `end`. It
 * becomes the Response; `destroy()` before `end()` (a write that failed half-way) rejects, as the
 * global fetch rejects when a connection drops mid-response.
 */
class InProcessResponse {
  headersSent = false;
  destroyed = false;
  statusCode = 200;
  #headers: Record<string, string | readonly string[]> = {};
  readonly #method: string;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (error: Error) => void;

  constructor(method: string, resolve: (response: Response) => void, reject: (error: Error) => void) {
    this.#method = method;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  writeHead(status: number, headers: Record<string, string | readonly string[]>): this {
    this.statusCode = status;
    this.#headers = headers;
    this.headersSent = true;
    return this;
  }

  end(body?: string): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    const headers = new Headers();
    const own = this.#headers;
    for (const name in own) {
      if (CONNECTION_SPECIFIC.has(name)) continue;
      const value = own[name] as string | readonly string[];
      if (typeof value === 'string') headers.append(name, value);
      else for (const one of value) headers.append(name, one);
    }
    const status = this.statusCode;
    const content = body === undefined || this.#method === 'HEAD' || NULL_BODY.has(status) ? null : body;
    this.#resolve(new Response(content, { status, headers }));
    return this;
  }

  destroy(): this {
    if (!this.destroyed) {
      this.destroyed = true;
      this.#reject(new TypeError('fetch failed: the response could not be written'));
    }
    return this;
  }
}
