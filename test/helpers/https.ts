import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface Response {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly raw: Buffer;
}

export interface RequestInit {
  readonly method?: string;
  readonly headers?: Record<string, string | string[]>;
  readonly body?: string | Buffer;
  readonly ca?: string | Buffer;
  readonly servername?: string;
}

/** One request over a fresh connection (no agent), real TLS when the URL says https. */
export function request(url: string, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      u,
      {
        method: init.method ?? 'GET',
        headers: init.headers ?? {},
        agent: false,
        ...(init.ca === undefined ? {} : { ca: init.ca }),
        ...(init.servername === undefined ? {} : { servername: init.servername }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}
