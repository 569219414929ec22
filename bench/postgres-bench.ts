// PostgreSQL store against the JSON-file store, side by side (the several-instances speed targets):
// - password-change throughput: the store's part of a change (read-modify-write of one user with a
//   new hash and no tokens), 16 writers on distinct users, changes per second;
// - the shared ledgers' cost per authenticated request: throttle reserve + settle('success'),
//   one client, median and p99 in ms; and a Digest nonce claim.
// scrypt itself (hundreds of ms at the default cost) is left out: it is the same for both stores.
//
//   node --import tsx bench/postgres-bench.ts [--users 2000] [--changes 2000] [--ops 2000] [--json]
//
// It starts its own PostgreSQL (the test suite's embedded one) with fsync on, and a file store in
// os.tmpdir(); put TMPDIR on the disk a store would use, or fsync costs look cheaper than they are.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openStore, type Store, type UserRecord } from '../lib/store/open.js';
import { startCluster } from '../test/helpers/postgres-cluster.js';

const { values } = parseArgs({ options: { users: { type: 'string' }, changes: { type: 'string' }, ops: { type: 'string' }, json: { type: 'boolean' } } });
const USERS = Number(values.users ?? 2_000);
const CHANGES = Number(values.changes ?? 2_000);
const OPS = Number(values.ops ?? 2_000);
const WRITERS = 16;

interface Row {
  readonly store: string;
  readonly changesPerSecond: number;
  readonly reserveSettleMedianMs: number;
  readonly reserveSettleP99Ms: number;
  readonly nonceClaimMedianMs: number;
  readonly nonceClaimP99Ms: number;
}

function record(name: string, i: number): UserRecord {
  return { name, role: 'user', hash: `$scrypt$ln=17,r=8,p=1$c2FsdA$${String(i).padStart(43, 'A')}`, createdAt: 1, passwordChangedAt: i };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

async function measure(label: string, store: Store): Promise<Row> {
  for (let start = 0; start < USERS; start += WRITERS) {
    await Promise.all(Array.from({ length: Math.min(WRITERS, USERS - start) }, (_, k) => {
      const name = `user-${start + k}`;
      return store.update(name, () => ({ next: record(name, 0), result: undefined }));
    }));
  }
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, lane) => {
      for (let i = lane; i < CHANGES; i += WRITERS) {
        const name = `user-${(i * 7919) % USERS}`;
        await store.update(name, (current) => ({ next: current === undefined ? undefined : { ...current, hash: record(name, i).hash, passwordChangedAt: i }, result: undefined }));
        done++;
      }
    }),
  );
  const changesPerSecond = done / ((performance.now() - started) / 1000);

  const ledger: number[] = [];
  for (let i = 0; i < OPS; i++) {
    const t = performance.now();
    const r = await store.throttle.reserve(`user-${i % USERS}`, `198.51.100.${i % 250}`);
    if (r.ok) await store.throttle.settle(r.id, `user-${i % USERS}`, `198.51.100.${i % 250}`, 'success');
    ledger.push(performance.now() - t);
  }
  const nonces: number[] = [];
  for (let i = 0; i < OPS; i++) {
    const t = performance.now();
    await store.nonces.claim(`nonce-${Math.floor(i / 4)}`, (i % 4) + 1, Date.now() + 300_000);
    nonces.push(performance.now() - t);
  }
  ledger.sort((a, b) => a - b);
  nonces.sort((a, b) => a - b);
  return {
    store: label,
    changesPerSecond: Math.round(changesPerSecond),
    reserveSettleMedianMs: percentile(ledger, 0.5),
    reserveSettleP99Ms: percentile(ledger, 0.99),
    nonceClaimMedianMs: percentile(nonces, 0.5),
    nonceClaimP99Ms: percentile(nonces, 0.99),
  };
}

const rows: Row[] = [];
const dir = await mkdtemp(join(tmpdir(), 'pg-bench-'));
const cluster = await startCluster({ durable: true });
try {
  const file = await openStore(join(dir, 'users.json'));
  rows.push(await measure('JSON file', file));
  await file.close();
  const client = new pg.Client(cluster.url);
  await client.connect();
  await client.query('CREATE DATABASE bench');
  await client.end();
  const url = cluster.url.replace(/\/postgres$/, '/bench');
  const database = await openStore(url, { postgres: { poolSize: WRITERS, cleanupIntervalMs: 0 } });
  rows.push(await measure(`PostgreSQL (${cluster.source})`, database));
  await database.close();
} finally {
  await cluster.destroy();
  await rm(dir, { recursive: true, force: true });
}

if (values.json === true) process.stdout.write(JSON.stringify(rows) + '\n');
else {
  const f = (n: number) => n.toFixed(2);
  process.stdout.write(`${USERS} users, ${CHANGES} changes by ${WRITERS} writers, ${OPS} ledger operations by one client\n\n`);
  process.stdout.write('| store | changes/s | reserve+settle median / p99 ms | nonce claim median / p99 ms |\n|---|---|---|---|\n');
  for (const r of rows) process.stdout.write(`| ${r.store} | ${r.changesPerSecond} | ${f(r.reserveSettleMedianMs)} / ${f(r.reserveSettleP99Ms)} | ${f(r.nonceClaimMedianMs)} / ${f(r.nonceClaimP99Ms)} |\n`);
}
