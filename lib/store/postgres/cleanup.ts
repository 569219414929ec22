// Periodic clean-up (S-2): every ledger table is bounded by deleting what can no longer decide
// anything, in batches so no statement holds many row locks. Every instance runs it; the
// deletes are idempotent, so several at once only repeat each other's work.
import type { Database } from './database.js';
import type { PostgresStoreConfig } from './postgres-options.js';

const BATCH = 1_000;
/** An account's failures are forgotten a day after its last one, once its lock has passed. */
const FORGET_ACCOUNT_MS = 24 * 60 * 60_000;
/**
 * Nonce counts are kept an hour past the nonce's expiry: the expiry was computed from an
 * instance's clock, and a replay must not become possible on an instance whose clock is behind.
 */
const NONCE_GRACE_MS = 60 * 60_000;

function statements(config: PostgresStoreConfig): string[] {
  const batch = (table: string, where: string): string =>
    `DELETE FROM httpskit.${table} WHERE ctid IN (SELECT ctid FROM httpskit.${table} WHERE ${where} LIMIT ${BATCH})`;
  const now = 'httpskit.now_ms()';
  return [
    batch('throttle_lease', `expires_at <= ${now}`),
    batch('throttle_account', `locked_until <= ${now} AND last_failure <= ${now} - ${FORGET_ACCOUNT_MS}`),
    batch('throttle_address', `last_failure <= ${now} - ${config.throttle.addressWindowMs}`),
    batch('digest_nonce', `expires_at <= ${now} - ${NONCE_GRACE_MS}`),
    batch('token_issuance', `forget_at <= ${now}`),
  ];
}

/** Deletes expired ledger rows until none are left; the number deleted. */
export async function cleanUp(db: Database, config: PostgresStoreConfig): Promise<number> {
  let total = 0;
  for (const sql of statements(config)) {
    for (;;) {
      const { rowCount } = await db.query(sql);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
  }
  return total;
}

/** Runs cleanUp every cleanupIntervalMs (never two at once); returns the stop function. */
export function startCleanup(db: Database, config: PostgresStoreConfig): () => void {
  if (config.cleanupIntervalMs === 0) return () => undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    cleanUp(db, config)
      .catch(config.onBackgroundError)
      .finally(() => {
        running = false;
      });
  }, config.cleanupIntervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
