// The PostgreSQL store in the service, against the file store (`--only postgres`):
// 1. password-change throughput over HTTPS (PUT /user/NAME/password at the default scrypt cost),
//    a file-store server and a PostgreSQL-store server side by side, in alternating order;
// 2. what the shared ledgers add to an authenticated request: throttle reserve + settle and a
//    Digest nonce claim timed through the store's ledger API, and an authenticated GET
//    /user/NAME.json at scrypt ln=1 timed against both servers (the difference is the store's);
// 3. GET /api/something through a small proxy to three PostgreSQL-store instances against the same
//    proxy to one: the instances' CPU per request (the database is not on that path).
// Ratios are taken within each round; the median and the min–max are quoted, as in http.ts.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:https';
import pg from 'pg';
import { openStore } from '../lib/users/store.js';
import { startCluster } from '../test/helpers/postgres-cluster.js';
import { pinToCpu, startServer, type Child, type ServerChild } from './children.js';
import type { LoadResult } from './load.js';
import { put } from './password.js';
import { median, percentile, range, rotate, sleep } from './stats.js';

export interface PostgresBenchOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Where the file stores go. */
  readonly work: string;
  readonly rounds: number;
  /** Concurrent users changing their password, and changes each makes per round. */
  readonly changers: number;
  readonly changesEach: number;
  /** Ledger operations and authenticated GETs per round. */
  readonly ledgerOps: number;
  readonly authGets: number;
  readonly seconds: number;
  readonly connections: number;
  readonly pin: boolean;
  readonly settleMs: number;
  readonly progress: (line: string) => void;
}

/** A figure per round, the ratio's median and spread. */
export interface Ratio {
  readonly rounds: readonly number[];
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export interface PostgresResult {
  readonly source: string;
  readonly password: {
    readonly fileChangesPerSecond: readonly number[];
    readonly postgresChangesPerSecond: readonly number[];
    readonly ratio: Ratio;
    /** The server process's CPU per change (both hashes, the store write), PostgreSQL ÷ file. */
    readonly cpuRatio: Ratio;
    readonly hashConcurrency: readonly number[];
  };
  readonly ledger: {
    /** Per round: reserve + settle and nonce claim, median and p99, ms. */
    readonly reserveSettleMedianMs: Ratio;
    readonly reserveSettleP99Ms: Ratio;
    readonly nonceClaimMedianMs: Ratio;
    readonly nonceClaimP99Ms: Ratio;
    /** Authenticated GET at scrypt ln=1, PostgreSQL minus file store, ms. */
    readonly authAddedMedianMs: Ratio;
    readonly authAddedP99Ms: Ratio;
    readonly authFileMedianMs: Ratio;
  };
  readonly proxy: {
    /** Per round: the instances' CPU (user + system) per request, µs, and the requests per second. */
    readonly cpuMicrosPerRequest: Readonly<Record<ProxySetup, readonly number[]>>;
    readonly requestsPerSecond: Readonly<Record<ProxySetup, readonly number[]>>;
    /** The connections of the "fewer connections" control (a third of the load generator's). */
    readonly fewerConnections: number;
    /** three ÷ one (the target), three ÷ one with a third of the connections, one PostgreSQL ÷ one file store. */
    readonly ratio: Ratio;
    readonly ratioFewerConnections: Ratio;
    readonly ratioPostgresOverFile: Ratio;
    readonly failed: number;
  };
}

const summarize = (values: readonly number[]): Ratio => {
  const [min, max] = range(values);
  return { rounds: values, median: median(values), min, max };
};
const newPassword = (): string => `bench ${randomBytes(12).toString('base64url')} pass`;

/** A database of its own on the cluster, so every run starts empty. */
async function createDatabase(clusterUrl: string, name: string): Promise<string> {
  const client = new pg.Client(clusterUrl);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return clusterUrl.replace(/\/postgres$/, `/${name}`);
}

/** GET with Basic credentials on a keep-alive agent; resolves with the status and the wall time. */
function authenticatedGet(url: string, name: string, password: string, agent: Agent): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    request(`${url}/user/${encodeURIComponent(name)}.json`, { agent, headers: { authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
    })
      .on('error', reject)
      .end();
  });
}

