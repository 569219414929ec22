// C-5 (amended 2026-11-27), as an operator meets it: three instances on one PostgreSQL (S) behind
// a real HAProxy that health-checks /readyz, a constant-rate load through it, and each instance
// restarted in turn with SIGTERM and a shutdown delay longer than HAProxy's check interval × fall.
// No client sees an error. The HAProxy configuration is the one docs/guides/rolling-restart.md shows.
//
// HAProxy is the Debian package `haproxy`. Without it the test is skipped, except under CI=true
// (.ci/run installs it), where it fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Agent, request as httpsRequest } from 'node:https';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { exited, serve } from '../helpers/cli.js';
import { testPostgres } from '../helpers/postgres.js';
import { testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** HAProxy's health check: every INTER_MS, FALL failures mark a server down, RISE successes up. */
const INTER_MS = 500;
const FALL = 2;
const RISE = 2;
/** Longer than INTER_MS × FALL, with room for a check that was just sent. */
const SHUTDOWN_DELAY_MS = 2_500;
const RATE_PER_SECOND = 100;

const HAPROXY = ['/usr/sbin/haproxy', 'haproxy'].find((command) => spawnSync(command, ['-v']).status === 0);

function haproxyConfig(o: { front: number; backends: readonly number[]; pem: string; ca: string; socket: string }): string {
  return `global
    stats socket ${o.socket} mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    # No second chance: a request HAProxy sends to an instance that no longer accepts is an error
    # the client sees (production may keep the default, retries 3).
    retries 0

frontend www
    bind 127.0.0.1:${o.front} ssl crt ${o.pem}
    option forwardfor
    http-request set-header X-Forwarded-Proto https
    default_backend httpskit

backend httpskit
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server ssl verify required ca-file ${o.ca} check inter ${INTER_MS} fall ${FALL} rise ${RISE}
${o.backends.map((port, i) => `    server web${i + 1} 127.0.0.1:${port}`).join('\n')}
`;
}

/** A port that was free a moment ago (an instance comes back on the same one). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Each server's state as HAProxy sees it ("UP", "DOWN", "UP 1/2" …), from its stats socket. */
function serverStates(socket: string): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    let text = '';
    conn.on('data', (d) => (text += d));
    conn.on('error', reject);
    conn.on('end', () => {
      const states = new Map<string, string>();
      for (const line of text.split('\n')) {
        const [proxy, server, ...fields] = line.split(',');
        // CSV columns: pxname, svname, …, status is the 18th.
        if (proxy === 'httpskit' && server !== undefined && server !== 'BACKEND') states.set(server, fields[15] ?? '');
      }
      resolve(states);
    });
    conn.end('show stat\n');
  });
}

async function waitForState(socket: string, server: string, want: (state: string) => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 20_000;
  for (;;) {
    // Until HAProxy has opened its socket, there is no state to read.
    const state = (await serverStates(socket).catch(() => new Map<string, string>())).get(server) ?? '';
    if (want(state)) return;
    if (performance.now() > deadline) assert.fail(`${server} never became ${what} in HAProxy (last: "${state}")`);
    await sleep(100);
  }
}

/** Requests at a constant rate through `url` until stopped; every failure is kept. */
function constantLoad(url: string, ca: string): { stop: () => Promise<{ sent: number; failures: string[] }> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 50, ca });
  const failures: string[] = [];
  const pending = new Set<Promise<void>>();
  let sent = 0;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const req = httpsRequest(`${url}/api/something`, { agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) failures.push(`${new Date().toISOString()} status ${res.statusCode}`);
          resolve();
        });
        res.on('error', (error) => (failures.push(`${new Date().toISOString()} ${error.message}`), resolve()));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (error) => (failures.push(`${new Date().toISOString()} ${error.message}`), resolve()));
      req.end();
    });
  const started = performance.now();
  // Scheduled by the clock, not by answers: a slow answer does not slow the load down.
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1_000) * RATE_PER_SECOND);
    while (sent < due) {
      sent++;
      const p = one();
      pending.add(p);
      void p.then(() => pending.delete(p));
    }
  }, 10);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      agent.destroy();
      return { sent, failures };
    },
  };
}

test('C-5 rolling restart: three instances behind HAProxy health-checking /readyz, each restarted with SIGTERM and --shutdown-delay under a constant load: no client error', { skip: db.skip, timeout: 180_000 }, async (t) => {
  if (HAPROXY === undefined) {
    if (process.env['CI'] === 'true') assert.fail('haproxy is not installed (Debian package "haproxy"): .ci/run installs it');
    return t.skip('haproxy is not installed (apt-get install haproxy)');
  }
  const store = await db.database();
  const dir = await tempDir(t);
  const { cert, key } = testCertificate();
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const pem = join(dir, 'site.pem');
  await writeFile(certFile, cert);
  await writeFile(keyFile, key, { mode: 0o600 });
  await writeFile(pem, `${cert}\n${key}`, { mode: 0o600 });
  const ports = [await freePort(), await freePort(), await freePort()];
  const front = await freePort();
  const socket = join(dir, 'haproxy.sock');
  const config = join(dir, 'haproxy.cfg');
  await writeFile(config, haproxyConfig({ front, backends: ports, pem, ca: certFile, socket }));

  const instances: ChildProcess[] = [];
  t.after(() => {
    for (const child of instances) child.kill('SIGKILL');
  });
  const start = async (port: number): Promise<ChildProcess> => {
    const { child } = await serve(
      ['--port', String(port), '--cert', certFile, '--key', keyFile, '--store', store, '--trust-proxy', '127.0.0.1', '--log-level', 'warn', '--shutdown-delay', String(SHUTDOWN_DELAY_MS)],
      { cwd: dir },
    );
    instances.push(child);
    return child;
  };
  const running: ChildProcess[] = [];
  for (const port of ports) running.push(await start(port));

  const haproxy = spawn(HAPROXY, ['-f', config, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let haproxyLog = '';
  haproxy.stderr.on('data', (d) => (haproxyLog += d));
  t.after(() => haproxy.kill('SIGKILL'));
  for (const name of ['web1', 'web2', 'web3']) {
    await waitForState(socket, name, (state) => state === 'UP', 'UP').catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${haproxyLog}`);
    });
  }

  const load = constantLoad(`https://localhost:${front}`, cert);
  // A failed step must not leave the load running: its timer would keep the file's process alive.
  t.after(() => load.stop());
  await sleep(2_000);
  for (let i = 0; i < running.length; i++) {
    const name = `web${i + 1}`;
    const child = running[i] as ChildProcess;
    const signalled = performance.now();
    child.kill('SIGTERM');
    // HAProxy sees /readyz fail and takes the instance out while it still serves.
    await waitForState(socket, name, (state) => state.startsWith('DOWN'), 'DOWN');
    assert.ok(child.exitCode === null, `${name} exited before HAProxy took it out`);
    assert.equal(await exited(child), 0);
    assert.ok(performance.now() - signalled >= SHUTDOWN_DELAY_MS - 50);
    running[i] = await start(ports[i] as number);
    await waitForState(socket, name, (state) => state === 'UP', 'UP again');
  }
  await sleep(2_000);
  const { sent, failures } = await load.stop();
  t.diagnostic(`${sent} requests through HAProxy at ${RATE_PER_SECOND}/s during three restarts; ${failures.length} failed`);
  assert.ok(sent >= 15 * RATE_PER_SECOND, `a load of ${sent} requests`);
  assert.deepEqual(failures, [], haproxyLog);
  for (const child of running) {
    child.kill('SIGTERM');
    assert.equal(await exited(child), 0);
  }
});
