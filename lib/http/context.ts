import type { IncomingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import { readBody, type BodySource } from './body.js';
import type { HttpRequest } from './messages.js';
import { clientAddress, type TrustProxy } from './trust-proxy.js';

/**
 * What a handler may know about a request: parsed once, no access to the raw socket. A class, not
 * an object literal with a closure: one allocation per request, and the body's source stays private.
 * Built from an HTTP/1.1 (or node:http2 compatibility) request, or from an HTTP/2 stream's header
 * block (H-1): handlers cannot tell which.
 */
export class RequestContext {
  readonly id: string;
  readonly method: string;
  /** The raw path, without the query. */
  readonly path: string;
  /** The raw query after '?', or undefined when the target has no '?'. */
  readonly rawQuery: string | undefined;
  /** HTTPS, directly or through a trusted proxy (T-5). */
  readonly secure: boolean;
  /** The client's address (T-5). */
  readonly address: string;
  /** Over HTTP/2 the pseudo-header fields (`:method`, `:path` …) are among them, as node:http2 gives them. */
  readonly headers: IncomingHttpHeaders;
  /** HTTP/2, whichever API carried it: connection-specific response fields are not allowed (RFC 9113 §8.2.2). */
  readonly http2: boolean;
  /** When the request reached the dispatcher (`performance.now()`; 0 when nothing times it), for the access log and metrics. */
  readonly started: number;
  /** The matched route's pattern (`/user/{name}`), set by the dispatcher once routed: metrics and log labels. */
  route: string | undefined = undefined;
  readonly #body: BodySource;

  constructor(method: string, rawTarget: string, headers: IncomingHttpHeaders, peer: string, direct: boolean, http2: boolean, body: BodySource, id: string, trust: TrustProxy, started: number) {
    const target = originForm(rawTarget);
    const q = target.indexOf('?');
    const trusted = trust.isTrusted(peer);
    const proto = headers['x-forwarded-proto'];
    const forwardedFor = headers['x-forwarded-for'];
    this.id = id;
    this.method = method;
    this.path = q < 0 ? target : target.slice(0, q);
    this.rawQuery = q < 0 ? undefined : target.slice(q + 1);
    this.secure = direct || (trusted && typeof proto === 'string' && proto.trim().toLowerCase() === 'https');
    this.address = trusted ? clientAddress(peer, typeof forwardedFor === 'string' ? forwardedFor : undefined, trust) : stripMapped(peer);
    this.headers = headers;
    this.http2 = http2;
    this.started = started;
    this.#body = body;
  }

  /** A request from node:http, node:https or node:http2's compatibility API. */
  static fromRequest(req: HttpRequest, id: string, trust: TrustProxy, started: number): RequestContext {
    const direct = (req.socket as { encrypted?: boolean }).encrypted === true;
    return new RequestContext(req.method ?? 'GET', req.url ?? '/', req.headers, req.socket.remoteAddress ?? '', direct, req.httpVersionMajor === 2, req, id, trust, started);
  }

  /** An HTTP/2 stream and its header block, on a TLS session whose peer is `peer`. */
  static fromStream(stream: ServerHttp2Stream, headers: Http2Headers, peer: string, id: string, trust: TrustProxy, started: number): RequestContext {
    return new RequestContext(headers[':method'] ?? 'GET', headers[':path'] ?? '/', headers as IncomingHttpHeaders, peer, true, true, stream, id, trust, started);
  }

  readBody(limit: number): Promise<Buffer> {
    return readBody(this.#body, this.headers['content-length'], limit);
  }
}

/** RFC 9112 §3.2.2: a server must accept the absolute-form (`https://host/path?q`); use its path and query. */
function originForm(target: string): string {
  if (target.startsWith('/') || !/^https?:\/\//i.test(target)) return target;
  const slash = target.indexOf('/', target.indexOf('//') + 2);
  const query = target.indexOf('?', target.indexOf('//') + 2);
  if (slash < 0 || (query >= 0 && query < slash)) return `/${query < 0 ? '' : target.slice(query)}`;
  return target.slice(slash);
}

function stripMapped(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
