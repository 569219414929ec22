// S-6: a database that is down, restarting or slow gives ERR_STORE_UNAVAILABLE (→ 503) within 5 s,
// never a hang; the store recovers by itself when the database is back. This file stops and
// starts its own PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openPostgresStore, type PostgresStore } from '../../../lib/store/postgres/postgres-store.js';
import { testPostgres } from '../../helpers/postgres.js';

const db = await testPostgres({ own: true });
const skip = db.skip;
const record = { name: 'olga', role: 'user' as const, hash: '$scrypt$x', createdAt: 1, passwordChangedAt: 1 };

async function unavailableWithin(ms: number, operation: () => Promise<unknown>): Promise<void> {
  const started = Date.now();
  await assert.rejects(operation(), { code: 'ERR_STORE_UNAVAILABLE' });
  const took = Date.now() - started;
  assert.ok(took < ms, `took ${took} ms`);
}

test('S-6: with the database stopped every operation fails with ERR_STORE_UNAVAILABLE within 5 s; restarted, the same store serves again', { skip }, async (t) => {
  const url = await db.database();
  const store: PostgresStore = await openPostgresStore(url, { connectTimeoutMs: 1_000, queryTimeoutMs: 2_000, cleanupIntervalMs: 0 });
  t.after(() => store.close());
  await store.update('olga', () => ({ next: record, result: undefined }));
  await db.cluster?.stop();
  try {
    await unavailableWithin(5_000, () => store.get('olga'));
    await unavailableWithin(5_000, () => store.update('olga', () => ({ next: { ...record, role: 'admin' }, result: undefined })));
    await unavailableWithin(5_000, () => store.throttle.reserve('olga', '192.0.2.1'));
    await unavailableWithin(5_000, () => store.nonces.claim('n', 1, Date.now() + 1_000));
    await unavailableWithin(5_000, () => store.ping());
  } finally {
    await db.cluster?.start();
  }
  // Recovery needs no new store: the pool connects anew.
  let back: unknown;
  for (let i = 0; i < 50 && back === undefined; i++) {
    back = await store.get('olga').catch(() => new Promise((resolve) => setTimeout(resolve, 100)));
  }
  assert.deepEqual(back, record);
  await store.ping();
});

test('S-6: a row lock held by a stalled client gives ERR_STORE_UNAVAILABLE after the query time-out, and nothing is written', { skip }, async (t) => {
  const url = await db.database();
  const store = await openPostgresStore(url, { queryTimeoutMs: 1_500, cleanupIntervalMs: 0 });
  t.after(() => store.close());
  await store.update('olga', () => ({ next: record, result: undefined }));
  const stalled = new pg.Client({ connectionString: url });
  await stalled.connect();
  t.after(() => stalled.end());
  await stalled.query('BEGIN');
  await stalled.query("SELECT 1 FROM httpskit.users WHERE name = 'olga' FOR UPDATE");
  let ran = 0;
  await unavailableWithin(5_000, () =>
    store.update('olga', (current) => {
      ran++;
      return { next: current && { ...current, role: 'admin' }, result: undefined };
    }),
  );
  await stalled.query('ROLLBACK');
  assert.equal((await store.get('olga'))?.role, 'user');
  assert.equal(ran, 0);
  // A read stuck behind a table lock (a slow migration, a vacuum full) is abandoned the same way.
  await stalled.query('BEGIN');
  await stalled.query('LOCK TABLE httpskit.users IN ACCESS EXCLUSIVE MODE');
  await unavailableWithin(5_000, () => store.get('olga'));
  await unavailableWithin(5_000, () => store.count());
  await stalled.query('ROLLBACK');
  assert.equal((await store.get('olga'))?.role, 'user');
});
