// `npm test`'s runner: one PostgreSQL cluster for the whole run (S-7), shared by every test file
// through HTTPSKIT_TEST_PG_URL (each file makes its own databases in it), stopped here at the end.
// Arguments: test files to run instead of every test/**/*.test.ts.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster, type PgCluster } from '../test/helpers/postgres-cluster.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.test.ts') ? [join(dir, entry.name)] : []))
    .sort();
}

const files = process.argv.length > 2 ? process.argv.slice(2) : testFiles('test');
const started = Date.now();
let cluster: PgCluster | undefined;
try {
  cluster = await startCluster();
  process.stderr.write(`test: PostgreSQL from ${cluster.source} ready in ${Date.now() - started} ms\n`);
} catch (error) {
  if (process.env.CI === 'true') {
    process.stderr.write(`test: PostgreSQL could not start, and under CI=true its tests must run (S-7): ${(error as Error).message}\n`);
    process.exit(1);
  }
  process.stderr.write(`test: PostgreSQL could not start; each PostgreSQL test file tries again or skips: ${(error as Error).message}\n`);
}

const env = { ...process.env, ...(cluster === undefined ? {} : { HTTPSKIT_TEST_PG_URL: cluster.url }) };
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], { stdio: 'inherit', env });
const forward = (signal: NodeJS.Signals): void => {
  child.kill(signal);
};
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const code = await new Promise<number>((resolve) => child.once('exit', (status, signal) => resolve(status ?? (signal === null ? 1 : 128 + 1))));
await cluster?.destroy();
process.exit(code);
