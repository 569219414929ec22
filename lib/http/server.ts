import { createServer as createHttpServer, Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2ServerResponse, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import type { SecureContextOptions, Server as TlsServer, TLSSocket } from 'node:tls';
import { TLS_CIPHERS } from '../tls/ciphers.js';
import { answerBadHost, answerHeadersTooLarge, answerHostMismatch, answerOtherVersion, badHost, clientErrorHandler, headerListTooLarge, hostDiffersFromAuthority, refuseConnect, refuseConnectStream } from './client-error.js';
import type { StreamHandler } from './dispatch.js';
import { guardSessions, type SessionGuard, type SessionLimits } from './http2-sessions.js';
import { continueWhenRead } from './body.js';
import { isHttp2Request, type RequestHandler } from './messages.js';

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly httpPort: number | undefined;
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /** HTTP/2 (ALPN h2) beside HTTP/1.1 on the HTTPS port (H-1). */
  readonly http2: boolean;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxHeaderBytes: number;
  /** Response bytes one HTTP/2 session may hold unsent (L-2). @default DEFAULT_MAX_UNSENT_BYTES (http2-sessions.ts) */
  readonly maxUnsentBytes?: number;
  /** What all HTTP/2 sessions together may hold for their streams (L-2). @default DEFAULT_MAX_UNSENT_BYTES_TOTAL (http2-sessions.ts) */
  readonly maxUnsentBytesTotal?: number;
  /** Told when the HTTP/2 sessions hold the whole of maxUnsentBytesTotal: new streams are refused. */
  readonly onBudgetFull?: SessionLimits['onBudgetFull'];
  /** HSTS max-age for responses the listener writes itself (T-4); false or absent: none. */
  readonly hstsMaxAge?: number | false;
  /** Errors of a listening server (an accept() that failed, EMFILE): reported, never fatal (L-2). */
  readonly onListenerError?: (error: Error) => void;
  /** Told of each HTTP/1.1 request the parser refused (400, 408, 431), which no handler sees. */
  readonly onRefusedRequest?: (fields: { readonly status: number; readonly code: string; readonly address: string }) => void;
}

export interface Listeners {
  readonly url: string;
  readonly httpUrl: string | undefined;
  /** New TLS connections get this pair; open ones keep theirs (H-2). Throws when the pair does not load. */
  setCertificate(pair: { readonly cert: string | Buffer; readonly key: string | Buffer }): void;
  /**
   * C-5: HTTP/2 sessions get GOAWAY, the listeners stop accepting, HTTP/1.1 responses from now on
   * close their connection; in-flight requests finish within `graceMs`, then what is left is cut.
   */
  close(graceMs?: number): Promise<void>;
}

/** H-1: L-1's "at most 100 concurrent requests" per HTTP/2 connection. */
export const MAX_CONCURRENT_STREAMS = 100;

/**
 * L-2: responses one HTTP/1.1 connection may have waiting behind the one it is sending. Node
 * answers pipelined requests as they are parsed and keeps each response whole until its turn: 400
 * requests of /openapi.json in one 16 KB write, never read, held 26 MB a connection (a hostile
 * review: 40 such connections took RSS 77 → 1,590 MB). Past it the connection is closed (RFC 9112
 * §9.6): the responses cannot be sent out of order, and no browser pipelines.
 */
export const MAX_PIPELINED = 32;

const pipelined = new WeakMap<object, number>();

/** Counts a response waiting on `socket` until it closes; past MAX_PIPELINED destroys the connection instead (true). */
function overPipelined(socket: Socket): boolean {
  const waiting = (pipelined.get(socket) ?? 0) + 1;
  if (waiting > MAX_PIPELINED) {
    socket.destroy();
    return true;
  }
  pipelined.set(socket, waiting);
  return false;
}

/** A waiting response has gone (sent, or cut with its connection). */
function pipelinedDone(socket: Socket): void {
  pipelined.set(socket, (pipelined.get(socket) ?? 1) - 1);
}

/**
 * L-2 on any node:http listener: counts `res` if it is pipelined behind a response its connection
 * is still sending (Node keeps it until its turn); true when that was one too many and the
 * connection is cut (the request is then not to be answered).
 */
export function cutOverPipelined(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.socket !== null) return false;
  if (overPipelined(req.socket)) return true;
  res.once('close', () => pipelinedDone(req.socket));
  return false;
}

