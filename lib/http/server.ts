import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly httpPort: number | undefined;
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxHeaderBytes: number;
  /** HSTS max-age for responses the listener writes itself (T-4); false or absent: none. */
  readonly hstsMaxAge?: number | false;
}

export interface Listeners {
  readonly url: string;
  readonly httpUrl: string | undefined;
  /** Stop accepting, let in-flight requests finish within `graceMs`, then cut what is left (C-5). */
  close(graceMs?: number): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The node:https listener (T-1: TLS 1.2 at least) and the optional plain-HTTP one (T-3), with the
 * L-1 limits. Time-outs are checked every second, so a client past one is cut within about a second.
 */
export async function startListeners(options: ListenerOptions, handler: Handler): Promise<Listeners> {
  const common = {
    headersTimeout: options.headersTimeoutMs,
    requestTimeout: options.requestTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    maxHeaderSize: options.maxHeaderBytes,
    connectionsCheckingInterval: 1_000,
    requireHostHeader: false,
  };
  const https = createHttpsServer(
    { ...common, cert: options.cert, key: options.key, minVersion: 'TLSv1.2', handshakeTimeout: options.headersTimeoutMs },
    handler,
  );
  // A TLS socket that never sends a request line is not covered by headersTimeout in every Node
  // version: give each connection an idle time-out as well.
  https.on('secureConnection', (socket: Socket) => socket.setTimeout(options.headersTimeoutMs + options.keepAliveTimeoutMs, () => socket.destroy()));
  const servers: Server[] = [https];
  let plain: Server | undefined;
  if (options.httpPort !== undefined) {
    plain = createHttpServer(common, handler);
    servers.push(plain);
  }
  const hsts = typeof options.hstsMaxAge === 'number' ? { 'Strict-Transport-Security': `max-age=${options.hstsMaxAge}` } : {};
  https.on('clientError', clientErrorHandler(hsts));
  plain?.on('clientError', clientErrorHandler({}));
  // CONNECT asks for a tunnel, which this origin server never opens; without a listener Node
  // would drop the connection without a word (RFC 9110 §9.3.6 lets us refuse with any 4xx).
  https.on('connect', refuseConnect(hsts));
  plain?.on('connect', refuseConnect({}));
  for (const server of servers) {
    server.on('tlsClientError', () => {});
    // RFC 9110 §10.1.1 lets a server ignore an expectation it does not know; Node would answer
    // 417 itself, without the T-4 headers or a problem body. The handler answers instead.
    server.on('checkExpectation', handler);
  }
  try {
    await listen(https, options.port, options.host);
    if (plain !== undefined && options.httpPort !== undefined) await listen(plain, options.httpPort, options.host);
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
  const url = origin('https', options.host, (https.address() as AddressInfo).port);
  const httpUrl = plain === undefined ? undefined : origin('http', options.host, (plain.address() as AddressInfo).port);

  return {
    url,
    httpUrl,
    async close(graceMs = 10_000) {
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const server of servers) server.closeIdleConnections();
      const timer = setTimeout(() => {
        for (const server of servers) server.closeAllConnections();
      }, graceMs);
      timer.unref();
      await Promise.all(closed);
      clearTimeout(timer);
    },
  };
}

/** Binds `server`; rejects with the bind error (EADDRINUSE …) instead of emitting it. */
export function listen(server: Server, port: number, host: string): Promise<void> {
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

// T-4: what every response carries, including the ones written here.
const SECURITY_HEADERS = { 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'" } as const;

/**
 * Malformed requests that never reach a handler (bad framing, smuggling shapes, huge headers) get
 * a problem response and a closed connection (RFC 9112 §6.3: 400, then close). llhttp reports
 * some framing errors (a Transfer-Encoding other than chunked, a bad chunk) only after it has
 * handed the request to the handler: that request's response, not yet started, carries the 400.
 */
function clientErrorHandler(extraHeaders: Readonly<Record<string, string>>): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const title = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
    const body = JSON.stringify({ type: '/problems/bad-request', title, status });
    const headers = {
      'Content-Type': 'application/problem+json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      ...SECURITY_HEADERS,
      ...extraHeaders,
      'Cache-Control': 'no-store',
      Connection: 'close',
    };
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
      } else {
        inFlight.once('finish', () => socket.end());
      }
      return;
    }
    socket.end(rawResponse(status, title, headers, body));
  };
}

function refuseConnect(extraHeaders: Readonly<Record<string, string>>): (req: IncomingMessage, socket: Socket) => void {
  return (_req, socket) => {
    const allow = 'GET, HEAD, OPTIONS, PUT, POST';
    const body = JSON.stringify({ type: '/problems/method-not-allowed', title: 'Method Not Allowed', status: 405, detail: `Allowed: ${allow}.` });
    socket.on('error', () => socket.destroy());
    socket.end(
      rawResponse(405, 'Method Not Allowed', {
        'Content-Type': 'application/problem+json; charset=utf-8',
        'Content-Length': String(Buffer.byteLength(body)),
        Allow: allow,
        ...SECURITY_HEADERS,
        ...extraHeaders,
        'Cache-Control': 'no-store',
        Connection: 'close',
      }, body),
    );
  };
}

function rawResponse(status: number, title: string, headers: Readonly<Record<string, string>>, body: string): string {
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${title}\r\n${head}\r\n${body}`;
}
