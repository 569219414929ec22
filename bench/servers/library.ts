// Server under test for the `library` section (issue 21's speed targets): httpskit with an
// embedder's resource `books` (item get and put, a JSON Schema), and a call that runs requests
// through `service.fetch` in this process, so its CPU per request is read like a socket run's.
// argv[2] is a ServerArgs JSON; the store is ':memory:' and there is no request log.
import { readFileSync } from 'node:fs';
import { createService, type ResourceDefinition } from '../../lib/index.js';
import { BOOK_BODY, type ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const BOOK_SCHEMA = {
  type: 'object',
  required: ['title', 'year'],
  additionalProperties: false,
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 200 },
    year: { type: 'integer', minimum: -3000, maximum: 3000 },
    author: { type: 'string', maxLength: 200 },
    tags: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 50 } },
    summary: { type: 'string', maxLength: 4000 },
  },
};

// Item 2's answer is /api/something.json's, byte for byte: the item route's own cost is compared.
const items = new Map<string, unknown>([
  ['1', JSON.parse(BOOK_BODY) as unknown],
  ['2', { param1: null }],
]);
const books: ResourceDefinition = {
  schema: BOOK_SCHEMA,
  item: {
    get: (id) => items.get(id),
    put: (id, body) => {
      items.set(id, body);
      return body;
    },
  },
};

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const service = createService({
  host: '127.0.0.1',
  port: 0,
  httpPort: 0,
  cert: readFileSync(args.certFile),
  key: readFileSync(args.keyFile),
  store: ':memory:',
  log: false,
  resources: { books },
});
const { url, httpUrl } = await service.listen();

/** One request through service.fetch, as a test or a fetch framework makes it: the Response's body read. */
async function once(path: string, method: string, body: string | undefined): Promise<boolean> {
  const init: RequestInit = body === undefined ? { method } : { method, body, headers: { 'content-type': 'application/json' } };
  const response = await service.fetch(path, init);
  await response.arrayBuffer();
  return response.ok;
}

serveControl(
  { kind: 'ready', url, httpUrl: httpUrl ?? '' },
  {
    /** `connections` loops of service.fetch for `seconds`; the process's CPU over the run, like usage(). */
    fetchRun: async (path: string, method: string, body: string | null, seconds: number, connections: number) => {
      const before = process.cpuUsage();
      const start = performance.now();
      const deadline = start + seconds * 1000;
      let ok = 0;
      let failed = 0;
      await Promise.all(
        Array.from({ length: connections }, async () => {
          while (performance.now() < deadline) {
            if (await once(path, method, body ?? undefined)) ok++;
            else failed++;
          }
        }),
      );
      const cpu = process.cpuUsage(before);
      return { ok, failed, seconds: (performance.now() - start) / 1000, cpuMicros: cpu.user + cpu.system };
    },
  },
);
