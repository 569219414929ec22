// Speed and memory figures for the user resource (R-1, R-3), a script of its own:
//
//   node --import tsx bench/users.ts [--users 100000] [--seconds 5] [--rounds 3]
//
// 1. CPU per request of `GET /user/{name}.json` (Basic) against `GET /api/something.json`, on one
//    server process with scrypt at `ln=1`, so the password verification (one per request: Basic has
//    no session) is nearly free and the rest of the path shows. Rounds alternate the two paths.
// 2. `GET /user/?limit=1000` on a store of `--users` users: latency (median and worst of 50, one
//    connection) and the server's RSS before and after, which would grow if a request copied the
//    whole user list.
// The server is a child process (bench/servers/users.ts) whose CPU time is read before and after each
// run, as the HTTP section of bench/run.ts does; autocannon runs in this process.
import { fork } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { hashPassword } from '../lib/users/password-hash.js';
import { createSelfSignedCertificate } from '../lib/tls/dev-cert.js';

const { values } = parseArgs({ options: { users: { type: 'string', default: '100000' }, seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' } } });
const USERS = Number(values.users);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const PASSWORD = 'bench-initial-passphrase-1';

const dir = await mkdtemp(join(tmpdir(), 'httpskit-bench-users-'));
const store = join(dir, 'users.json');
const { cert, key } = createSelfSignedCertificate();
try {
  await writeStore(store, USERS);
  const child = fork(new URL('./servers/users.ts', import.meta.url), [JSON.stringify({ store, cert, key })], {
    execArgv: ['--import', 'tsx', ...(process.env['BENCH_PROF'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROF']}`])],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve) => child.stdout?.once('data', (d: Buffer) => resolve((JSON.parse(String(d)) as { url: string }).url)));
  const ask = <T>(what: string): Promise<T> =>
    new Promise((resolve) => {
      child.once('message', (m) => resolve(m as T));
      child.send(what);
    });
  const auth = (name: string): string => `Basic ${Buffer.from(`${name}:${PASSWORD}`).toString('base64')}`;

  console.log(`store: ${USERS} users; scrypt ln=1; ${ROUNDS} rounds of ${SECONDS} s per path, 8 connections`);
  const perRequest: Record<'api' | 'user', number[]> = { api: [], user: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['api', 'user'] as const) : (['user', 'api'] as const);
    for (const kind of order) {
      const before = await ask<NodeJS.CpuUsage>('cpu');
      const r = await autocannon({
        url: kind === 'api' ? `${url}/api/something.json?param1=hello` : `${url}/user/u000001.json`,
        connections: 8,
        duration: SECONDS,
        headers: kind === 'api' ? {} : { authorization: auth('u000001') },
        // The server's certificate is a throwaway one.
        ...({ tlsOptions: { ca: cert } } as object),
      } as autocannon.Options);
      const after = await ask<NodeJS.CpuUsage>('cpu');
      const ok = r['2xx'];
      if (r.non2xx > 0 || ok === 0) throw new Error(`${kind}: ${r.non2xx} non-2xx answers`);
      perRequest[kind].push((after.user + after.system - before.user - before.system) / ok);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const api = median(perRequest.api);
  const user = median(perRequest.user);
  console.log(`CPU per request: /api/something.json ${api.toFixed(1)} µs; /user/{name}.json ${user.toFixed(1)} µs; ratio ${(user / api).toFixed(2)}`);

  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: cert });
  const get = (path: string): Promise<{ ms: number; status: number; bytes: number }> =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(`${url}${path}`, { agent, headers: { authorization: auth('u000000') } }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, bytes }));
      });
      req.on('error', reject);
      req.end();
    });
  const rssBefore = await ask<number>('rss');
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const after = `u${String((i * 1999) % Math.max(1, USERS - 1000)).padStart(6, '0')}`;
    const r = await get(`/user/?limit=1000&after=${after}`);
    if (r.status !== 200) throw new Error(`page: ${r.status}`);
    times.push(r.ms);
  }
  const rssAfter = await ask<number>('rss');
  agent.destroy();
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    `GET /user/?limit=1000 on ${USERS} users: median ${median(times).toFixed(1)} ms, worst ${(sorted.at(-1) ?? NaN).toFixed(1)} ms (target < 50 ms); ` +
      `server RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, ${(rssAfter / 2 ** 20).toFixed(0)} MiB after 50 pages`,
  );
  child.send('exit');
} finally {
  await rm(dir, { recursive: true, force: true });
}

/** A store of `count` users (u000000 an admin), written as the file store's snapshot and journal. */
async function writeStore(path: string, count: number): Promise<void> {
  const hash = await hashPassword(PASSWORD, { ln: 1, r: 8, p: 1 });
  const at = Date.now();
  const snapshot = await open(path, 'w', 0o600);
  await snapshot.write('{"format":"httpskit-users","version":1,"generation":0,"users":[\n');
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `u${String(i).padStart(6, '0')}`;
    lines.push(JSON.stringify({ name, role: i === 0 ? 'admin' : 'user', hash, createdAt: at, passwordChangedAt: at }));
  }
  await snapshot.write(lines.join(',\n') + '\n]}\n');
  await snapshot.close();
  const journal = await open(`${path}.journal`, 'w', 0o600);
  await journal.write('{"format":"httpskit-users-journal","version":1,"generation":0}\n');
  await journal.close();
}
