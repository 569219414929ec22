// A small keep-alive HTTPS client over RawConnection: many requests, few TLS handshakes, and
// nothing between the test and the bytes on the wire.
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

/** At most `connections` requests in flight; the rest wait for a connection (FIFO). */
export function createClient(url: string, ca: string | Buffer, connections = 4, timeoutMs = 30_000): Client {
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