/**
 * The HTTPS listener (T-1: TLS 1.2 at least, AEAD suites; H-1: HTTP/2 and HTTP/1.1 unless http2 is
 * off) and the optional plain-HTTP one (T-3), with the L-1 limits. HTTP/1.1 time-outs are checked
 * every second, so a client past one is cut within about a second. A handler with a `stream`
 * method (the dispatcher's) serves HTTP/2 through node:http2's stream API; any other, through its
 * compatibility API.
 */
export async function startListeners(options: ListenerOptions, handler: RequestHandler & { readonly stream?: StreamHandler | undefined }): Promise<Listeners> {
  const http1Limits = nodeHttpLimits(options);
  const hsts = typeof options.hstsMaxAge === 'number' ? { 'Strict-Transport-Security': `max-age=${options.hstsMaxAge}` } : {};
  // C-5 (amended): once close() has begun, an HTTP/1.1 response says `Connection: close` and its
  // connection ends after it, so a keep-alive client opens its next connection elsewhere.
  let closing = false;
  /** The handler for a listener whose answers carry `extra` (HSTS on the HTTPS one, T-4). */
  const serveOn = (extra: Readonly<Record<string, string>>): RequestHandler => (req, res) => {
    if (!isHttp2Request(req)) {
      if (cutOverPipelined(req as IncomingMessage, res as ServerResponse)) return;
      // An HTTP/1.x connection whose request line says HTTP/2.0 or HTTP/0.9 (llhttp takes both):
      // refused, rather than served past the checks below as if it were HTTP/2.
      if (req.httpVersionMajor !== 1) {
        answerOtherVersion(res as ServerResponse, extra, req.httpVersion);
        options.onRefusedRequest?.({ status: 400, code: 'version', address: req.socket.remoteAddress ?? '' });
        return;
      }
      // llhttp passes a request without Host, with two, or with any value: RFC 9112 §3.2 refuses them.
      if (badHost(req.rawHeaders, req.httpVersionMinor >= 1)) {
        answerBadHost(res, extra);
        options.onRefusedRequest?.({ status: 400, code: 'host', address: req.socket.remoteAddress ?? '' });
        return;
      }
      if (closing) (res as ServerResponse).shouldKeepAlive = false;
    }
    handler(req, res);
  };
  const serve = serveOn(hsts);
  const servePlain = serveOn({});
  const tls = { minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS } as const satisfies SecureContextOptions;
  let secure: HttpsServer | Http2SecureServer;
  let sessions: SessionGuard | undefined;
  if (options.http2) {
    const server = createSecureServer(
      {
        ...tls,
        cert: options.cert,
        key: options.key,
        handshakeTimeout: options.headersTimeoutMs,
        allowHTTP1: true,
        settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: options.maxHeaderBytes, enablePush: false },
        // Node's defaults, stated because H-1 relies on them: a peer that keeps opening streams past
        // the limit, leaves pings unanswered or sends oversized SETTINGS loses its session.
        maxSessionRejectedStreams: 100,
        maxOutstandingPings: 10,
        maxSettings: 32,
        peerMaxConcurrentStreams: MAX_CONCURRENT_STREAMS,
      },
      (req, res) => {
        // HTTP/2 here only without a stream handler (serveStreams): node:http2's compatibility API.
        if (!isHttp2Request(req)) serve(req, res);
        else if (headerListTooLarge(req.rawHeaders, options.maxHeaderBytes)) {
          answerHeadersTooLarge(res as Http2ServerResponse, hsts);
          options.onRefusedRequest?.({ status: 431, code: 'header-list-too-large', address: req.socket.remoteAddress ?? '' });
        } else if (hostDiffersFromAuthority(req.headers, req.rawHeaders)) {
          answerHostMismatch(res as Http2ServerResponse, hsts);
          options.onRefusedRequest?.({ status: 400, code: 'host', address: req.socket.remoteAddress ?? '' });
        } else serve(req, res);
      },
    );
    // HTTP/1.1 connections on this port run on Node's http.Server machinery, which reads its
    // limits from these properties of the server.
    Object.assign(server, http1Limits);
    sessions = guardSessions(server, { ...options, maxConcurrentStreams: MAX_CONCURRENT_STREAMS });
    if (handler.stream !== undefined) serveStreams(server, handler.stream, options.maxHeaderBytes, hsts, options.onRefusedRequest);
    secure = server;
  } else {
    secure = createHttpsServer({ ...http1Limits, ...tls, cert: options.cert, key: options.key, handshakeTimeout: options.headersTimeoutMs }, serve);
  }
  cutUnfinishedHandshakes(secure);
  continueOnRead(secure);
  // A TLS socket that never sends a request line is not covered by headersTimeout in every Node
  // version: give each HTTP/1.1 connection an idle time-out as well. (An HTTP/2 session reads its
  // socket outside JavaScript, which would not see the activity; http2-sessions.ts guards those.)
  // The guard ends with the connection's first bytes: from there Node's headersTimeout and
  // requestTimeout cover the request, and keepAliveTimeout the pauses between requests. Left on, it
  // cut a first request whose answer took longer (a password change queued behind other hashes).
  // No 'data' listener and no socket time-out: either would take the socket's reading away from
  // the HTTP parser's native path (Node unconsumes it for a 'data' listener) or reach http.Server's
  // own 'timeout' handling; one timer per connection asks whether any byte came.
  secure.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return;
    const before = socket.bytesRead;
    const guard = setTimeout(() => {
      if (socket.bytesRead === before) socket.destroy();
    }, options.headersTimeoutMs + options.keepAliveTimeoutMs);
    guard.unref();
    socket.once('close', () => clearTimeout(guard));
  });
  const servers: Array<HttpsServer | Http2SecureServer | HttpServer> = [secure];
  let plain: HttpServer | undefined;
  if (options.httpPort !== undefined) {
    plain = createHttpServer(http1Limits, servePlain);
    continueOnRead(plain);
    servers.push(plain);
  }
  secure.on('clientError', clientErrorHandler(hsts, options.requestTimeoutMs, options.onRefusedRequest));
  plain?.on('clientError', clientErrorHandler({}, options.requestTimeoutMs, options.onRefusedRequest));
  // Without a listener Node drops a CONNECT without a word (HTTP/1.1) or with a bare 405 (HTTP/2).
  secure.on('connect', refuseConnect(hsts));
  plain?.on('connect', refuseConnect({}));
  // RFC 9110 §10.1.1 lets a server ignore an expectation it does not know; Node would answer
  // 417 itself, without the T-4 headers or a problem body. The handler answers instead.
  secure.on('checkExpectation', serve);
  plain?.on('checkExpectation', servePlain);
  try {
    await listen(secure, options.port, options.host);
    if (plain !== undefined && options.httpPort !== undefined) await listen(plain, options.httpPort, options.host);
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
  // Without a listener, an 'error' from accept() (out of descriptors) would end the process.
  for (const server of servers) server.on('error', (error: Error) => options.onListenerError?.(error));
  // Every TCP connection, whatever state its TLS or HTTP is in, so that close() can cut what is
  // left after the grace period: a server's close() waits for connections its own bookkeeping
  // may not know (one between handshake and first request on the HTTP/2 listener), and C-5 promises
  // an exit within the grace period.
  const connections = new Set<Socket>();
  for (const server of servers) {
    server.on('connection', (socket: Socket) => {
      connections.add(socket);
      socket.once('close', () => connections.delete(socket));
    });
  }
  const url = origin('https', options.host, (secure.address() as AddressInfo).port);
  const httpUrl = plain === undefined ? undefined : origin('http', options.host, (plain.address() as AddressInfo).port);

  return {
    url,
    httpUrl,
    setCertificate(pair) {
      secure.setSecureContext({ ...tls, cert: pair.cert, key: pair.key });
    },
    async close(graceMs = 10_000) {
      closing = true;
      // C-5 (amended): HTTP/2 sessions get GOAWAY (open streams finish) before the listener closes.
      const sessionsClosed = sessions?.close(graceMs);
      // Then no new connection is accepted. Not http.Server#close(), which also ends idle keep-alive
      // connections at once: a request already on its way on one would meet a reset. Each gets its
      // next response with `Connection: close` instead, or ends at the keep-alive time-out.
      const closed = servers.map((server) => new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve())));
      const timer = setTimeout(() => {
        // The HTTP/1.1 connections of an HTTP/2 listener are tracked by the same machinery as an
        // http.Server's, so its methods apply to them.
        for (const server of servers) HttpServer.prototype.closeAllConnections.call(server);
        for (const socket of connections) socket.destroy();
      }, graceMs);
      timer.unref();
      await Promise.all([...closed, sessionsClosed]);
      clearTimeout(timer);
    },
  };
}

