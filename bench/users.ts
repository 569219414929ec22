// Speed and memory figures for the user resource (R-1, R-3): `npm run bench -- --only users`, or
// on its own (`node --import tsx bench/users.ts [--users 100000] [--seconds 3] [--rounds 6]`).
//
// 1. CPU per request of `GET /user/{name}.json` (Basic) against `GET /api/something.json`, scrypt at
//    `ln=1` so that the password verification (one per request: Basic has no session) is cheap and
//    the rest of the path shows. Cheap is not free: scrypt at N=2 still costs about 30 µs in
//    OpenSSL, half of what the whole /api/something request costs. So the server also times one
//    verification on its own (the same function a request calls, 2,000 times) and the table gives
//    both ratios: as measured, and with that verification taken out ("the rest of the path", the
//    figure the target is about).
//    A third path, /api/whoami.json, is /api/something's body behind the user routes' whole
//    authentication (Basic decoding, throttle, verification); what it costs beyond /api/something
//    is taken out of /user's cost for the figure the target is about: the user resource's
//    negotiation, view, serialization and headers against /api/something's.
//    Each round starts a fresh server process (bench/servers/users.ts), pinned to CPU 0 with this
//    process (the load generator, autocannon) on CPU 1, as bench/run.ts does; within a round the
//    three paths alternate in slices (order reversed every pass), and the ratios are taken within
//    the round. The median of the rounds' ratios is quoted, with their min–max.
// 2. `GET /user/?limit=1000` on a store of `--users` users: latency (median and worst of 50, one
//    connection) and the server's RSS before and after, which would grow if a request copied the
//    whole user list.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { hashPassword } from '../lib/users/password-hash.js';
import { createSelfSignedCertificate } from '../lib/tls/dev-cert.js';
import { pinToCpu } from './children.js';
import type { Ratio } from './postgres.js';
import { median, range } from './stats.js';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '6' },
    unpinned: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const USERS = Number(values.users);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const PIN = values.unpinned !== true;
const PASSWORD = 'bench-initial-passphrase-1';
const CONNECTIONS = 8;
/** Slices per path and round (SECONDS split among them). */
const SLICES = 4;

/** One round's figures, µs of server CPU per request (user + system, every thread). */
export interface UsersRound {
  readonly api: number;
  readonly user: number;
  /** `/api/whoami.json`: /api/something's body behind the user routes' authentication. */
  readonly authenticated: number;
  /** One verification alone, timed inside the server. */
  readonly verification: number;
}

/**
 * What the user resource costs beyond authenticating its caller (negotiation, the user's view,
 * serialization, headers), against /api/something: the authentication is what /api/whoami costs
 * beyond /api/something, on the same server in the same round.
 */
function withoutAuthentication(r: UsersRound): number {
  return (r.user - (r.authenticated - r.api)) / r.api;
}

export interface UsersResult {
  readonly rounds: readonly UsersRound[];
  /** user ÷ api as measured, and (user − verification) ÷ api: median and min–max of the rounds. */
  readonly ratio: Ratio;
  readonly ratioWithoutVerification: Ratio;
  /** (user − (authenticated − api)) ÷ api: the user resource's path beyond authentication (absent from results before 2026-11-23). */
  readonly ratioWithoutAuthentication?: Ratio;
  readonly paging: { readonly users: number; readonly medianMs: number; readonly worstMs: number; readonly rssBeforeMiB: number; readonly rssAfterMiB: number };
  readonly pinned: boolean;
}

const say = (line: string): void => {
  if (values.json) process.stderr.write(`${line}\n`);
  else console.log(line);
};
const auth = (name: string): string => `Basic ${Buffer.from(`${name}:${PASSWORD}`).toString('base64')}`;
const summary = (xs: readonly number[]): Ratio => {
  const [min, max] = range(xs);
  return { rounds: xs, median: median(xs), min, max };
};

