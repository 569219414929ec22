// The test run's own tooling: what `npm test` says about a test file stopped at its time-out
// (test/helpers/hang-report.ts, preloaded by scripts/test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const HOOK = fileURLToPath(new URL('../helpers/hang-report.ts', import.meta.url));
// The fixtures live in a temporary directory, where the bare name 'tsx' would not resolve.
const TSX = import.meta.resolve('tsx');

/** Runs node:test on `files` in `dir` with the hook preloaded and a time-out of `timeoutMs`; the exit code and output. */
function runTests(dir: string, files: string[], hangDir: string, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  // Not this file's NODE_TEST_CONTEXT: the nested runner must be a runner, not a child reporting to us.
  const { NODE_TEST_CONTEXT: _ignored, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', TSX, '--import', HOOK, '--test', `--test-timeout=${timeoutMs}`, ...files], {
    cwd: dir,
    env: { ...env, HTTPSKIT_TEST_HANG_DIR: hangDir },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

test('a test file stopped at its time-out reports the server, the socket and the child process it still had open', async (t) => {
  const dir = await tempDir(t);
  const hangDir = await tempDir(t);
  await writeFile(
    join(dir, 'stuck.test.ts'),
    `import { test } from 'node:test';
import { createServer, connect } from 'node:net';
import { spawn } from 'node:child_process';
test('waits for ever', async () => {
  const server = createServer(() => {}).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  connect((server.address() as { port: number }).port, '127.0.0.1');
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  process.once('exit', () => child.kill());
  await new Promise(() => {});
});
`,
  );
  const { code, output } = await runTests(dir, ['stuck.test.ts'], hangDir, 3_000);
  assert.notEqual(code, 0, output);
  assert.match(output, /test timed out after 3000ms/);
  const reports = await readdir(hangDir);
  assert.equal(reports.length, 1, `one report, from the test file's process only: ${reports.join(', ')}`);
  const report = await readFile(join(hangDir, reports[0] as string), 'utf8');
  assert.match(report, /stuck\.test\.ts\nstopped by SIGTERM after \d+ s; still open:\n/);
  assert.match(report, /Server listening on \{"address":"127\.0\.0\.1","family":"IPv4","port":\d+\}/);
  assert.match(report, /Socket 127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+/);
  assert.match(report, /ChildProcess pid \d+: .*node -e setTimeout/);
});

test('a file that ends in time leaves no report, and a process a test starts keeps its own SIGTERM', async (t) => {
  const dir = await tempDir(t);
  const hangDir = await tempDir(t);
  // The server the test starts gets the hook too (the runner's flags), but it is not a test file:
  // SIGTERM is its own to handle, and here it answers with its own exit code.
  await writeFile(join(dir, 'server.ts'), `process.once('SIGTERM', () => process.exit(42));\nprocess.stdout.write('ready');\nsetInterval(() => {}, 1000);\n`);
  await writeFile(
    join(dir, 'quick.test.ts'),
    `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
test('stops its own server', async () => {
  const child = spawn(process.execPath, [...process.execArgv, 'server.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.kill('SIGTERM');
  const [code] = await new Promise<[number | null]>((resolve) => child.once('exit', (c) => resolve([c])));
  assert.equal(code, 42);
});
`,
  );
  // Time enough for a tsx child on a busy machine (3 s ran out once while two cores were loaded).
  const { code, output } = await runTests(dir, ['quick.test.ts'], hangDir, 30_000);
  assert.equal(code, 0, output);
  assert.deepEqual(await readdir(hangDir), []);
});
