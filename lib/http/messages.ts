import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

/**
 * A request as a request handler gets it: HTTP/1.1 from node:http or node:https, or HTTP/2 through
 * node:http2's compatibility API (H-1, A-1: an embedder's `http2.createSecureServer`; the
 * service's own listener serves HTTP/2 streams without it, see dispatch.ts). Code that needs
 * more than the two have in common asks isHttp2Request().
 */
export type HttpRequest = IncomingMessage | Http2ServerRequest;

/** The response that goes with an HttpRequest. */
export type HttpResponse = ServerResponse | Http2ServerResponse;

/** The request handler the listeners (HTTP/1.1) and an embedder's server call. */
export type RequestHandler = (req: HttpRequest, res: HttpResponse) => void;

/**
 * Whether `req` came through node:http2's compatibility API. Not `httpVersionMajor === 2` alone:
 * Node's HTTP/1.1 parser reads a request line saying `HTTP/2.0` as version 2.0 too.
 */
export function isHttp2Request(req: HttpRequest): req is Http2ServerRequest {
  return req.httpVersionMajor === 2 && 'stream' in req;
}
