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
  for (const server of servers) {
    server.on('clientError', onClientError);
    server.on('tlsClientError', () => {});
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

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function origin(scheme: string, host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${shown}:${port}`;
}

/** Malformed requests that never reach a handler (bad framing, smuggling shapes, huge headers). */
function onClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage !== undefined) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const slug = status === 431 ? 'bad-request' : status === 408 ? 'bad-request' : 'bad-request';
  const title = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  const body = JSON.stringify({ type: `/problems/${slug}`, title, status });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
  );
}
