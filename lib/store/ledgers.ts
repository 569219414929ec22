// The state that decides a login, as ledgers (P-8, P-10, P-12, S-2): record an event, ask a
// question about recent events, atomically. Types only. Three implementations: the file store's
// (memory, journaled to a side file so it survives a restart: file/ledger-file.ts), the memory
// store's (the same state, no file: memory/) and PostgreSQL's, where the same questions are asked
// of the database so that they hold for a whole cluster. The handlers see only these interfaces.

/** P-8 policy numbers, fixed when the store is opened. */
export interface ThrottlePolicy {
  /** Consecutive failures an account may have before it must wait. */
  readonly accountFreeFailures: number;
  /** First wait once the free failures are spent, doubled with each further failure. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Failures per address within the window before it must wait (password spraying). */
  readonly addressMaxFailures: number;
  readonly addressWindowMs: number;
  /** An in-flight reservation of a crashed or hung process expires after this long. */
  readonly leaseMs: number;
}

export type Reservation =
  | { readonly ok: true; readonly id: string }
  /** A budget is spent by finished failures: 429 with Retry-After. */
  | { readonly ok: false; readonly reason: 'locked'; readonly retryAfterSeconds: number }
  /** A budget is taken by attempts still in flight: wait for them (bounded), then 503. */
  | { readonly ok: false; readonly reason: 'busy' };

export type Outcome = 'fail' | 'success' | 'none';

export interface ThrottleLedger {
  /**
   * Reserves one attempt against the account's and the address's budgets (P-8 amended: attempts
   * in flight count, so concurrency buys no extra guesses). `account` undefined: an event that
   * counts against the address only (P-12 requests). `address` is already an addressKey().
   */
  reserve(account: string | undefined, address: string): Promise<Reservation>;
  /** Ends a reservation with its outcome; the outcome is recorded even when the lease expired. */
  settle(id: string, account: string | undefined, address: string, outcome: Outcome): Promise<void>;
}

export interface NonceLedger {
  /**
   * Digest (P-10 amended): records that count `nc` of `nonce` was used. False when a count at
   * least as high was used before, by any process sharing the store. Durable before it says true.
   */
  claim(nonce: string, nc: number, expiresAt: number): Promise<boolean>;
}

export interface IssuanceLedger {
  /** P-12: true, and counted, when fewer than `max` tokens were issued to `account` within `windowMs`. */
  take(account: string, max: number, windowMs: number): Promise<boolean>;
}

export interface Ledgers {
  readonly throttle: ThrottleLedger;
  readonly nonces: NonceLedger;
  readonly issuance: IssuanceLedger;
}
