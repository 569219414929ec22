// The PostgreSQL store (S-1..S-3): one row per user, read fresh on every call (no process cache:
// a change acknowledged by one instance is seen by the next request to any other), and
// update() as one transaction holding the user's row lock, so `fn` runs exactly once, on the
// committed state, and no concurrent change is lost.
import { Buffer } from 'node:buffer';
import type { PoolClient } from 'pg';
import { ServiceError } from '../../errors.js';
import { checkRecord, checkWrite } from '../record.js';
import { releasingOnFailure } from '../reserve-then-get.js';
import { cleanUp, startCleanup } from './cleanup.js';
import { CallerError, createDatabase, type Database } from './database.js';
import { createIssuanceLedger, createNonceLedger, createThrottleLedger, reserveFrom, toReservation, type ReserveRow } from './ledgers.js';
import { loadPg } from './load-pg.js';
import { checkVersion, migrate } from './migrate.js';
import { resolvePostgresOptions, type PostgresStoreConfig, type PostgresStoreOptions } from './postgres-options.js';
import { createSettingsLedger } from './settings.js';
import type { IssuanceLedger, NonceLedger, ReservedRead, RecordedSettingsLedger, Store, ThrottleLedger, UpdateDecision, UpdateOptions, UpdateView, UserRecord } from '../store.js';

export interface PostgresStore extends Store {
  /** S-4: the settings every instance must agree on. */
  readonly settings: RecordedSettingsLedger;
  /** Deletes expired ledger rows now (it also runs every cleanupIntervalMs); the number deleted. */
  cleanUp(): Promise<number>;
}

const USER_COLUMNS = ['name', 'role', 'hash', 'digest', 'reset_tokens', 'created_at', 'password_changed_at'] as const;
const COLUMNS = USER_COLUMNS.join(', ');

