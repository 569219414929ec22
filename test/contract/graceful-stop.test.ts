// C-5 (amended 2026-11-27): a stop that loses no request. Readiness fails first; the listeners
// serve on for the shutdown delay; then HTTP/2 sessions get GOAWAY and the listeners stop
// accepting; an idle HTTP/1.1 keep-alive connection gets its next response with
// `Connection: close` (not a reset); in-flight requests finish. Real sockets, both protocols.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { constants as h2 } from 'node:http2';
import { join } from 'node:path';
import { readFile, readdir } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { withTimeout } from '../../lib/with-timeout.js';
import { BIN, exited, run, serve } from '../helpers/cli.js';
import { openH2Session, PROTOCOLS, request } from '../helpers/https.js';
import { startService } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A request that must fail to connect: the listener has stopped accepting. */
async function refused(url: string, ca: string | Buffer): Promise<void> {
  await assert.rejects(request(`${url}/healthz`, { ca }), (error: NodeJS.ErrnoException) => error.code === 'ECONNREFUSED');
}

for (const protocol of PROTOCOLS) test(`C-5 close(): /readyz answers 503 at once, both listeners serve on for shutdownDelayMs, then refuse connections (${protocol})`, async (t) => {
  const s = await startService(t, { shutdownDelayMs: 800, httpPort: 0 }, protocol);
  assert.equal((await s.fetch('/readyz')).status, 200);
  const started = performance.now();
  const closing = s.service.close(5_000);
  const ready = await s.fetch('/readyz');
  assert.equal(ready.status, 503);
  assert.equal(ready.headers['retry-after'], '5');
  assert.equal(JSON.parse(ready.body).type, '/problems/overloaded');
  assert.equal((await s.fetchPlain('/readyz')).status, 503);
  // Still serving, new connections included (each request here opens one).
  await sleep(400);
  assert.equal((await s.fetch('/api/something')).status, 200);
  assert.equal((await s.fetchPlain('/api/something')).status, 200);
  assert.equal((await s.fetch('/healthz')).status, 200);
  await closing;
  assert.ok(performance.now() - started >= 790, `closed after ${performance.now() - started} ms, before the delay`);
  await refused(s.url, s.ca);
  await refused(s.httpUrl as string, s.ca);
});

