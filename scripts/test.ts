// `npm test`'s runner: one PostgreSQL cluster for the whole run (S-7), shared by every test file
// through HTTPSKIT_TEST_PG_URL (each file makes its own databases in it), stopped here at the end.
// Arguments: test files to run instead of every test/**/*.test.ts.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCluster, type PgCluster } from '../test/helpers/postgres-cluster.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.test.ts') ? [join(dir, entry.name)] : []))
    .sort();
}

const files = process.argv.length > 2 ? process.argv.slice(2) : testFiles('test');
// Read before PostgreSQL starts: a bad value stops the run with nothing left running.
const RUN_TIMEOUT_MS = runTimeout(process.env['HTTPSKIT_TEST_RUN_TIMEOUT_MS']);
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

// What a test file stopped at its time-out still had open (test/helpers/hang-report.ts), printed at the end.
const hangDir = mkdtempSync(join(tmpdir(), 'httpskit-hangs-'));
const env = { ...process.env, HTTPSKIT_TEST_HANG_DIR: hangDir, ...(cluster === undefined ? {} : { HTTPSKIT_TEST_PG_URL: cluster.url }) };
// A test that hangs fails after TEST_TIMEOUT_MS instead of holding the run until CI's own limit.
// A test file whose tests are done but whose process does not end (a server a failed hook never
// closed) would hold it too: the whole run is stopped after RUN_TIMEOUT_MS, naming the files still
// running. (Node 20's --test-force-exit is not used: it ends a file's process with tests still
// queued, and they go missing from the count without a failure.)
const TEST_TIMEOUT_MS = 300_000;

/** Unset or empty: 45 minutes; otherwise a positive whole number of milliseconds, or the run does not start. */
function runTimeout(text: string | undefined): number {
  if (text === undefined || text === '') return 45 * 60_000;
  const ms = Number(text);
  if (!/^\d+$/.test(text) || ms < 1 || ms > 2 ** 31 - 1) {
    process.stderr.write(`test: HTTPSKIT_TEST_RUN_TIMEOUT_MS must be a whole number of milliseconds, not "${text}"\n`);
    process.exit(2);
  }
  return ms;
}
const hangReport = fileURLToPath(new URL('../test/helpers/hang-report.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', 'tsx', '--import', hangReport, '--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], {
  stdio: 'inherit',
  env,
  detached: true,
});
const watchdog = setTimeout(() => {
  process.stderr.write(`test: the run did not end within ${Math.round(RUN_TIMEOUT_MS / 1000)} s; still running: ${stillRunning().join(', ') || 'no test file'}; its processes are stopped\n`);
  killGroup('SIGKILL');
}, RUN_TIMEOUT_MS);
watchdog.unref();
/** The test files whose processes are still alive (Linux: from /proc; elsewhere none are named). */
function stillRunning(): string[] {
  const running: string[] = [];
  for (const pid of readdirSafe('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // Only this run's processes: the runner was started in a process group of its own.
      const group = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
      const named = argv.filter((arg) => arg.endsWith('.test.ts'));
      // A test file's own process names one file; the runner names them all.
      if (group === child.pid && named.length === 1 && Number(pid) !== child.pid) running.push(relative(process.cwd(), named[0] as string));
    } catch {
      // gone meanwhile
    }
  }
  return running;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

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
reportHangs();
process.exit(code);

function reportHangs(): void {
  const reports = readdirSafe(hangDir).map((name) => readFileSync(join(hangDir, name), 'utf8'));
  for (const report of reports) process.stderr.write(`test: a test file's process was stopped; what it still had open:\n${report}`);
  rmSync(hangDir, { recursive: true, force: true });
}
