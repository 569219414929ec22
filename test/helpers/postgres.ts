// PostgreSQL for test files (S-7). `npm test` (scripts/test.ts) starts one cluster for the whole run
// and hands its URL down in HTTPSKIT_TEST_PG_URL; a test file run on its own starts a private one
// and stops it when the file ends. Each caller of database() gets a fresh, empty database.
//
// Under CI=true a PostgreSQL that cannot start fails the file; elsewhere the file's PostgreSQL
// tests are skipped with the reason.
import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startCluster, type PgCluster } from './postgres-cluster.js';

export interface TestPostgres {
  /** Why the PostgreSQL tests of this file are skipped (never under CI=true), or false. */
  readonly skip: string | false;
  /** This file's database, emptied (no httpskit schema); its URL. Dropped when the file ends. */
  database(): Promise<string>;
  /** This file's own cluster, for tests that stop and restart the server; undefined on a shared one. */
  readonly cluster: PgCluster | undefined;
}

/** The PostgreSQL of this test file; `own: true` asks for a private cluster (to stop and start it). */
export async function testPostgres(options: { own?: boolean } = {}): Promise<TestPostgres> {
  const shared = process.env.HTTPSKIT_TEST_PG_URL;
  if (shared !== undefined && shared !== '' && options.own !== true) return ready(shared, undefined);
  try {
    const cluster = await startCluster();
    const pg = ready(cluster.url, cluster);
    after(() => cluster.destroy()); // after the database's own hook: hooks run in order
    return pg;
  } catch (error) {
    const reason = `PostgreSQL could not start: ${(error as Error).message}`;
    if (process.env.CI === 'true') throw new Error(`${reason} (CI=true: the PostgreSQL tests must run, S-7)`, { cause: error });
    return { skip: reason, cluster: undefined, database: () => Promise.reject(new Error(reason)) };
  }
}

function ready(adminUrl: string, cluster: PgCluster | undefined): TestPostgres {
  // One database per test file (CREATE DATABASE costs a good part of a second on a busy machine);
  // each test gets it back empty, as its schema is dropped first. Tests in a file run one by one.
  let shared: Promise<string> | undefined;
  const name = `httpskit_test_${randomBytes(6).toString('hex')}`;
  // Registered now, at the file's top level: a hook registered inside a test would run after it.
  after(async () => {
    if (shared !== undefined) await admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  });
  return {
    skip: false,
    cluster,
    async database() {
      shared ??= (async () => {
        await admin(adminUrl, `CREATE DATABASE ${name}`);
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        return url.href;
      })();
      const url = await shared;
      await admin(url, 'DROP SCHEMA IF EXISTS httpskit CASCADE');
      return url;
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