/** GET over `agent`, with whether the request went out on a connection already used. */
function viaAgent(url: string, agent: HttpAgent, ca: string): Promise<{ res: IncomingMessage; reused: boolean; body: string }> {
  const send = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { agent, ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ res, reused: req.reusedSocket, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

// The HTTPS port's HTTP/1.1 runs on node:http2's server (HTTP/2 on) or node:https's (--no-http2).
for (const http2 of [true, false]) test(`C-5 an idle HTTP/1.1 keep-alive connection gets its next response with Connection: close, then a clean close, not a reset (HTTPS and plain HTTP, http2 ${http2 ? 'on' : 'off'})`, async (t) => {
  const s = await startService(t, { shutdownDelayMs: 300, httpPort: 0, http2, keepAliveTimeoutMs: 5_000 });
  const clients = [
    { url: s.url, agent: new HttpsAgent({ keepAlive: true, maxSockets: 1 }) },
    { url: s.httpUrl as string, agent: new HttpAgent({ keepAlive: true, maxSockets: 1 }) },
  ];
  for (const { url, agent } of clients) {
    t.after(() => agent.destroy());
    const first = await viaAgent(`${url}/api/something`, agent, s.ca);
    assert.equal(first.res.headers.connection, 'keep-alive');
    assert.equal(first.reused, false);
  }
  const closing = s.service.close(5_000);
  await sleep(600); // past the delay: the listeners no longer accept
  for (const { url } of clients) await refused(url, s.ca);
  for (const { url, agent } of clients) {
    // The request goes out on the connection that sat idle through the stop so far.
    const next = await viaAgent(`${url}/api/something`, agent, s.ca);
    assert.equal(next.reused, true, url);
    assert.equal(next.res.statusCode, 200, url);
    assert.equal(next.res.headers.connection, 'close', url);
    const socket = next.res.socket;
    if (!socket.destroyed) {
      const ended = await new Promise<string>((resolve) => {
        socket.once('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code ?? error.message}`));
        socket.once('close', () => resolve('closed'));
      });
      assert.equal(ended, 'closed', url);
    }
  }
  const before = performance.now();
  await closing;
  assert.ok(performance.now() - before < 1_000, 'close() returned once its connections had ended');
});

for (const protocol of PROTOCOLS) test(`C-5 requests in flight finish; HTTP/2 sessions get GOAWAY before the listener closes (${protocol})`, async (t) => {
  let release = (): void => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered = 0;
  const s = await startService(t, {
    shutdownDelayMs: 300,
    resources: {
      slow: async () => {
        entered++;
        await released;
        return { done: true };
      },
    },
  }, protocol);
  const session = protocol === 'h2' ? await openH2Session(s.url, { ca: s.ca }) : undefined;
  t.after(() => session?.destroy());
  let goawayAt: number | undefined;
  session?.on('goaway', (code: number) => {
    assert.equal(code, h2.NGHTTP2_NO_ERROR);
    goawayAt = performance.now();
  });
  // One request in flight on the session that stays open, and one on a connection of its own.
  const onSession = session === undefined ? undefined : new Promise<number>((resolve, reject) => {
    const stream = session.request({ ':path': '/api/slow' });
    stream.on('response', (head) => resolve(Number(head[':status'])));
    stream.on('error', reject);
    stream.resume();
  });
  const alone = s.fetch('/api/slow');
  while (entered < (session === undefined ? 1 : 2)) await sleep(10);
  const started = performance.now();
  const closing = s.service.close(5_000);
  await sleep(500); // past the delay
  await refused(s.url, s.ca);
  if (session !== undefined) {
    assert.ok(goawayAt !== undefined, 'GOAWAY arrived');
    assert.ok(goawayAt - started >= 290, `GOAWAY ${goawayAt - started} ms after close(), before the delay was over`);
  }
  release();
  const answered = await alone;
  assert.equal(answered.status, 200);
  if (protocol === 'h1') assert.equal(answered.headers['connection'], 'close');
  if (onSession !== undefined) assert.equal(await onSession, 200);
  await closing;
});

// C-2 / C-4: the flag and its variable, checked before anything is created.
test('C-5 --shutdown-delay and HTTPSKIT_SHUTDOWN_DELAY: a malformed value is a usage error (exit 2), naming what was typed', async (t) => {
  const dir = await tempDir(t);
  const cases: ReadonlyArray<readonly [readonly string[], Record<string, string>, RegExp]> = [
    [['--shutdown-delay', 'abc'], {}, /^httpskit: --shutdown-delay must be a whole number, got "abc" /],
    [['--shutdown-delay', '-1'], {}, /^httpskit: --shutdown-delay needs a value|^httpskit: --shutdown-delay must be a whole number, got "-1" /],
    [['--shutdown-delay', '1.5'], {}, /^httpskit: --shutdown-delay must be a whole number, got "1\.5" /],
    [['--shutdown-delay', '5s'], {}, /^httpskit: --shutdown-delay must be a whole number, got "5s" /],
    [['--shutdown-delay'], {}, /^httpskit: --shutdown-delay needs a value /],
    [['--shutdown-delay', '3600001'], {}, /^httpskit: --shutdown-delay must be an integer from 0 to 3600000, got 3600001 /],
    [['user', 'list', '--shutdown-delay', '5'], {}, /^httpskit: --shutdown-delay does not apply to user list /],
    [[], { HTTPSKIT_SHUTDOWN_DELAY: 'ten' }, /^httpskit: HTTPSKIT_SHUTDOWN_DELAY must be a whole number, got "ten" /],
  ];
  for (const [args, env, line] of cases) {
    const r = await run(args, { env, cwd: dir });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, line);
    assert.equal(r.stderr.split('\n').length, 2, r.stderr);
    assert.doesNotMatch(r.stderr, /shutdownDelayMs/);
  }
  assert.deepEqual(await readdir(dir), []);
  const help = (await run(['serve', '--help'])).stdout;
  assert.match(help, /--shutdown-delay MS/);
  assert.match(help, /HTTPSKIT_SHUTDOWN_DELAY/);
});

for (const protocol of PROTOCOLS) test(`C-5 SIGTERM with --shutdown-delay: /readyz 503 at once, requests served through the delay, exit 0 after it (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const certDir = join(dir, 'certs');
  const { child, url, output } = await serve(['--port', '0', '--cert-dir', certDir, '--store', join(dir, 'users.json')], { env: { HTTPSKIT_SHUTDOWN_DELAY: '1500' } });
  t.after(() => child.kill('SIGKILL'));
  const ca = await readFile(join(certDir, 'localhost-cert.pem'));
  assert.equal((await request(`${url}/readyz`, { ca, protocol })).status, 200);
  const started = performance.now();
  child.kill('SIGTERM');
  await sleep(100);
  assert.equal((await request(`${url}/readyz`, { ca, protocol })).status, 503);
  for (let i = 0; i < 5; i++) {
    assert.equal((await request(`${url}/api/something`, { ca, protocol })).status, 200);
    await sleep(150);
  }
  assert.equal(await exited(child), 0);
  assert.ok(performance.now() - started >= 1_450, `exited ${performance.now() - started} ms after SIGTERM`);
  assert.match(output().stdout, /serving on for 1500 ms/);
});

/**
 * `serve` as npm runs it (`npx httpskit serve`, `npm start`): node under `sh -c`, which npm sends
 * SIGTERM to and which ends without passing it on. The shell here prints the server's pid and
 * waits for it, as npm's does; it is killed the same way.
 */
async function underShell(t: { after: (fn: () => unknown) => void }, dir: string, npm: { readonly event: string; readonly script: string } | undefined) {
  // As npm sets them (npx: event `npx`, script `httpskit`); none without npm.
  const env: NodeJS.ProcessEnv = { ...process.env, npm_lifecycle_event: npm?.event, npm_lifecycle_script: npm?.script };
  for (const key of Object.keys(env)) if (key.startsWith('HTTPSKIT_')) delete env[key];
  const args = [BIN, 'serve', '--port', '0', '--cert-dir', join(dir, 'certs'), '--store', join(dir, 'users.json')];
  const shell = spawn('sh', ['-c', '"$0" "$@" & echo "pid $!"; wait', process.execPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  shell.stdout.on('data', (d) => (stdout += d));
  // node keeps the pipe open after the shell has gone: its end is the server's exit.
  const closed = new Promise<void>((resolve) => shell.stdout.once('close', () => resolve()));
  const deadline = performance.now() + 20_000;
  while (!/"listening","url":"([^"]+)"/.test(stdout) || !/^pid (\d+)$/m.test(stdout)) {
    assert.ok(performance.now() < deadline && shell.exitCode === null, `no listening line: ${stdout}`);
    await sleep(50);
  }
  const url = (/"listening","url":"([^"]+)"/.exec(stdout) as RegExpExecArray)[1] as string;
  const pid = Number((/^pid (\d+)$/m.exec(stdout) as RegExpExecArray)[1]);
  t.after(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  return { shell, pid, url, closed, stdout: () => stdout, ca: await readFile(join(dir, 'certs', 'localhost-cert.pem')) };
}

test('C-5 a server npm started (npx, npm start) stops when npm\'s shell is killed and leaves it without a parent: no server left holding the port', { skip: process.platform === 'win32' ? 'a parent\'s end does not show in process.ppid on Windows' : false }, async (t) => {
  const dir = await tempDir(t);
  const s = await underShell(t, dir, { event: 'npx', script: 'httpskit' });
  assert.equal((await request(`${s.url}/healthz`, { ca: s.ca })).status, 200);
  s.shell.kill('SIGTERM');
  await withTimeout(s.closed, 15_000).catch(() => assert.fail(`the server still runs 15 s after its shell was killed: ${s.stdout()}`));
  const lines = s.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  const stopping = lines.find((line) => line['msg'] === 'stopping');
  assert.equal(stopping?.['reason'], 'the npm process that started the server has ended');
  assert.equal(lines.at(-1)?.['msg'], 'stopped');
  await assert.rejects(request(`${s.url}/healthz`, { ca: s.ca }), (error: NodeJS.ErrnoException) => error.code === 'ECONNREFUSED');
});

for (const [how, npm] of [
  ['from a shell, not by npm (nohup and & are deliberate)', undefined],
  ['in the background by an npm script of another command (a test run under npm test)', { event: 'test', script: 'node --test' }],
] as const) test(`C-5 a server started ${how} goes on serving when its shell ends`, { skip: process.platform === 'win32' ? 'POSIX shell' : false }, async (t) => {
  const dir = await tempDir(t);
  const s = await underShell(t, dir, npm);
  s.shell.kill('SIGTERM');
  await exited(s.shell);
  await sleep(1_500);
  assert.equal((await request(`${s.url}/healthz`, { ca: s.ca })).status, 200);
  assert.doesNotMatch(s.stdout(), /"stopping"/);
  process.kill(s.pid, 'SIGTERM');
  await withTimeout(s.closed, 15_000).catch(() => assert.fail(`no exit 15 s after SIGTERM: ${s.stdout()}`));
  assert.match(s.stdout(), /"msg":"stopping","signal":"SIGTERM"/);
});
