// Server under test: httpskit itself, as an embedder would start it (createService + listen),
// HTTPS and plain HTTP on free loopback ports. argv[2] is a ServerArgs JSON.
import { readFileSync } from 'node:fs';
import { createService, type ServiceOptions } from '../../lib/index.js';
import { holdYoungGeneration } from '../../lib/cli/young-generation.js';
import { streamLines } from '../../lib/log.js';
import { PROCESS_HASH_LIMIT } from '../../lib/users/scrypt-pool.js';
import type { ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const options: ServiceOptions = {
  host: '127.0.0.1',
  port: 0,
  httpPort: 0,
  cert: readFileSync(args.certFile),
  key: readFileSync(args.keyFile),
  ...(args.store === undefined ? {} : { store: args.store }),
  ...(args.scrypt === undefined ? {} : { scrypt: args.scrypt }),
  ...(args.hashConcurrency === undefined ? {} : { hashConcurrency: args.hashConcurrency }),
  ...(args.hashQueueLimit === undefined ? {} : { hashQueueLimit: args.hashQueueLimit }),
  // log on: the CLI's sink (one JSON line per request on stdout, batched: lib/cli/serve.ts); off: no
  // logger at all (the library's default since A-10).
  log: args.log ? streamLines(process.stdout).write : false,
  ...(args.logLevel === undefined ? {} : { logLevel: args.logLevel }),
  ...(args.metrics === true ? { metricsPort: 0 } : {}),
  ...(args.http2 === undefined ? {} : { http2: args.http2 }),
  ...(args.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeoutMs: args.keepAliveTimeoutMs }),
};
const service = createService(options);
const { url, httpUrl, metricsUrl } = await service.listen();
if (args.cli === true) holdYoungGeneration();
serveControl(
  { kind: 'ready', url, httpUrl: httpUrl ?? '' },
  {
    addUser: async (name: string, password: string) => {
      await service.users.add(name, password);
      return null;
    },
    hashConcurrency: async () => service.config.hashConcurrency,
    // The H-5 scrape address (with `metrics: true`): the store's time per operation, for the postgres section.
    metricsUrl: async () => metricsUrl ?? null,
    // Hashes running at once: the service's gate, within the process-wide limit (one per CPU at most).
    hashesAtOnce: async () => Math.min(service.config.hashConcurrency, PROCESS_HASH_LIMIT),
  },
);