/** Opens (and, unless `migrate: false`, migrates) the store at a postgres:// URL. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const config = resolvePostgresOptions(options);
  const pg = await loadPg();
  const db = createDatabase(pg, url, config);
  try {
    await db.withClient(async (client) => {
      const encoding = await client.query<{ server_encoding: string }>('SHOW server_encoding');
      if (encoding.rows[0]?.server_encoding !== 'UTF8') {
        throw new ServiceError('ERR_INVALID_OPTION', `the database must use the UTF8 encoding, not ${String(encoding.rows[0]?.server_encoding)}`);
      }
      if (config.migrate) await migrate(client);
      else await checkVersion(client);
    });
  } catch (error) {
    await db.close();
    throw error;
  }
  const stopCleanup = startCleanup(db, config);
  return new Postgres(db, config, stopCleanup);
}

class Postgres implements PostgresStore {
  readonly throttle: ThrottleLedger;
  readonly nonces: NonceLedger;
  readonly issuance: IssuanceLedger;
  readonly settings: RecordedSettingsLedger;
  readonly #db: Database;
  readonly #config: PostgresStoreConfig;
  readonly #stopCleanup: () => void;
  #closed = false;

  constructor(db: Database, config: PostgresStoreConfig, stopCleanup: () => void) {
    this.#db = db;
    this.#config = config;
    this.#stopCleanup = stopCleanup;
    this.throttle = createThrottleLedger(db, config.throttle);
    this.nonces = createNonceLedger(db);
    this.issuance = createIssuanceLedger(db);
    this.settings = createSettingsLedger(db);
  }

  async get(name: string): Promise<UserRecord | undefined> {
    this.#assertOpen();
    const result = await this.#db.query(`SELECT ${COLUMNS} FROM httpskit.users WHERE name = $1`, [name]);
    return result.rows[0] === undefined ? undefined : toRecord(result.rows[0]);
  }

  async reserveAndGet(account: string, address: string): Promise<ReservedRead> {
    this.#assertOpen();
    // One statement, one round trip (issue 20): the reservation as throttle.reserve() takes it,
    // and the user joined to it only when it is admitted, read in the same statement's snapshot.
    const { from, params } = reserveFrom(this.#config.throttle, account, address);
    const result = await this.#db.query<ReserveRow & Record<string, unknown>>(
      `SELECT r.kind, r.lease, r.retry_after, ${USER_COLUMNS.map((c) => `u.${c}`).join(', ')}
         FROM ${from} LEFT JOIN httpskit.users AS u ON r.kind = 'ok' AND u.name = $1`,
      params,
    );
    const row = result.rows[0];
    const reservation = toReservation(row);
    if (!reservation.ok) return { reservation };
    return { reservation, record: await releasingOnFailure(this.throttle, reservation.id, account, address, () => (row === undefined || row.name === null ? undefined : toRecord(row))) };
  }

  async page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<{ readonly users: readonly UserRecord[]; readonly more: boolean }> {
    this.#assertOpen();
    const { after, limit } = options;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new ServiceError('ERR_INVALID_OPTION', `page() needs a positive integer limit, got ${String(limit)}`);
    const result = await this.#db.query(
      `SELECT ${COLUMNS} FROM httpskit.users WHERE $1::bytea IS NULL OR sort_key > $1 ORDER BY sort_key LIMIT $2`,
      [after === undefined ? null : sortKey(after), limit + 1],
    );
    const users = result.rows.slice(0, limit).map(toRecord);
    return { users, more: result.rows.length > limit };
  }

  async list(): Promise<UserRecord[]> {
    this.#assertOpen();
    const result = await this.#db.query(`SELECT ${COLUMNS} FROM httpskit.users ORDER BY sort_key`);
    return result.rows.map(toRecord);
  }

  async count(): Promise<number> {
    this.#assertOpen();
    const result = await this.#db.query<{ n: number }>('SELECT count(*)::integer AS n FROM httpskit.users');
    return result.rows[0]?.n ?? 0;
  }

  async findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined> {
    this.#assertOpen();
    const column = algorithm === 'MD5' ? 'userhash_md5' : 'userhash_sha256';
    const computed = algorithm === 'MD5' ? `md5(convert_to(name || ':' || $1, 'UTF8'))` : `encode(sha256(convert_to(name || ':' || $1, 'UTF8')), 'hex')`;
    // The indexed column holds hashes under the recorded realm (S-4); any other realm (a tool, a
    // test) is answered by computing them, which costs a scan. The gate is evaluated once.
    const result = await this.#db.query<{ name: string }>(
      `WITH recorded AS (SELECT value->>'realm' AS realm FROM httpskit.meta WHERE key = 'settings')
       SELECT name FROM httpskit.users WHERE ${column} = $2 AND $1 = (SELECT realm FROM recorded)
       UNION ALL
       SELECT name FROM httpskit.users WHERE $1 IS DISTINCT FROM (SELECT realm FROM recorded) AND ${computed} = $2
       LIMIT 1`,
      [realm, hash.toLowerCase()],
    );
    return result.rows[0]?.name;
  }

  async update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options: UpdateOptions = {}): Promise<T> {
    this.#assertOpen();
    if (typeof name !== 'string') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a user name string');
    if (typeof fn !== 'function') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a function');
    return this.#db.transaction(async (client) => {
      // Admin-count decisions (R-5/R-6: the last admin) are taken one at a time, so two demotions
      // of two different admins cannot both see the other still there.
      if (options.countAdmins === true) await client.query("SELECT pg_advisory_xact_lock(hashtext('httpskit admins'))");
      // A lock on the name, not only on its row: a row that does not exist yet cannot be locked,
      // and two creators of one name would otherwise both run `fn` on "absent".
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [name]);
      const found = await client.query(`SELECT ${COLUMNS} FROM httpskit.users WHERE name = $1 FOR UPDATE`, [name]);
      const current = found.rows[0] === undefined ? undefined : toRecord(found.rows[0]);
      let admins = 0;
      if (options.countAdmins === true) {
        const counted = await client.query<{ n: number }>("SELECT count(*)::integer AS n FROM httpskit.users WHERE role = 'admin'");
        admins = counted.rows[0]?.n ?? 0;
      }
      let decision: UpdateDecision<T>;
      try {
        decision = fn(current, { admins });
      } catch (error) {
        throw new CallerError(error);
      }
      await write(client, name, current, decision.next, options.verbatim === true ? 'shape' : 'policy');
      return decision.result;
    });
  }

  cleanUp(): Promise<number> {
    this.#assertOpen();
    return cleanUp(this.#db, this.#config);
  }

  async ping(): Promise<void> {
    this.#assertOpen();
    await this.#db.query('SELECT 1 FROM httpskit.schema_version LIMIT 1');
  }

  async close(options: { readonly abandon?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopCleanup();
    await this.#db.close(options.abandon === true);
  }

  #assertOpen(): void {
    if (this.#closed) throw new ServiceError('ERR_STORE_CLOSED', 'the PostgreSQL store is closed');
  }
}

async function write(client: PoolClient, name: string, current: UserRecord | undefined, next: UserRecord | null | undefined, names: 'policy' | 'shape'): Promise<void> {
  if (next === undefined) return;
  if (next === null) {
    if (current !== undefined) await client.query('DELETE FROM httpskit.users WHERE name = $1', [name]);
    return;
  }
  let record: UserRecord;
  try {
    record = checkWrite(name, next, names);
  } catch (error) {
    throw new CallerError(error);
  }
  await client.query(
    `INSERT INTO httpskit.users (name, sort_key, role, hash, digest, reset_tokens, created_at, password_changed_at, userhash_sha256, userhash_md5)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8,
            encode(sha256(convert_to($1 || ':' || (value->>'realm'), 'UTF8')), 'hex'),
            md5(convert_to($1 || ':' || (value->>'realm'), 'UTF8'))
       FROM (SELECT (SELECT value FROM httpskit.meta WHERE key = 'settings') AS value) AS s
     ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role, hash = EXCLUDED.hash, digest = EXCLUDED.digest,
       reset_tokens = EXCLUDED.reset_tokens, created_at = EXCLUDED.created_at,
       password_changed_at = EXCLUDED.password_changed_at`,
    [
      record.name,
      sortKey(record.name),
      record.role,
      record.hash,
      record.digest ?? null,
      record.resetTokens === undefined ? null : JSON.stringify(record.resetTokens),
      record.createdAt,
      record.passwordChangedAt,
    ],
  );
}

/** UTF-16BE: comparing these bytes compares UTF-16 code units, R-3's order (JS `<`). */
export function sortKey(name: string): Buffer {
  return Buffer.from(name, 'utf16le').swap16();
}

function toRecord(row: Record<string, unknown>): UserRecord {
  const value: Record<string, unknown> = {
    name: row.name,
    role: row.role,
    hash: row.hash,
    createdAt: row.created_at,
    passwordChangedAt: row.password_changed_at,
  };
  if (row.digest !== null) value.digest = row.digest;
  if (row.reset_tokens !== null) value.resetTokens = row.reset_tokens;
  const checked = checkRecord(value, 'shape');
  if (!checked.ok) throw new ServiceError('ERR_STORE_CORRUPT', `the PostgreSQL store holds a bad user record: ${checked.problem}`);
  return checked.record;
}

/** `store migrate` (S-5): brings the schema at `url` up to this code's version; the versions before and after. */
export async function migratePostgres(url: string, options: PostgresStoreOptions = {}): Promise<{ readonly from: number; readonly to: number }> {
  const config = resolvePostgresOptions(options);
  const db = createDatabase(await loadPg(), url, config);
  try {
    return await db.withClient((client) => migrate(client));
  } finally {
    await db.close();
  }
}