/** L-1's limits as node:http's server options; every listener the service opens (L-2) takes them. */
export type HttpLimits = Pick<ListenerOptions, 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxHeaderBytes'>;

/**
 * node:http's options for L-1's limits. Time-outs are checked every second (Node's default is 30 s),
 * so a client past one is cut within about a second. A response whose reader takes nothing for the
 * request time-out is ended by the body writer (send-body.ts), which reads `requestTimeout` back.
 */
export function nodeHttpLimits(limits: HttpLimits) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxHeaderSize: limits.maxHeaderBytes,
    connectionsCheckingInterval: 1_000,
    // Host is checked by the listener's handler (server.ts, serveOn): a problem body, and a repeated Host refused too.
    requireHostHeader: false,
  } as const;
}

/**
 * HTTP/2 streams served by `serve` through node:http2's stream API. node:http2 installs its
 * compatibility layer as a 'stream' listener of the server once a 'request' listener is added
 * (HTTP/1.1 on this port needs one): that listener is removed, so no Http2ServerRequest and
 * Http2ServerResponse are made per stream, and each session's streams come here instead. What the
 * compatibility layer did before calling the handler is done here: CONNECT (RFC 9113 §8.5) is
 * refused, `Expect: 100-continue` gets its 100 when its body is read (RFC 9110 §10.1.1), and a header block over the
 * limit gets a 431 (L-1).
 */
