// The three ledgers of shared security state (S-2, SEAM.md) on PostgreSQL. Each operation is one
// statement, atomic on its own; the throttle's rules live in SQL functions (schema-v1.ts) so the
// row locks are held for one round trip and the database's clock decides every window.
import { ServiceError } from '../../errors.js';
import type { Database } from './database.js';
import type { IssuanceLedger, NonceLedger, Reservation, ThrottleLedger, ThrottlePolicy } from '../ledgers.js';

const LEASE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// Every authenticated request reserves and settles, and a commit that waits for its WAL flush
// costs an fsync each (2–6 ms on a busy disk, against < 1 ms for the statements themselves).
// Losing these two in a database crash errs on the safe side, so they commit without waiting
// (synchronous_commit off for their own transaction; other sessions see them at once, as ever):
// a lost lease only frees a place in a budget whose attempts the crash has ended anyway, and a
// lost success or release leaves the account's failures and the lease to count until they
// expire. A failure is what P-8 must never lose: settle('fail') commits as the server is set.
const NO_FLUSH = "set_config('synchronous_commit', 'off', true)";

/** The row throttle_reserve() answers, as the combined read in postgres-store.ts selects it too. */
export interface ReserveRow {
  readonly kind: string | null;
  readonly lease: string | null;
  readonly retry_after: number | null;
}

/**
 * The FROM items that reserve one attempt (P-8, the rules in SQL: schema-v1.ts) with their
 * parameters, the account as $1 and the address as $2: `reserve()` selects from them alone,
 * `reserveAndGet()` (postgres-store.ts) joins the user to them, in one statement either way.
 */
export function reserveFrom(policy: ThrottlePolicy, account: string | undefined, address: string): { readonly from: string; readonly params: unknown[] } {
  return {
    from: `httpskit.throttle_reserve($1, $2, $3, $4, $5, $6) AS r CROSS JOIN ${NO_FLUSH} AS flush`,
    params: [account ?? null, address, policy.accountFreeFailures, policy.addressMaxFailures, policy.addressWindowMs, policy.leaseMs],
  };
}

/** What throttle_reserve()'s row means; anything else is a store that cannot be trusted. */
export function toReservation(row: ReserveRow | undefined): Reservation {
  const reservation: Reservation | undefined =
    row?.kind === 'ok' && row.lease !== null
      ? { ok: true, id: row.lease }
      : row?.kind === 'locked'
        ? { ok: false, reason: 'locked', retryAfterSeconds: row.retry_after ?? 1 }
        : row?.kind === 'busy'
          ? { ok: false, reason: 'busy' }
          : undefined;
  if (reservation === undefined) throw new ServiceError('ERR_STORE_CORRUPT', `throttle_reserve answered ${JSON.stringify(row)}`);
  return reservation;
}

export function createThrottleLedger(db: Database, policy: ThrottlePolicy): ThrottleLedger {
  return {
    async reserve(account, address) {
      const { from, params } = reserveFrom(policy, account, address);
      const result = await db.query<ReserveRow>(`SELECT r.kind, r.lease, r.retry_after FROM ${from}`, params);
      return toReservation(result.rows[0]);
    },

    async settle(id, account, address, outcome) {
      if (outcome !== 'fail' && outcome !== 'success' && outcome !== 'none') throw new ServiceError('ERR_INVALID_OPTION', `settle(): unknown outcome ${String(outcome)}`);
      await db.query(`SELECT httpskit.throttle_settle($1, $2, $3, $4, $5, $6, $7, $8, $9)${outcome === 'fail' ? '' : `, ${NO_FLUSH}`}`, [
        // An id that is not one of ours is "unknown": its lease is not there to drop.
        LEASE_ID.test(id) ? id : null,
        account ?? null,
        address,
        outcome,
        policy.accountFreeFailures,
        policy.baseDelayMs,
        policy.maxDelayMs,
        policy.addressMaxFailures,
        policy.addressWindowMs,
      ]);
    },
  };
}

export function createNonceLedger(db: Database): NonceLedger {
  return {
    async claim(nonce, nc, expiresAt) {
      if (!Number.isSafeInteger(nc) || nc < 0) throw new ServiceError('ERR_INVALID_OPTION', `claim(): nc must be a non-negative integer, got ${String(nc)}`);
      // One statement: the first use inserts, a higher count raises the mark, anything else
      // changes no row. Committed (synchronous_commit) before it resolves, as P-10 needs. A nonce
      // already expired by the database's clock takes no count at all: verified just before it
      // expired and claimed just after, its row may have been cleaned up, and a replay of an old
      // count would otherwise pass (the file and memory ledgers refuse it too).
      const result = await db.query(
        `INSERT INTO httpskit.digest_nonce AS n (nonce, nc, expires_at)
         SELECT $1, $2, $3 WHERE $3 > httpskit.now_ms()
         ON CONFLICT (nonce) DO UPDATE SET nc = EXCLUDED.nc, expires_at = greatest(n.expires_at, EXCLUDED.expires_at)
         WHERE n.nc < EXCLUDED.nc`,
        [nonce, nc, Math.ceil(expiresAt)],
      );
      return result.rowCount === 1;
    },
  };
}

export function createIssuanceLedger(db: Database): IssuanceLedger {
  return {
    async take(account, max, windowMs) {
      const result = await db.query<{ taken: boolean }>('SELECT httpskit.issuance_take($1, $2, $3) AS taken', [account, max, windowMs]);
      return result.rows[0]?.taken === true;
    },
  };
}
