// A small keep-alive HTTPS client for the security suite: many requests, few TLS handshakes. Over
// HTTP/1.1 it writes bytes itself (RawConnection: nothing between the test and the wire); over
// HTTP/2 (H-1) it multiplexes streams on one node:http2 session, the way h2 clients do.
import { connect as http2Connect, constants as h2, type ClientHttp2Session } from 'node:http2';
import type { Protocol } from '../../helpers/https.js';
import { RawConnection, type RawResponse } from './raw-http.js';

export interface Client {
  /** Sends one request on a free connection (opening one when needed); the body gets a Content-Length. */
  send(method: string, path: string, headers?: Readonly<Record<string, string>>, body?: string | Buffer): Promise<RawResponse>;
  close(): void;
}

/** Parsed JSON body of a response (problem documents and representations). */
export function json(response: RawResponse): Record<string, unknown> {
  return JSON.parse(response.body.toString('utf8')) as Record<string, unknown>;
}

export function header(response: RawResponse, name: string): string | undefined {
  return response.headers.get(name.toLowerCase())?.[0];
}

/**
 * At most `connections` requests in flight; the rest wait (FIFO). Over 'h2' that many streams
 * share one connection (a new one after the server went away).
 */
export function createClient(url: string, ca: string | Buffer, connections = 4, timeoutMs = 30_000, protocol: Protocol = 'h1'): Client {
  return protocol === 'h2' ? createH2Client(url, ca, connections, timeoutMs) : createH1Client(url, ca, connections, timeoutMs);
}

function createH1Client(url: string, ca: string | Buffer, connections: number, timeoutMs: number): Client {
  const { hostname, port } = new URL(url);
  const target = { host: hostname, port: Number(port), ca };
  const idle: Array<RawConnection | undefined> = Array.from({ length: connections }, () => undefined);
  const waiting: Array<() => void> = [];
  const all = new Set<RawConnection>();

  async function acquire(): Promise<RawConnection | undefined> {
    while (idle.length === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    const connection = idle.pop();
    if (connection !== undefined && connection.usable) return connection;
    return undefined;
  }

  function release(connection: RawConnection | undefined): void {
    idle.push(connection !== undefined && connection.usable ? connection : undefined);
    waiting.shift()?.();
  }

  return {
    async send(method, path, headers = {}, body) {
      const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
      const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      if (body !== undefined) lines.push(`Content-Length: ${bytes.length}`);
      const request = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), bytes]);
      let connection = await acquire();
      try {
        if (connection === undefined) {
          connection = await RawConnection.open(target);
          all.add(connection);
        }
        const result = await connection.send(request, method, timeoutMs);
        if ('closed' in result) throw new Error(`${method} ${path}: connection closed without a response${result.error === undefined ? '' : ` (${result.error})`}`);
        return result;
      } finally {
        release(connection);
      }
    },
    close() {
      for (const connection of all) connection.close();
    },
  };
}

function createH2Client(url: string, ca: string | Buffer, streams: number, timeoutMs: number): Client {
  const origin = new URL(url).origin;
  const all = new Set<ClientHttp2Session>();
  let current: ClientHttp2Session | undefined;
  let running = 0;
  const waiting: Array<() => void> = [];

  function session(): ClientHttp2Session {
    if (current !== undefined && !current.closed && !current.destroyed) return current;
    const opened = http2Connect(origin, { ca, servername: 'localhost' });
    const forget = (): void => {
      if (current === opened) current = undefined;
    };
    // Failures reach the streams; a session the server ended is replaced on the next send.
    opened.on('error', forget).on('goaway', forget).on('close', forget);
    all.add(opened);
    return (current = opened);
  }

  function exchange(method: string, path: string, headers: Readonly<Record<string, string>>, body: Buffer | undefined): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const outgoing: Record<string, string> = { [h2.HTTP2_HEADER_METHOD]: method, [h2.HTTP2_HEADER_PATH]: path };
      for (const [k, v] of Object.entries(headers)) outgoing[k.toLowerCase()] = v;
      if (body !== undefined) outgoing['content-length'] = String(body.length);
      const stream = session().request(outgoing, { endStream: body === undefined });
      const timer = setTimeout(() => {
        stream.close(h2.NGHTTP2_CANCEL);
        reject(new Error(`${method} ${path}: no response within ${timeoutMs} ms`));
      }, timeoutMs);
      let status = 0;
      const received = new Map<string, string[]>();
      const chunks: Buffer[] = [];
      stream.on('response', (head) => {
        status = Number(head[h2.HTTP2_HEADER_STATUS]);
        for (const [name, value] of Object.entries(head)) {
          if (name.startsWith(':') || value === undefined) continue;
          received.set(name, Array.isArray(value) ? value : [String(value)]);
        }
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        clearTimeout(timer);
        // A session torn down under the stream ends it without a response: that is no answer.
        if (status === 0) return reject(new Error(`${method} ${path}: stream ended without a response`));
        const head = [`HTTP/2 ${status}`, ...[...received].flatMap(([name, values]) => values.map((v) => `${name}: ${v}`))].join('\r\n');
        resolve({ status, head, headers: received, body: Buffer.concat(chunks) });
      });
      stream.on('error', (error) => {
        clearTimeout(timer);
        reject(new Error(`${method} ${path}: ${error.message}`));
      });
      // A stream reset or a session destroyed without an error ends here (a no-op after 'end').
      stream.on('close', () => {
        clearTimeout(timer);
        reject(new Error(`${method} ${path}: stream closed without a response (code ${stream.rstCode})`));
      });
      if (body !== undefined) stream.end(body);
    });
  }

  return {
    async send(method, path, headers = {}, body) {
      while (running >= streams) await new Promise<void>((resolve) => waiting.push(resolve));
      running++;
      try {
        return await exchange(method, path, headers, body === undefined ? undefined : Buffer.from(body));
      } finally {
        running--;
        waiting.shift()?.();
      }
    },
    close() {
      for (const opened of all) opened.destroy();
    },
  };
}