/** `changers` users change their password `changesEach` times, all users at once: changes per second. */
async function changeThroughput(server: ServerChild, users: Array<{ name: string; password: string }>, changesEach: number): Promise<{ perSecond: number; cpuMicrosPerChange: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: users.length, rejectUnauthorized: false });
  try {
    const cpuBefore = (await server.usage()).cpuMicros;
    const start = performance.now();
    await Promise.all(
      users.map(async (user) => {
        for (let i = 0; i < changesEach; i++) {
          const next = newPassword();
          const status = await put(server.url, user.name, user.password, next, agent);
          if (status !== 204) throw new Error(`${server.name}: password change answered ${status}`);
          user.password = next;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const changes = users.length * changesEach;
    return { perSecond: changes / seconds, cpuMicrosPerChange: ((await server.usage()).cpuMicros - cpuBefore) / changes };
  } finally {
    agent.destroy();
  }
}

async function addUsers(server: ServerChild, count: number): Promise<Array<{ name: string; password: string }>> {
  const users = Array.from({ length: count }, (_, i) => ({ name: `bench-user-${i}`, password: newPassword() }));
  for (const user of users) await server.call('addUser', user.name, user.password);
  return users;
}

async function stopAll(children: readonly Child[]): Promise<void> {
  for (const child of children) await child.stop();
}

async function passwordSection(options: PostgresBenchOptions, databaseUrl: string): Promise<PostgresResult['password']> {
  const servers: ServerChild[] = [];
  try {
    const common = { certFile: options.certFile, keyFile: options.keyFile, log: false };
    servers.push(await startServer('file store', 'httpskit.js', { ...common, store: `${options.work}/password-file.json` }));
    servers.push(await startServer('postgres store', 'httpskit.js', { ...common, store: databaseUrl }));
    await sleep(options.settleMs);
    const users = new Map<ServerChild, Array<{ name: string; password: string }>>();
    for (const server of servers) users.set(server, await addUsers(server, options.changers));
    const hashConcurrency = await Promise.all(servers.map((s) => s.call<number>('hashConcurrency')));
    const perRound = new Map<ServerChild, Array<{ perSecond: number; cpuMicrosPerChange: number }>>(servers.map((s) => [s, []]));
    for (let round = 0; round < options.rounds; round++) {
      // Alternate which store goes first: a drift of the machine's speed falls on both alike.
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        perRound.get(server)?.push(await changeThroughput(server, users.get(server) ?? [], options.changesEach));
      }
      const [file, database] = servers.map((s) => perRound.get(s)?.at(-1));
      options.progress(
        `  password round ${round + 1}/${options.rounds}: file ${file?.perSecond.toFixed(2)}/s (${((file?.cpuMicrosPerChange ?? 0) / 1000).toFixed(0)} ms CPU each), ` +
          `postgres ${database?.perSecond.toFixed(2)}/s (${((database?.cpuMicrosPerChange ?? 0) / 1000).toFixed(0)} ms CPU each)`,
      );
    }
    const file = perRound.get(servers[0]!) ?? [];
    const database = perRound.get(servers[1]!) ?? [];
    const ratio = (pick: (r: { perSecond: number; cpuMicrosPerChange: number }) => number): Ratio =>
      summarize(database.map((d, i) => pick(d) / pick(file[i] ?? { perSecond: Number.NaN, cpuMicrosPerChange: Number.NaN })));
    return {
      fileChangesPerSecond: file.map((r) => r.perSecond),
      postgresChangesPerSecond: database.map((r) => r.perSecond),
      ratio: ratio((r) => r.perSecond),
      cpuRatio: ratio((r) => r.cpuMicrosPerChange),
      hashConcurrency,
    };
  } finally {
    await stopAll(servers);
  }
}

async function ledgerSection(options: PostgresBenchOptions, databaseUrl: string): Promise<PostgresResult['ledger']> {
  const reserveSettle: { median: number[]; p99: number[] } = { median: [], p99: [] };
  const nonce: { median: number[]; p99: number[] } = { median: [], p99: [] };
  const added: { median: number[]; p99: number[]; file: number[] } = { median: [], p99: [], file: [] };
  // The ledger API directly, in this process, on a pool of its own (one client: round-trip latency).
  const store = await openStore(databaseUrl, { postgres: { poolSize: 2, cleanupIntervalMs: 0 } });
  const servers: ServerChild[] = [];
  const agents: Agent[] = [];
  try {
    const common = { certFile: options.certFile, keyFile: options.keyFile, log: false, scrypt: { ln: 1, r: 8, p: 1 } };
    servers.push(await startServer('file store', 'httpskit.js', { ...common, store: `${options.work}/ledger-file.json` }));
    servers.push(await startServer('postgres store', 'httpskit.js', { ...common, store: databaseUrl }));
    await sleep(options.settleMs);
    const user = { name: 'bench-ledger-user', password: newPassword() };
    for (const server of servers) await server.call('addUser', user.name, user.password);
    for (const server of servers) agents.push(new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false }));
    for (let round = 0; round < options.rounds; round++) {
      const ledger: number[] = [];
      const claims: number[] = [];
      // The first tenth warms up (connections, plans, JIT) and is not counted.
      const warmUp = Math.ceil(options.ledgerOps / 10);
      for (let i = -warmUp; i < options.ledgerOps; i++) {
        const account = `ledger-${i % 100}`;
        const address = `198.51.100.${i % 250}`;
        const t = performance.now();
        const r = await store.throttle.reserve(account, address);
        if (r.ok) await store.throttle.settle(r.id, account, address, 'success');
        const reserveSettleMs = performance.now() - t;
        const n = performance.now();
        await store.nonces.claim(`nonce-${round}-${Math.floor(i / 4)}`, (((i % 4) + 4) % 4) + 1, Date.now() + 300_000);
        if (i < 0) continue;
        ledger.push(reserveSettleMs);
        claims.push(performance.now() - n);
      }
      reserveSettle.median.push(percentile(ledger, 50));
      reserveSettle.p99.push(percentile(ledger, 99));
      nonce.median.push(percentile(claims, 50));
      nonce.p99.push(percentile(claims, 99));
      // Authenticated GETs, one at a time, interleaved between the two servers request by request.
      const times: number[][] = servers.map(() => []);
      for (let i = -Math.ceil(options.authGets / 10); i < options.authGets; i++) {
        for (const k of Math.abs(i) % 2 === 0 ? [0, 1] : [1, 0]) {
          const { status, ms } = await authenticatedGet(servers[k]!.url, user.name, user.password, agents[k]!);
          if (status !== 200) throw new Error(`${servers[k]!.name}: authenticated GET answered ${status}`);
          if (i >= 0) times[k]!.push(ms);
        }
      }
      const [file = [], database = []] = times;
      added.median.push(percentile(database, 50) - percentile(file, 50));
      added.p99.push(percentile(database, 99) - percentile(file, 99));
      added.file.push(percentile(file, 50));
      options.progress(
        `  ledger round ${round + 1}/${options.rounds}: reserve+settle ${percentile(ledger, 50).toFixed(2)} / ${percentile(ledger, 99).toFixed(2)} ms, ` +
          `nonce claim ${percentile(claims, 50).toFixed(2)} / ${percentile(claims, 99).toFixed(2)} ms; authenticated GET median file ${percentile(file, 50).toFixed(2)} ms, postgres ${percentile(database, 50).toFixed(2)} ms`,
      );
    }
  } finally {
    for (const agent of agents) agent.destroy();
    await stopAll(servers);
    await store.close();
  }
  return {
    reserveSettleMedianMs: summarize(reserveSettle.median),
    reserveSettleP99Ms: summarize(reserveSettle.p99),
    nonceClaimMedianMs: summarize(nonce.median),
    nonceClaimP99Ms: summarize(nonce.p99),
    authAddedMedianMs: summarize(added.median),
    authAddedP99Ms: summarize(added.p99),
    authFileMedianMs: summarize(added.file),
  };
}

