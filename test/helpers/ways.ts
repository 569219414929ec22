// One end-to-end case, three ways in (A-8, H-1): over a real TLS socket speaking HTTP/1.1 or
// HTTP/2, and through `service.fetch` with no socket at all (a memory store, no certificate, no
// file). Each way answers in the helpers' Response shape, checked against the service's own
// OpenAPI document (H-4, A-12), so one test body asserts the same behaviour every way.
import type { TestContext } from 'node:test';
import { createService, type Service, type ServiceOptions } from '../../lib/index.js';
import { PROTOCOLS, type RequestInit, type Response } from './https.js';
import { checkAgainstOpenApi } from './openapi-check.js';
import { FAST_SCRYPT, startService } from './service.js';

export const WAYS = [...PROTOCOLS, 'fetch'] as const;
export type Way = (typeof WAYS)[number];

export interface Served {
  readonly service: Service;
  readonly way: Way;
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/** A service reached `way`: started on port 0 (h1, h2), or on a memory store through service.fetch. */
export async function serve(t: TestContext, options: ServiceOptions, way: Way): Promise<Served> {
  if (way !== 'fetch') {
    const s = await startService(t, options, way);
    return { service: s.service, way, fetch: s.fetch };
  }
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, ...options });
  t.after(() => service.close());
  return {
    service,
    way,
    async fetch(path, init = {}) {
      const method = init.method ?? 'GET';
      const answer = await service.fetch(path, { method, headers: init.headers ?? {}, ...(init.body === undefined ? {} : { body: init.body }) });
      const raw = Buffer.from(await answer.arrayBuffer());
      const headers: Record<string, string> = {};
      answer.headers.forEach((value, name) => (headers[name] = value));
      const response: Response = { status: answer.status, headers, body: raw.toString('utf8'), raw, httpVersion: 'fetch' };
      if (init.unchecked !== true) checkAgainstOpenApi(method, new URL(path, 'https://localhost'), response, service.openapi());
      return response;
    },
  };
}
