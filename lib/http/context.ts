import type { IncomingHttpHeaders } from 'node:http';
import { readBody } from './body.js';
import type { HttpRequest } from './messages.js';
import { clientAddress, type TrustProxy } from './trust-proxy.js';

/**
 * What a handler may know about a request: parsed once, no access to the raw socket. A class, not
 * an object literal with a closure: one allocation per request, and `#req` stays private.
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
  readonly headers: IncomingHttpHeaders;
  /** The matched route's pattern (`/user/{name}`), set by the dispatcher once routed: metrics and log labels. */
  route: string | undefined = undefined;
  readonly #req: HttpRequest;

  constructor(req: HttpRequest, id: string, trust: TrustProxy) {
    const target = originForm(req.url ?? '/');
    const q = target.indexOf('?');
    const peer = req.socket.remoteAddress ?? '';
    const trusted = trust.isTrusted(peer);
    const direct = (req.socket as { encrypted?: boolean }).encrypted === true;
    const headers = req.headers;
    const proto = headers['x-forwarded-proto'];
    const forwardedFor = headers['x-forwarded-for'];
    this.id = id;
    this.method = req.method ?? 'GET';
    this.path = q < 0 ? target : target.slice(0, q);
    this.rawQuery = q < 0 ? undefined : target.slice(q + 1);
    this.secure = direct || (trusted && typeof proto === 'string' && proto.trim().toLowerCase() === 'https');
    this.address = trusted ? clientAddress(peer, typeof forwardedFor === 'string' ? forwardedFor : undefined, trust) : stripMapped(peer);
    this.headers = headers;
    this.#req = req;
  }

  readBody(limit: number): Promise<Buffer> {
    return readBody(this.#req, limit);
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