export type ProxySetup = 'one' | 'three' | 'one, fewer connections' | 'one, file store';
const PROXY_SETUPS: readonly ProxySetup[] = ['one', 'three', 'one, fewer connections', 'one, file store'];

async function proxySection(options: PostgresBenchOptions, databaseUrl: string, load: Child): Promise<PostgresResult['proxy']> {
  const cpuPerRequest = new Map<ProxySetup, number[]>(PROXY_SETUPS.map((s) => [s, []]));
  const rate = new Map<ProxySetup, number[]>(PROXY_SETUPS.map((s) => [s, []]));
  // Each of three instances sees about a third of the connections: the control runs one instance with as few.
  const fewer = Math.ceil(options.connections / 3);
  let failed = 0;
  for (let round = 0; round < options.rounds; round++) {
    // Fresh processes every round (see bench/README.md: a process keeps its CPU-per-request offset for life).
    const children: Child[] = [];
    try {
      const common = { certFile: options.certFile, keyFile: options.keyFile, log: false };
      const instances: ServerChild[] = [];
      for (let i = 0; i < 4; i++) instances.push(await startServer(`instance ${i}`, 'httpskit.js', { ...common, store: databaseUrl }));
      const fileInstance = await startServer('file instance', 'httpskit.js', { ...common, store: `${options.work}/proxy-${round}.json` });
      children.push(...instances, fileInstance);
      const proxies: ServerChild[] = [];
      const proxied = async (targets: readonly ServerChild[]): Promise<ServerChild> => {
        const proxy = await startServer('proxy', 'proxy.js', { targets: targets.map((s) => s.url) });
        children.push(proxy);
        proxies.push(proxy);
        return proxy;
      };
      const toOne = await proxied(instances.slice(0, 1));
      const setups: Record<ProxySetup, { proxy: ServerChild; instances: readonly ServerChild[]; connections: number }> = {
        one: { proxy: toOne, instances: instances.slice(0, 1), connections: options.connections },
        three: { proxy: await proxied(instances.slice(1)), instances: instances.slice(1), connections: options.connections },
        'one, fewer connections': { proxy: toOne, instances: instances.slice(0, 1), connections: fewer },
        'one, file store': { proxy: await proxied([fileInstance]), instances: [fileInstance], connections: options.connections },
      };
      // Instances on CPU 0; the proxies beside the load generator on CPU 1 (they are its side).
      if (options.pin) {
        for (const instance of [...instances, fileInstance]) pinToCpu(instance.pid, 0);
        for (const proxy of proxies) pinToCpu(proxy.pid, 1);
      }
      await sleep(options.settleMs);
      for (const label of rotate(PROXY_SETUPS, round)) {
        const setup = setups[label];
        const url = `${setup.proxy.url}/api/something.json?param1=hello`;
        const run = (seconds: number): Promise<LoadResult> => load.request<LoadResult>({ kind: 'keepalive', url, headers: {}, connections: setup.connections, seconds });
        const cpu = async (): Promise<number> => (await Promise.all(setup.instances.map((s) => s.usage()))).reduce((sum, u) => sum + u.cpuMicros, 0);
        await run(0.5);
        const before = await cpu();
        const result = await run(options.seconds);
        const used = (await cpu()) - before;
        failed += result.failed;
        cpuPerRequest.get(label)?.push(used / result.ok);
        rate.get(label)?.push(result.ok / result.seconds);
        options.progress(`  proxy round ${round + 1}/${options.rounds}, ${label}: ${result.ok} responses, ${(used / result.ok).toFixed(1)} µs CPU/request in the instances`);
      }
    } finally {
      await stopAll(children);
    }
  }
  const figures = (label: ProxySetup): readonly number[] => cpuPerRequest.get(label) ?? [];
  const rates = (label: ProxySetup): readonly number[] => rate.get(label) ?? [];
  const ratio = (ours: ProxySetup, peer: ProxySetup): Ratio => summarize(figures(ours).map((v, i) => v / (figures(peer)[i] ?? Number.NaN)));
  return {
    cpuMicrosPerRequest: { one: figures('one'), three: figures('three'), 'one, fewer connections': figures('one, fewer connections'), 'one, file store': figures('one, file store') },
    requestsPerSecond: { one: rates('one'), three: rates('three'), 'one, fewer connections': rates('one, fewer connections'), 'one, file store': rates('one, file store') },
    fewerConnections: fewer,
    ratio: ratio('three', 'one'),
    ratioFewerConnections: ratio('three', 'one, fewer connections'),
    ratioPostgresOverFile: ratio('one', 'one, file store'),
    failed,
  };
}

/** Starts a PostgreSQL (the test suite's, fsync on) and runs the three comparisons on it. */
export async function runPostgresBench(options: PostgresBenchOptions, load: Child): Promise<PostgresResult> {
  const cluster = await startCluster({ durable: true });
  try {
    options.progress(`postgres: ${cluster.source} on port ${cluster.port}`);
    options.progress('postgres: password-change throughput, file store vs PostgreSQL store …');
    const password = await passwordSection(options, await createDatabase(cluster.url, 'bench_password'));
    options.progress('postgres: ledger round trips, authenticated GET at scrypt ln=1 …');
    const ledger = await ledgerSection(options, await createDatabase(cluster.url, 'bench_ledger'));
    options.progress('postgres: GET /api/something through a proxy, one instance vs three …');
    const proxy = await proxySection(options, await createDatabase(cluster.url, 'bench_proxy'), load);
    return { source: cluster.source, password, ledger, proxy };
  } finally {
    await cluster.destroy();
  }
}
