// S-5: versioned schema, migrations under an advisory lock, a newer database refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { migrate, SCHEMA_VERSION } from '../../../lib/store/postgres/migrate.js';
import { openPostgresStore } from '../../../lib/store/postgres/postgres-store.js';
import { admin, testPostgres } from '../../helpers/postgres.js';

const db = await testPostgres();
const skip = db.skip;

async function withClient<T>(url: string, task: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await task(client);
  } finally {
    await client.end();
  }
}

test('S-5: six instances migrating one empty database at once apply each step exactly once', { skip }, async () => {
  const url = await db.database();
  const results = await Promise.all(Array.from({ length: 6 }, () => withClient(url, (client) => migrate(client))));
  assert.equal(results.filter((r) => r.from === 0).length, 1, JSON.stringify(results));
  assert.ok(results.every((r) => r.to === SCHEMA_VERSION));
  const versions = await admin(url, 'SELECT version FROM httpskit.schema_version ORDER BY version');
  assert.deepEqual(
    versions.rows.map((r: { version: number }) => r.version),
    Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1),
  );
});

test('S-5: a database whose schema is newer than the code is refused with ERR_STORE_VERSION, and left alone', { skip }, async () => {
  const url = await db.database();
  await (await openPostgresStore(url)).close();
  await admin(url, `INSERT INTO httpskit.schema_version (version) VALUES (${SCHEMA_VERSION + 1})`);
  await assert.rejects(openPostgresStore(url), { code: 'ERR_STORE_VERSION' });
  await assert.rejects(openPostgresStore(url, { migrate: false }), { code: 'ERR_STORE_VERSION' });
  const top = await admin(url, 'SELECT max(version) AS v FROM httpskit.schema_version');
  assert.equal(top.rows[0].v, SCHEMA_VERSION + 1);
});

test('S-5: with migrate: false an unmigrated database is refused (run `store migrate`), and nothing is created', { skip }, async () => {
  const url = await db.database();
  await assert.rejects(openPostgresStore(url, { migrate: false }), { code: 'ERR_STORE_VERSION' });
  const schema = await admin(url, "SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'httpskit'");
  assert.equal(schema.rows[0].n, 0);
  const store = await openPostgresStore(url);
  await store.close();
  const again = await openPostgresStore(url, { migrate: false });
  await again.close();
});

test('S-1: a URL that reaches no server fails the open with ERR_STORE_UNAVAILABLE, and the password is not in the message', { skip }, async () => {
  const started = Date.now();
  const error = await openPostgresStore('postgres://someone:s3cret-pw@127.0.0.1:1/db', { connectTimeoutMs: 1_000, queryTimeoutMs: 2_000 }).then(
    () => assert.fail('opened'),
    (e: unknown) => e as Error & { code: string },
  );
  assert.equal(error.code, 'ERR_STORE_UNAVAILABLE');
  assert.doesNotMatch(error.message, /s3cret-pw/);
  assert.ok(Date.now() - started < 5_000);
});
