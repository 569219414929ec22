import { request as httpRequest } from 'node:http';
import { connect as http2Connect, constants as h2, type ClientHttp2Session, type SecureClientSessionOptions } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { checkAgainstOpenApi } from './openapi-check.js';

/** The protocols the HTTPS port speaks (H-1): end-to-end tests loop over these. */
export const PROTOCOLS = ['h1', 'h2'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export interface Response {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly raw: Buffer;
  /** The HTTP version that carried it: '1.1' or '2.0'. */
  readonly httpVersion: string;
}

export interface RequestInit {
  readonly method?: string;
  readonly headers?: Record<string, string | string[]>;
  readonly body?: string | Buffer;
  readonly ca?: string | Buffer;
  readonly servername?: string;
  /** Skip the H-4 check of the response against the OpenAPI document (for servers other than ours). */
  readonly unchecked?: boolean;
  /** The document the response is checked against (A-12: the service's own, `service.openapi()`). */
  readonly openapi?: object;
  /** HTTPS only: 'h2' speaks HTTP/2 (ALPN h2, node:http2's client). @default 'h1' */
  readonly protocol?: Protocol;
}

/** One request over a fresh connection (no agent), real TLS when the URL says https. */
export function request(url: string, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  if (init.protocol === 'h2') {
    if (u.protocol !== 'https:') throw new Error(`HTTP/2 is served over TLS only, not ${url}`);
    return requestH2(u, init);
  }
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
          settle({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw, httpVersion: res.httpVersion }, u, init, resolve, reject);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Resolves with the response once it matches the OpenAPI document (H-4), over either protocol. */
function settle(response: Response, u: URL, init: RequestInit, resolve: (r: Response) => void, reject: (e: unknown) => void): void {
  try {
    if (init.unchecked !== true) checkAgainstOpenApi(init.method ?? 'GET', u, response, init.openapi);
  } catch (error) {
    reject(error);
    return;
  }
  resolve(response);
}

/** One request on a fresh HTTP/2 session, closed after the response. */
function requestH2(u: URL, init: RequestInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(u.origin, {
      ...(init.ca === undefined ? {} : { ca: init.ca }),
      ...(init.servername === undefined ? {} : { servername: init.servername }),
    });
    session.on('error', reject);
    const { host: _host, ...headers } = init.headers ?? {};
    const stream = session.request({ ...headers, [h2.HTTP2_HEADER_METHOD]: init.method ?? 'GET', [h2.HTTP2_HEADER_PATH]: `${u.pathname}${u.search}` });
    const chunks: Buffer[] = [];
    let status = 0;
    let received: Record<string, string | string[] | undefined> = {};
    stream.on('response', (head) => {
      status = Number(head[h2.HTTP2_HEADER_STATUS]);
      const { [h2.HTTP2_HEADER_STATUS]: _status, ...rest } = head;
      received = rest as Record<string, string | string[] | undefined>;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      session.close();
      const raw = Buffer.concat(chunks);
      settle({ status, headers: received, body: raw.toString('utf8'), raw, httpVersion: '2.0' }, u, init, resolve, reject);
    });
    stream.on('error', (error) => {
      session.destroy();
      reject(error);
    });
    stream.end(init.body);
  });
}

/**
 * An HTTP/2 session that has received the server's SETTINGS (so its limits are known). Session
 * errors after that (a GOAWAY the test provoked) are the test's to observe, not thrown.
 */
export function openH2Session(url: string, options: SecureClientSessionOptions = {}): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(url, { servername: 'localhost', ...options });
    session.once('error', reject);
    session.once('remoteSettings', () => {
      session.off('error', reject);
      session.on('error', () => {});
      resolve(session);
    });
  });
}
