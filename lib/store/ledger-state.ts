// The ledgers' state and the decisions taken on it (P-8, P-10, P-12), in this process's memory and
// free of any I/O: the memory store's ledgers are this state alone; the file store's are this state
// plus a journal that other processes read (file/ledger-file.ts). PostgreSQL asks its tables instead.
import type { Reservation, ThrottlePolicy } from './ledgers.js';
import { lockMs } from './throttle-policy.js';

export interface AccountState {
  failures: number;
  lockedUntil: number;
}

export interface Lease {
  readonly account: string | undefined;
  readonly address: string;
  readonly expiresAt: number;
  /** In a journal other processes read: its end must be written too. */
  published: boolean;
}

/** The times within the window ending at `t`. */
export function recent(times: readonly number[] | undefined, windowMs: number, t: number): number[] {
  return times === undefined ? [] : times.filter((at) => at + windowMs > t);
}

export class LedgerState {
  readonly accounts = new Map<string, AccountState>();
  readonly addresses = new Map<string, number[]>();
  readonly nonces = new Map<string, { nc: number; expiresAt: number }>();
  readonly issued = new Map<string, number[]>();
  readonly leases = new Map<string, Lease>();
  /** The window issuances are counted in (take()'s argument); a compaction keeps what is inside it. */
  issuanceWindowMs = 3_600_000;
  readonly policy: ThrottlePolicy;
  readonly #maxEntries: number;
  readonly #evictBatch: number;

  /** `maxEntries`: keys kept per table (accounts, addresses); the least recently failed go first. */
  constructor(policy: ThrottlePolicy, maxEntries = 10_000) {
    this.policy = policy;
    this.#maxEntries = maxEntries;
    this.#evictBatch = Math.max(1, Math.floor(maxEntries / 10));
  }

  /**
   * Map order is insertion order: delete + set moves a key to the end, so the first key is the
   * least recently touched. Evicting a tenth at a time keeps V8 from re-walking deleted slots.
   */
  touch<V>(table: Map<string, V>, key: string, value: V): void {
    table.delete(key);
    table.set(key, value);
    if (table.size <= this.#maxEntries) return;
    let evicted = 0;
    for (const oldest of table.keys()) {
      if (evicted++ >= this.#evictBatch) break;
      table.delete(oldest);
    }
  }

  /** Counts a failed attempt against the account (when there is one) and the address. */
  applyFailure(account: string | null, address: string, at: number): void {
    const { policy } = this;
    if (account !== null) {
      const failures = (this.accounts.get(account)?.failures ?? 0) + 1;
      this.touch(this.accounts, account, { failures, lockedUntil: failures >= policy.accountFreeFailures ? at + lockMs(policy, failures) : 0 });
    }
    const times = recent(this.addresses.get(address), policy.addressWindowMs, at);
    times.push(at);
    this.touch(this.addresses, address, times.slice(-policy.addressMaxFailures));
  }

  /** A nonce count seen (replayed from a journal): kept when higher than the known one. */
  applyNonce(nonce: string, nc: number, expiresAt: number): void {
    const known = this.nonces.get(nonce);
    if (known === undefined || known.nc < nc) this.nonces.set(nonce, { nc, expiresAt });
  }

  applyIssued(account: string, at: number): void {
    const times = this.issued.get(account) ?? [];
    times.push(at);
    this.issued.set(account, times);
  }

  clear(): void {
    this.leases.clear();
    this.accounts.clear();
    this.addresses.clear();
    this.nonces.clear();
    this.issued.clear();
  }

  dropExpiredLeases(t: number): void {
    for (const [id, lease] of this.leases) if (lease.expiresAt <= t) this.leases.delete(id);
  }

  /**
   * Decides a reservation at `t` (P-8 amended: attempts in flight count); with `lease`, takes it
   * under that id (`published`: it is in a journal).
   */
  reserve(account: string | undefined, address: string, t: number, lease?: { readonly id: string; readonly published: boolean }): Reservation {
    const { policy } = this;
    this.dropExpiredLeases(t);
    const state = account === undefined ? undefined : this.accounts.get(account);
    const times = recent(this.addresses.get(address), policy.addressWindowMs, t);
    let until = state !== undefined && state.lockedUntil > t ? state.lockedUntil : 0;
    if (times.length >= policy.addressMaxFailures) until = Math.max(until, (times[times.length - policy.addressMaxFailures] ?? t) + policy.addressWindowMs);
    if (until > t) return { ok: false, reason: 'locked', retryAfterSeconds: Math.max(1, Math.ceil((until - t) / 1000)) };
    let forAccount = 0;
    let forAddress = 0;
    for (const held of this.leases.values()) {
      if (account !== undefined && held.account === account) forAccount++;
      if (held.address === address) forAddress++;
    }
    if (forAccount > 0 && (state?.failures ?? 0) + forAccount >= policy.accountFreeFailures) return { ok: false, reason: 'busy' };
    if (forAddress > 0 && times.length + forAddress >= policy.addressMaxFailures) return { ok: false, reason: 'busy' };
    if (lease === undefined) return { ok: true, id: '' };
    this.leases.set(lease.id, { account, address, expiresAt: t + policy.leaseMs, published: lease.published });
    return { ok: true, id: lease.id };
  }

  /** P-10: true, and recorded, when count `nc` of `nonce` is higher than every count used before. */
  claimNonce(nonce: string, nc: number, expiresAt: number, t: number): boolean {
    // A nonce that has expired since its check may already be swept below, its counts with it:
    // never good again.
    if (expiresAt <= t) return false;
    for (const [key, n] of this.nonces) if (n.expiresAt <= t) this.nonces.delete(key);
    const known = this.nonces.get(nonce);
    if (known !== undefined && known.nc >= nc) return false;
    this.nonces.set(nonce, { nc, expiresAt });
    return true;
  }

  /** P-12: true, and counted, when fewer than `max` were issued to `account` within `windowMs` before `t`. */
  takeIssuance(account: string, max: number, windowMs: number, t: number): boolean {
    this.issuanceWindowMs = Math.max(this.issuanceWindowMs, windowMs);
    // Names are the caller's to choose (P-12 answers alike whether the user exists): forget
    // those whose window has passed, or the table grows with every name ever asked for.
    for (const [key, at] of this.issued) if (recent(at, windowMs, t).length === 0) this.issued.delete(key);
    const times = recent(this.issued.get(account), windowMs, t);
    if (times.length >= max) {
      this.issued.set(account, times);
      return false;
    }
    times.push(t);
    this.issued.set(account, times);
    return true;
  }
}
