import type { IncomingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import { Socket } from 'node:net';
import { readBody, type BodySource } from './body.js';
import { isHttp2Request, type HttpRequest } from './messages.js';
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
  /** The raw path, without the query, as the client sent it (with any mount prefix: Digest's `uri` is this). */
  readonly path: string;
  /**
   * The path under the service's `basePath`, what the routes are matched against: `path`
   * itself without one; undefined when `path` is outside it.
   */
  readonly localPath: string | undefined;
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

  constructor(method: string, rawTarget: string, headers: IncomingHttpHeaders, peer: string, direct: boolean, http2: boolean, body: BodySource, id: string, trust: TrustProxy, started: number, base = '') {
    const parts = rawTarget === lastParts.rawTarget && base === lastParts.base ? lastParts : (lastParts = new TargetParts(rawTarget, base));
    // The forwarded fields are read only from a trusted peer (T-5): a lookup in a header object
    // (a shape of its own per request) costs a few hundred instructions.
    const trusted = trust.isTrusted(peer);
    this.id = id;
    this.method = method;
    this.path = parts.path;
    this.rawQuery = parts.rawQuery;
    this.localPath = parts.localPath;
    this.secure = direct || (trusted && forwardedHttps(headers['x-forwarded-proto']));
    this.address = trusted ? clientAddress(peer, forwardedFor(headers['x-forwarded-for']), trust) : stripMapped(peer);
    this.headers = headers;
    this.http2 = http2;
    this.started = started;
    this.#body = body;
  }

  /**
   * A request from node:http, node:https or node:http2's compatibility API. A-9: a framework that
   * mounts the handler under a path (Express, Connect) strips it from `req.url` and keeps the
   * whole target in `req.originalUrl`: that one is read.
   */
  static fromRequest(req: HttpRequest, id: string, trust: TrustProxy, started: number, base = ''): RequestContext {
    const direct = (req.socket as { encrypted?: boolean }).encrypted === true;
    const original = (req as { originalUrl?: unknown }).originalUrl;
    const target = typeof original === 'string' ? original : (req.url ?? '/');
    return new RequestContext(req.method ?? 'GET', target, req.headers, peerOf(req.socket), direct, isHttp2Request(req), req, id, trust, started, base);
  }

  /** An HTTP/2 stream and its header block, on a TLS session whose peer is `peer`. */
  static fromStream(stream: ServerHttp2Stream, headers: Http2Headers, peer: string, id: string, trust: TrustProxy, started: number, base = ''): RequestContext {
    return new RequestContext(headers[':method'] ?? 'GET', headers[':path'] ?? '/', headers as IncomingHttpHeaders, peer, true, true, stream, id, trust, started, base);
  }

  readBody(limit: number): Promise<Buffer> {
    return readBody(this.#body, this.headers['content-length'], limit, this.headers['content-encoding']);
  }
}

/** A request target split into its path and query, and the path under a mount. */
class TargetParts {
  readonly path: string;
  readonly rawQuery: string | undefined;
  readonly localPath: string | undefined;

  constructor(readonly rawTarget: string, readonly base: string) {
    const target = originForm(rawTarget);
    const q = target.indexOf('?');
    this.path = q < 0 ? target : target.slice(0, q);
    this.rawQuery = q < 0 ? undefined : target.slice(q + 1);
    this.localPath = base === '' ? this.path : unmount(this.path, base);
  }
}

/**
 * The last target split: the same target again (a client asking for one resource, request after
 * request) gets the same strings, which the router's and the handlers' memos then find by identity.
 * Split afresh, a path with a query is a new slice of the target each time, and V8 compares two
 * slices in its runtime: some 500 instructions a request, counted with callgrind (bench/HISTORY.md).
 */
let lastParts = new TargetParts('/', '');

/** Each connection's peer address, once read (below). */
const peers = new WeakMap<object, string>();

/**
 * The address of a connection's peer, read from node:net once per connection rather than once per
 * request: its `remoteAddress` getter reads the socket's handle twice through an accessor that every
 * kind of socket in the process goes through, so both reads take V8's slowest path (about 470
 * instructions a request, counted with callgrind: bench/HISTORY.md).
 */
function peerOf(socket: { readonly remoteAddress?: string | undefined }): string {
  // service.fetch's stand-in (a plain object per request) says it as a plain property.
  if (!(socket instanceof Socket)) return socket.remoteAddress ?? '';
  const known = peers.get(socket);
  if (known !== undefined) return known;
  const address = socket.remoteAddress;
  // A socket already closed may not know it (node:net then has no handle to ask): not kept.
  if (address === undefined) return '';
  peers.set(socket, address);
  return address;
}

/** RFC 9112 §3.2.2: a server must accept the absolute-form (`https://host/path?q`); use its path and query. */
function originForm(target: string): string {
  if (target.startsWith('/') || !/^https?:\/\//i.test(target)) return target;
  const slash = target.indexOf('/', target.indexOf('//') + 2);
  const query = target.indexOf('?', target.indexOf('//') + 2);
  if (slash < 0 || (query >= 0 && query < slash)) return `/${query < 0 ? '' : target.slice(query)}`;
  return target.slice(slash);
}

/** `path` under the mount `base` (`/svc` → `/`, `/svc/api/x` → `/api/x`), or undefined outside it (`/svcx`). */
function unmount(path: string, base: string): string | undefined {
  if (!path.startsWith(base)) return undefined;
  if (path.length === base.length) return '/';
  return path.charCodeAt(base.length) === 0x2f ? path.slice(base.length) : undefined;
}

function forwardedHttps(proto: string | string[] | undefined): boolean {
  return typeof proto === 'string' && proto.trim().toLowerCase() === 'https';
}

function forwardedFor(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function stripMapped(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