function serveStreams(server: Http2SecureServer, serve: StreamHandler, maxHeaderBytes: number, hsts: Readonly<Record<string, string>>, onRefused: ListenerOptions['onRefusedRequest']): void {
  server.removeAllListeners('stream');
  server.on('session', (session: ServerHttp2Session) => {
    // Read once per connection: the session's socket is a proxy object, slow to ask per stream.
    const peer = session.socket.remoteAddress ?? '';
    session.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
      // Refused by the session guard (L-2: its server's sessions hold their whole budget).
      if (stream.closed) return;
      // An RST_STREAM with an error code is emitted as an 'error' of the stream: the client gave
      // it up, nothing to answer (the body reader sees it as 'aborted').
      stream.on('error', ignoreStreamError);
      if (headerListTooLarge(rawHeaders, maxHeaderBytes)) {
        answerHeadersTooLarge(stream, hsts);
        onRefused?.({ status: 431, code: 'header-list-too-large', address: peer });
      } else if (headers[':method'] === 'CONNECT') refuseConnectStream(stream, hsts);
      else if (hostDiffersFromAuthority(headers, rawHeaders)) {
        answerHostMismatch(stream, hsts);
        onRefused?.({ status: 400, code: 'host', address: peer });
      } else {
        // Its 100 when the body is read, as over HTTP/1.1 (continueWhenRead).
        if (typeof headers.expect === 'string' && /^100-continue$/i.test(headers.expect)) {
          continueWhenRead(stream, { writeContinue: () => !stream.headersSent && !stream.closed && stream.additionalHeaders({ ':status': 100 }) });
        }
        serve(stream, headers, peer);
      }
    });
  });
}

function ignoreStreamError(): void {}

/**
 * L-1, L-2: a connection that has not finished its TLS handshake within the handshake time-out
 * (counted from the connection, however the client dribbles: measured in
 * test/security/unfinished-handshakes.test.ts) is destroyed.
 *
 * Node reports that time-out, and every other handshake failure, to 'tlsClientError', which
 * https.Server and http2's secure server forward to 'clientError'. An HTTP handler there `end()`s
 * the socket with a 400 that can never be sent before a handshake, so the socket was never
 * destroyed and its descriptor stayed in CLOSE-WAIT for good, client gone or not. No HTTP answer
 * is possible before the handshake: such a socket is simply destroyed.
 */
function cutUnfinishedHandshakes(server: TlsServer): void {
  server.removeAllListeners('tlsClientError');
  server.on('tlsClientError', (_error: Error, socket: Socket) => socket.destroy());
}

/** Binds `server`; rejects with the bind error (EADDRINUSE …) instead of emitting it. */
export function listen(server: NetServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The URL a listener is reached at, as the startup line states it (T-6). */
export function origin(scheme: string, host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${shown}:${port}`;
}

/**
 * Expect: 100-continue over HTTP/1.1 (and node:http2's compatibility requests): the request goes
 * to the server's own request listener at once, and its 100 waits until a handler reads the body,
 * after authentication (continueWhenRead).
 */
function continueOnRead(server: HttpsServer | Http2SecureServer | HttpServer): void {
  server.on('checkContinue', (req: Parameters<RequestHandler>[0], res: Parameters<RequestHandler>[1]) => {
    continueWhenRead(req, res as unknown as { writeContinue(): void });
    server.emit('request', req, res);
  });
}
