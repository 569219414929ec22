// Schema versions (S-5): an ordered list of migrations, applied in one transaction under an
// advisory lock, so instances that start together cannot race and a failed step leaves nothing
// (PostgreSQL's DDL is transactional). A database newer than this code is refused.
import type { ClientBase } from 'pg';
import { ServiceError } from '../../errors.js';
import { SCHEMA_V1 } from './schema-v1.js';

const MIGRATIONS: readonly string[] = [SCHEMA_V1];

/** The schema version this code reads and writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

// Any constant works; it only has to differ from the advisory locks of other applications.
const LOCK = "hashtext('httpskit schema migration')";

const VERSION_TABLE = `
CREATE SCHEMA IF NOT EXISTS httpskit;
CREATE TABLE IF NOT EXISTS httpskit.schema_version (
  version    integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

/** Brings the schema up to SCHEMA_VERSION; returns the versions before and after. */
export async function migrate(client: ClientBase): Promise<{ readonly from: number; readonly to: number }> {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(${LOCK})`);
    await client.query(VERSION_TABLE);
    const from = await readVersion(client);
    refuseNewer(from);
    for (let version = from + 1; version <= SCHEMA_VERSION; version++) {
      await client.query(MIGRATIONS[version - 1] ?? '');
      await client.query('INSERT INTO httpskit.schema_version (version) VALUES ($1)', [version]);
    }
    await client.query('COMMIT');
    return { from, to: SCHEMA_VERSION };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** Refuses a schema this code cannot use as it is (without migrating it). */
export async function checkVersion(client: ClientBase): Promise<void> {
  const exists = await client.query("SELECT to_regclass('httpskit.schema_version') IS NOT NULL AS present");
  const version = exists.rows[0]?.present === true ? await readVersion(client) : 0;
  refuseNewer(version);
  if (version < SCHEMA_VERSION) {
    throw new ServiceError('ERR_STORE_VERSION', `the database schema is at version ${version} and this httpskit needs ${SCHEMA_VERSION}: run \`httpskit store migrate\``);
  }
}

async function readVersion(client: ClientBase): Promise<number> {
  const result = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM httpskit.schema_version');
  return result.rows[0]?.version ?? 0;
}

function refuseNewer(version: number): void {
  if (version > SCHEMA_VERSION) {
    throw new ServiceError(
      'ERR_STORE_VERSION',
      `the database schema is at version ${version}, newer than this httpskit understands (${SCHEMA_VERSION}): upgrade httpskit on this machine`,
    );
  }
}