/** The bench server (compiled next to this file under bench/run.ts, TypeScript under tsx). */
async function startServer(store: string, cert: string, key: string): Promise<{ child: ChildProcess; url: string; ask: <T>(what: unknown) => Promise<T> }> {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  const child = fork(new URL(`./servers/users${extension}`, import.meta.url), [JSON.stringify({ store, cert, key })], {
    execArgv: [...process.execArgv, ...(process.env['BENCH_PROF'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROF']}`])],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the bench server exited (${String(code)})`)));
    child.stdout?.once('data', (d: Buffer) => resolve((JSON.parse(String(d)) as { url: string }).url));
  });
  if (PIN) pinToCpu(child.pid ?? -1, 0);
  const ask = <T>(what: unknown): Promise<T> =>
    new Promise((resolve) => {
      child.once('message', (m) => resolve(m as T));
      child.send(what as object);
    });
  return { child, url, ask };
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send('exit');
  await exited;
}

/** Server CPU (µs) and 2xx responses over `seconds` of keep-alive load. */
async function cpuAndCount(server: Awaited<ReturnType<typeof startServer>>, path: string, headers: Record<string, string>, seconds: number, cert: string): Promise<{ cpu: number; count: number }> {
  const before = await server.ask<NodeJS.CpuUsage>('cpu');
  // The server's certificate is a throwaway one.
  const r = await autocannon({ url: `${server.url}${path}`, connections: CONNECTIONS, duration: seconds, headers, ...({ tlsOptions: { ca: cert } } as object) } as autocannon.Options);
  const after = await server.ask<NodeJS.CpuUsage>('cpu');
  if (r.non2xx > 0 || r['2xx'] === 0) throw new Error(`${path}: ${r.non2xx} non-2xx answers`);
  return { cpu: after.user + after.system - before.user - before.system, count: r['2xx'] };
}

const dir = await mkdtemp(join(tmpdir(), 'httpskit-bench-users-'));
const { cert, key } = createSelfSignedCertificate();
try {
  if (PIN) pinToCpu(process.pid, 1);
  const hash = await hashPassword(PASSWORD, { ln: 1, r: 8, p: 1 });
  const small = join(dir, 'small.json');
  await writeStore(small, 2, hash);
  say(`GET /user/u000001.json vs /api/something.json and /api/whoami.json: scrypt ln=1; ${ROUNDS} rounds of ${SECONDS} s per path in ${SLICES} slices, ${CONNECTIONS} connections, a fresh server each round${PIN ? ', server on CPU 0, load on CPU 1' : ''}`);
  const paths = {
    api: ['/api/something.json?param1=hello', {}],
    user: ['/user/u000001.json', { authorization: auth('u000001') }],
    authenticated: ['/api/whoami.json?param1=hello', { authorization: auth('u000001') }],
  } as const;
  const rounds: UsersRound[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const server = await startServer(small, cert, key);
    try {
      for (const [path, headers] of Object.values(paths)) await cpuAndCount(server, path, { ...headers }, 0.5, cert); // warm-up
      // SLICES slices per path, the order reversed every pass (ABCCBA…): the figure subtracts two
      // paths that differ by a few µs in 170, so a drift of the machine must fall on all alike.
      const totals = { api: { cpu: 0, count: 0 }, user: { cpu: 0, count: 0 }, authenticated: { cpu: 0, count: 0 } };
      const order = ['api', 'user', 'authenticated'] as const;
      for (let pass = 0; pass < SLICES; pass++) {
        for (const kind of (pass + round) % 2 === 0 ? order : [...order].reverse()) {
          const [path, headers] = paths[kind];
          // A slice that got no answer at all (the loaded machine stalled the connections' handshakes) is run again.
          let slice = await cpuAndCount(server, path, { ...headers }, SECONDS / SLICES, cert).catch(() => undefined);
          slice ??= await cpuAndCount(server, path, { ...headers }, SECONDS / SLICES, cert);
          totals[kind].cpu += slice.cpu;
          totals[kind].count += slice.count;
        }
      }
      const figures = { api: totals.api.cpu / totals.api.count, user: totals.user.cpu / totals.user.count, authenticated: totals.authenticated.cpu / totals.authenticated.count };
      const verification = await server.ask<number>({ verify: hash, password: PASSWORD, count: 2000 });
      const r: UsersRound = { api: figures['api'] ?? NaN, user: figures['user'] ?? NaN, authenticated: figures['authenticated'] ?? NaN, verification };
      rounds.push(r);
      say(
        `  round ${round + 1}: /api ${r.api.toFixed(1)} µs, /user ${r.user.toFixed(1)} µs, /api authenticated ${r.authenticated.toFixed(1)} µs, one verification ${r.verification.toFixed(1)} µs` +
          ` → ${(r.user / r.api).toFixed(2)}, without the verification ${((r.user - r.verification) / r.api).toFixed(2)}, without the authentication ${withoutAuthentication(r).toFixed(2)}`,
      );
    } finally {
      await stop(server.child);
    }
  }
  const ratio = summary(rounds.map((r) => r.user / r.api));
  const ratioWithoutVerification = summary(rounds.map((r) => (r.user - r.verification) / r.api));
  const ratioWithoutAuthentication = summary(rounds.map(withoutAuthentication));
  const show = (x: Ratio): string => `${x.median.toFixed(2)} (${x.min.toFixed(2)}–${x.max.toFixed(2)})`;
  say(`CPU per request /user ÷ /api: ${show(ratio)}; without the verification: ${show(ratioWithoutVerification)}; without the whole authentication: ${show(ratioWithoutAuthentication)} (target ≤ 1.10)`);

  const big = join(dir, 'users.json');
  await writeStore(big, USERS, hash);
  const server = await startServer(big, cert, key);
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: cert });
  const get = (path: string): Promise<{ ms: number; status: number }> =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(`${server.url}${path}`, { agent, headers: { authorization: auth('u000000') } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }));
      });
      req.on('error', reject);
      req.end();
    });
  const rssBefore = await server.ask<number>('rss');
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const after = `u${String((i * 1999) % Math.max(1, USERS - 1000)).padStart(6, '0')}`;
    const r = await get(`/user/?limit=1000&after=${after}`);
    if (r.status !== 200) throw new Error(`page: ${r.status}`);
    times.push(r.ms);
  }
  const rssAfter = await server.ask<number>('rss');
  agent.destroy();
  await stop(server.child);
  const paging = { users: USERS, medianMs: median(times), worstMs: Math.max(...times), rssBeforeMiB: rssBefore / 2 ** 20, rssAfterMiB: rssAfter / 2 ** 20 };
  say(
    `GET /user/?limit=1000 on ${USERS} users: median ${paging.medianMs.toFixed(1)} ms, worst ${paging.worstMs.toFixed(1)} ms (target < 50 ms); ` +
      `server RSS ${paging.rssBeforeMiB.toFixed(0)} MiB before, ${paging.rssAfterMiB.toFixed(0)} MiB after 50 pages`,
  );
  const result: UsersResult = { rounds, ratio, ratioWithoutVerification, ratioWithoutAuthentication, paging, pinned: PIN };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}

/** A store of `count` users (u000000 an admin), written as the file store's snapshot and journal. */
async function writeStore(path: string, count: number, hash: string): Promise<void> {
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
