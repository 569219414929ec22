import type { TestContext } from 'node:test';
import { join } from 'node:path';
import { createService, type Service } from '../../lib/index.js';
import type { ServiceOptions } from '../../lib/config.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';
import { request, type Protocol, type RequestInit, type Response } from './https.js';
import { makeTempDir, removeTempDir } from './tmp.js';

let pair: { cert: string; key: string } | undefined;

/** One throwaway localhost certificate per test process. */
export function testCertificate(): { cert: string; key: string } {
  return (pair ??= createSelfSignedCertificate());
}

/** Cheap scrypt for tests that are not about the default cost. */
export const FAST_SCRYPT = { ln: 10, r: 8, p: 1 } as const;

export interface Started {
  readonly url: string;
  readonly httpUrl: string | undefined;
  /** The metrics listener's URL (with metricsPort: 0). */
  readonly metricsUrl: string | undefined;
  readonly service: Service;
  readonly dir: string;
  readonly store: string;
  readonly logs: string[];
  readonly ca: string;
  /** The protocol `fetch` speaks to the HTTPS listener. */
  readonly protocol: Protocol;
  /** Request against the HTTPS listener, trusting the test certificate, over `protocol`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Request against the plain-HTTP listener (when opened). */
  fetchPlain(path: string, init?: RequestInit): Promise<Response>;
}

/**
 * Starts a service on port 0 with a temp store and a throwaway certificate; closed after the test.
 * `protocol` is what `fetch` speaks to the HTTPS port (H-1: tests loop over PROTOCOLS).
 */
export async function startService(t: TestContext, options: ServiceOptions = {}, protocol: Protocol = 'h1'): Promise<Started> {
  // A test named for a protocol, "… (h2)", that forgot to pass it would run over HTTP/1.1 unseen.
  const named = /\((h1|h2)\)$/.exec(t.name)?.[1];
  if (named !== undefined && named !== protocol) throw new Error(`"${t.name}" starts its service over ${protocol}: pass the loop's protocol to startService`);
  const dir = await makeTempDir();
  const { cert, key } = testCertificate();
  const logs: string[] = [];
  const store = options.store ?? join(dir, 'users.json');
  const service = createService({
    port: 0,
    store,
    cert,
    key,
    scrypt: FAST_SCRYPT,
    log: (line) => logs.push(line),
    ...options,
  });
  // One hook, in this order: the service may still be writing into `dir` until it has closed.
  t.after(async () => {
    try {
      await service.close(1_000);
    } finally {
      await removeTempDir(dir);
    }
  });
  const { url, httpUrl, metricsUrl } = await service.listen();
  return {
    url,
    httpUrl,
    metricsUrl,
    service,
    dir,
    store,
    logs,
    ca: cert,
    protocol,
    fetch: (path, init = {}) => request(url + path, { ca: cert, protocol, openapi: service.openapi(), ...init }),
    fetchPlain: (path, init = {}) => {
      if (httpUrl === undefined) throw new Error('no plain-HTTP listener: pass httpPort: 0');
      return request(httpUrl + path, { openapi: service.openapi(), ...init });
    },
  };
}

/** `Authorization: Basic …` for name and password, UTF-8 (RFC 7617). */
export function basic(name: string, password: string): string {
  return `Basic ${Buffer.from(`${name}:${password}`, 'utf8').toString('base64')}`;
}
