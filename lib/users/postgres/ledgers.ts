// The three ledgers of shared security state (S-2, SEAM.md) on PostgreSQL. Each operation is one
// statement, atomic on its own; the throttle's rules live in SQL functions (schema-v1.ts) so the
// row locks are held for one round trip and the database's clock decides every window.
import { ServiceError } from '../../errors.js';
import type { Database } from './database.js';
import type { IssuanceLedger, NonceLedger, Reservation, ThrottleLedger, ThrottlePolicy } from './store-interface.js';

const LEASE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function createThrottleLedger(db: Database, policy: ThrottlePolicy): ThrottleLedger {
  return {
    async reserve(account, address) {
      const result = await db.query<{ kind: string; lease: string | null; retry_after: number | null }>(
        'SELECT kind, lease, retry_after FROM httpskit.throttle_reserve($1, $2, $3, $4, $5, $6)',
        [account ?? null, address, policy.accountFreeFailures, policy.addressMaxFailures, policy.addressWindowMs, policy.leaseMs],
      );
      const row = result.rows[0];
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
    },

    async settle(id, account, address, outcome) {
      if (outcome !== 'fail' && outcome !== 'success' && outcome !== 'none') throw new ServiceError('ERR_INVALID_OPTION', `settle(): unknown outcome ${String(outcome)}`);
      await db.query('SELECT httpskit.throttle_settle($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
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
      // changes no row. Committed (synchronous_commit) before it resolves, as P-10 needs.
      const result = await db.query(
        `INSERT INTO httpskit.digest_nonce AS n (nonce, nc, expires_at) VALUES ($1, $2, $3)
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
