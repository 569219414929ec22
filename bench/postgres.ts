// The PostgreSQL store in the service, against the file store (`--only postgres`):
// 1. password-change throughput over HTTPS (PUT /user/NAME/password at the default scrypt cost),
//    with the CPU per change of each server and of the PostgreSQL processes (postgres-password.ts);
// 2. what the shared ledgers add to an authenticated request: throttle reserve + settle and a
//    Digest nonce claim timed through the store's ledger API, and an authenticated GET
//    /user/NAME.json at scrypt ln=1 timed against both servers (the difference is the store's);
// 3. GET /api/something through a small proxy to three PostgreSQL-store instances against the same
//    proxy to one: the instances' CPU per request at an equal load per instance (postgres-proxy.ts).
// Ratios are taken within each round; the median and the min–max are quoted, as in http.ts.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:https';
import pg from 'pg';
import { openStore } from '../lib/store/open.js';
import { startCluster } from '../test/helpers/postgres-cluster.js';
import { startServer, type Child, type ServerChild } from './children.js';
import { findPostmaster } from './postgres-cpu.js';
import { passwordSection, summarize, type PasswordSectionResult, type Ratio } from './postgres-password.js';
import { proxySection, type ProxySectionResult } from './postgres-proxy.js';
import { percentile, sleep } from './stats.js';

export type { Ratio } from './postgres-password.js';

export interface PostgresBenchOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Where the file stores go. */
  readonly work: string;
  readonly rounds: number;
  /** Concurrent users changing their password, changes each makes per slice, slices per server and round. */
  readonly changers: number;
  readonly changesEach: number;
  readonly slices: number;
  /** The password section's side-by-side window, s. */
  readonly togetherSeconds: number;
  /** Requests per second per instance of the proxy section's paced rows. */
  readonly proxyRate: number;
  /** Ledger operations and authenticated GETs per round. */
  readonly ledgerOps: number;
  readonly authGets: number;
  readonly seconds: number;
  readonly connections: number;
  readonly pin: boolean;
  readonly settleMs: number;
  readonly progress: (line: string) => void;
}

export interface PostgresResult {
  readonly source: string;
  readonly password: PasswordSectionResult;
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
  readonly proxy: ProxySectionResult;
}

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

async function stopAll(children: readonly Child[]): Promise<void> {
  for (const child of children) await child.stop();
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

/** Starts a PostgreSQL (the test suite's, fsync on) and runs the three comparisons on it. */
export async function runPostgresBench(options: PostgresBenchOptions, load: Child): Promise<PostgresResult> {
  const cluster = await startCluster({ durable: true });
  try {
    options.progress(`postgres: ${cluster.source} on port ${cluster.port}`);
    options.progress('postgres: password-change throughput, file store vs PostgreSQL store …');
    const postmaster = findPostmaster(cluster.port);
    if (postmaster === undefined) throw new Error(`no postmaster found on port ${cluster.port} in /proc`);
    const password = await passwordSection({ ...options, postmaster, databaseUrl: await createDatabase(cluster.url, 'bench_password') });
    options.progress('postgres: ledger round trips, authenticated GET at scrypt ln=1 …');
    const ledger = await ledgerSection(options, await createDatabase(cluster.url, 'bench_ledger'));
    options.progress('postgres: GET /api/something through a proxy, one instance vs three …');
    const proxy = await proxySection({ ...options, ratePerInstance: options.proxyRate, databaseUrl: await createDatabase(cluster.url, 'bench_proxy') }, load);
    return { source: cluster.source, password, ledger, proxy };
  } finally {
    await cluster.destroy();
  }
}
