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
// A test that hangs fails after TEST_TIMEOUT_MS instead of holding the run until CI's own limit;
// --test-force-exit ends a file's process when its tests are done even if a handle (a server a
// failed hook never closed) is still open; and the whole run is stopped after RUN_TIMEOUT_MS.
const TEST_TIMEOUT_MS = 300_000;
const RUN_TIMEOUT_MS = 45 * 60_000;
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-force-exit', ...files], {
  stdio: 'inherit',
  env,
  detached: true,
});
const watchdog = setTimeout(() => {
  process.stderr.write(`test: the run did not end within ${RUN_TIMEOUT_MS / 60_000} min; its processes are stopped\n`);
  killGroup('SIGKILL');
}, RUN_TIMEOUT_MS);
watchdog.unref();
function killGroup(signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal); // the runner and every test file's process
  } catch {
    child.kill(signal);
  }
}
const forward = (signal: NodeJS.Signals): void => killGroup(signal);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const code = await new Promise<number>((resolve) => child.once('exit', (status, signal) => resolve(status ?? (signal === null ? 1 : 128 + 1))));
clearTimeout(watchdog);
await cluster?.destroy();
process.exit(code);
