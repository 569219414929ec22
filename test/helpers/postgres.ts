// PostgreSQL for test files (S-7). `npm test` (scripts/test.ts) starts one cluster for the whole run
// and hands its URL down in HTTPSKIT_TEST_PG_URL; a test file run on its own starts a private one
// and stops it when the file ends. Each caller of database() gets a fresh, empty database.
//
// Under CI=true a PostgreSQL that cannot start fails the file; elsewhere the file's PostgreSQL
// tests are skipped with the reason.
import { after, type TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startCluster, type PgCluster } from './postgres-cluster.js';

export interface TestPostgres {
  /** Why the PostgreSQL tests of this file are skipped (never under CI=true), or false. */
  readonly skip: string | false;
  /** A new empty database, dropped after the test (or suite) `t`; its URL. */
  database(t: Pick<TestContext, 'after'>): Promise<string>;
  /** This file's own cluster, for tests that stop and restart the server; undefined on a shared one. */
  readonly cluster: PgCluster | undefined;
}

/** The PostgreSQL of this test file; `own: true` asks for a private cluster (to stop and start it). */
export async function testPostgres(options: { own?: boolean } = {}): Promise<TestPostgres> {
  const shared = process.env.HTTPSKIT_TEST_PG_URL;
  if (shared !== undefined && shared !== '' && options.own !== true) return ready(shared, undefined);
  try {
    const cluster = await startCluster();
    after(() => cluster.destroy());
    return ready(cluster.url, cluster);
  } catch (error) {
    const reason = `PostgreSQL could not start: ${(error as Error).message}`;
    if (process.env.CI === 'true') throw new Error(`${reason} (CI=true: the PostgreSQL tests must run, S-7)`, { cause: error });
    return { skip: reason, cluster: undefined, database: () => Promise.reject(new Error(reason)) };
  }
}

function ready(adminUrl: string, cluster: PgCluster | undefined): TestPostgres {
  return {
    skip: false,
    cluster,
    async database(t) {
      const name = `httpskit_test_${randomBytes(6).toString('hex')}`;
      await admin(adminUrl, `CREATE DATABASE ${name}`);
      t.after(() => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined));
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.href;
    },
  };
}

/** Runs one statement on the admin database with a connection of its own. */
export async function admin(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}
