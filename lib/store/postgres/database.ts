// One pool of connections and the rules every store operation follows (S-6): each operation gets
// one deadline for all its statements (queryTimeoutMs); a database that is down, restarting or
// slow turns into ServiceError ERR_STORE_UNAVAILABLE (→ 503 with Retry-After), never a hang and
// never a 500; the pool reconnects by itself when the database returns.
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { ServiceError } from '../../errors.js';
import type { Pg } from './load-pg.js';
import type { PostgresStoreConfig } from './postgres-options.js';
import { redactUrl } from '../spec.js';

export interface Database {
  /** Runs `task` on one connection within the deadline. */
  withClient<T>(task: (client: PoolClient) => Promise<T>): Promise<T>;
  /** Runs `task` in a transaction (READ COMMITTED) within the deadline; rolled back if it throws. */
  transaction<T>(task: (client: PoolClient) => Promise<T>): Promise<T>;
  query<R extends QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Ends the pool after the connections in use are given back; `abandon`: ends those at once. */
  close(abandon?: boolean): Promise<void>;
}

export function createDatabase(pg: Pg, url: string, config: PostgresStoreConfig): Database {
  const timeout = config.queryTimeoutMs;
  const pool: Pool = new pg.Pool({
    connectionString: url,
    max: config.poolSize,
    connectionTimeoutMillis: config.connectTimeoutMs,
    // A new connection costs the database about 15 ms of CPU (a forked backend, its catalog caches,
    // the ledger functions compiled anew) and the request that opens it a few ms: at 10 s, an
    // instance whose traffic pauses for longer paid that again on every burst. Keeping a peak's
    // connections for 5 minutes holds no more than poolSize, which max_connections allows for anyway.
    idleTimeoutMillis: 300_000,
    application_name: 'httpskit',
    // Server-side backstops: a statement or lock wait past the deadline is cancelled by the
    // server, and an instance that stalls inside a transaction cannot hold row locks for ever.
    statement_timeout: timeout,
    lock_timeout: timeout,
    idle_in_transaction_session_timeout: Math.max(10_000, timeout * 2),
    query_timeout: timeout,
  });
  // An idle connection that the server drops (restart, failover) must not crash the process;
  // the pool discards it and the next operation connects anew.
  pool.on('error', () => undefined);
  const where = redactUrl(url);
  /** How to let go of each connection in use: close() ends those still working. */
  const inUse = new Set<(destroy: boolean) => void>();

  async function withClient<T>(task: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient | undefined;
    let done = false;
    const finish = (destroy: boolean): void => {
      if (client === undefined || done) return;
      done = true;
      inUse.delete(finish);
      // Destroying is the safe choice after any failure: the connection may be mid-transaction.
      client.release(destroy ? true : undefined);
    };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        finish(true);
        done = true;
        reject(new Error(`no answer within ${timeout} ms`));
      }, timeout);
    });
    const work = (async () => {
      const acquired = await pool.connect();
      if (done) {
        acquired.release(true);
        throw new Error('timed out');
      }
      client = acquired;
      inUse.add(finish);
      try {
        const result = await task(acquired);
        finish(false);
        return result;
      } catch (error) {
        finish(true);
        throw error;
      }
    })();
    work.catch(() => undefined);
    try {
      return await Promise.race([work, deadline]);
    } catch (error) {
      throw toStoreError(error, where);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    withClient,
    transaction: (task) =>
      withClient(async (client) => {
        await client.query('BEGIN');
        const result = await task(client);
        await client.query('COMMIT');
        return result;
      }),
    query: (sql, params = []) => withClient((client) => client.query(sql, params as unknown[])),
    // pool.end() waits for every connection in use. Past the service's grace (`abandon`), a query
    // still waiting (a lock another session holds) has its connection ended and fails, instead of
    // holding the shutdown for the query time-out.
    close: (abandon = false) => {
      if (abandon) for (const finish of inUse) finish(true);
      return pool.end();
    },
  };
}

// SQLSTATE classes that mean "the database cannot serve right now", not "this request is wrong":
// 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown,
// cancelled by statement_timeout, starting up), 58 system error, 40 rollback (deadlock,
// serialization), 55P03 lock_not_available (lock_timeout), 25P03 idle-in-transaction timeout.
const UNAVAILABLE = /^(08|53|57|58|40)|^55P03$|^25P03$/;

/** Carries an error of the caller's own code (an update function) through unchanged. */
export class CallerError {
  constructor(readonly error: unknown) {}
}

/** Maps a driver or network failure to ERR_STORE_UNAVAILABLE; other errors pass through. */
export function toStoreError(error: unknown, where: string): unknown {
  if (error instanceof CallerError) return error.error;
  if (error instanceof ServiceError) return error;
  const code = (error as { code?: unknown }).code;
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  if (sqlState === undefined || UNAVAILABLE.test(sqlState)) {
    return new ServiceError('ERR_STORE_UNAVAILABLE', `the PostgreSQL store ${where} is unavailable: ${(error as Error).message}`, { cause: error });
  }
  return error;
}
