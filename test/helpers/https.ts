import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { checkAgainstOpenApi } from './openapi-check.js';

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
  /** Skip the H-4 check of the response against the OpenAPI document (for servers other than ours). */
  readonly unchecked?: boolean;
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
          const response = { status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw };
          try {
            if (init.unchecked !== true) checkAgainstOpenApi(init.method ?? 'GET', u, response);
          } catch (error) {
            reject(error);
            return;
          }
          resolve(response);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}
