// Server under test for `--against` with the request log off: any version's library, the one
// createService() every version has, with `log: false` (a version older than --log-level has no
// CLI switch for that). argv[2] is that version's dist/lib/index.js, argv[3] a JSON of the options.
// SIGTERM closes the service and exits 0 (so --cpu-prof writes its profile).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface Args {
  readonly port: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly store: string;
  readonly scryptLn: number;
}

interface AnyService {
  listen(): Promise<unknown>;
  close(): Promise<unknown>;
}

const [index, json] = process.argv.slice(2);
if (index === undefined || json === undefined) throw new Error('usage: against-lib.js DIST/lib/index.js OPTIONS-JSON');
const args = JSON.parse(json) as Args;
const lib = (await import(pathToFileURL(index).href)) as { createService(options: Record<string, unknown>): AnyService };
const service = lib.createService({
  host: '127.0.0.1',
  port: args.port,
  cert: readFileSync(args.certFile),
  key: readFileSync(args.keyFile),
  store: args.store,
  scrypt: { ln: args.scryptLn, r: 8, p: 1 },
  log: false,
});
await service.listen();
process.once('SIGTERM', () => {
  void service.close().finally(() => process.exit(0));
});
