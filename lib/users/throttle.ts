// Failed-authentication throttling (CONTRACT P-8; NIST SP 800-63B-4 §3.2.2, OWASP
// "exponential lockout"). Two tables, both bounded:
// - per account (existing or not, so a 429 reveals nothing): after `accountFreeFailures`
//   consecutive failures the account waits baseDelay, doubling with each further
//   failure up to maxDelay; a success forgets it all;
// - per client address (password spraying): more than `addressMaxFailures` failures
//   within `addressWindowMs` and the address waits until the oldest leaves the window.
// Memory: each table keeps at most `maxEntries` keys and forgets the least recently
// failed ones first. Flushing a victim's entry takes maxEntries fresh failures, each
// counted against the attacker's own address (IPv6: its /64), so at most 50 per address
// per window: 200 addresses for the default 10,000 entries.
// Attempts in flight count as prospective failures (admit()), so concurrent guesses
// cannot all pass one open window.

import { isIP } from 'node:net';

export interface ThrottleOptions {
  /** Clock in ms. @default Date.now */
  readonly now?: () => number;
  /** Keys kept per table. @default 10_000 */
  readonly maxEntries?: number;
  /** Consecutive failures an account may have before it must wait. @default 5 */
  readonly accountFreeFailures?: number;
  /** First wait, doubled per further failure. @default 1000 */
  readonly baseDelayMs?: number;
  /** Longest wait. @default 900_000 (15 min) */
  readonly maxDelayMs?: number;
  /** Failures per address within the window before it must wait. @default 50 */
  readonly addressMaxFailures?: number;
  /** @default 900_000 (15 min) */
  readonly addressWindowMs?: number;
}

export type ThrottleDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

/** One admitted attempt; settle it once with fail(), succeed() or release() (later calls do nothing). */
export interface Attempt {
  fail(): void;
  succeed(): void;
  /** Neither: the attempt ended without a verdict (overload, store error, stale nonce). */
  release(): void;
}

export interface Throttle {
  /**
   * check() and, when allowed, reserve an in-flight attempt. Attempts in flight count as
   * prospective failures, so concurrent guesses cannot all slip through one open window.
   */
  admit(account: string, address: string): { ok: true; attempt: Attempt } | { ok: false; retryAfterSeconds: number };
  /** Call before any hashing; a refusal is not itself a failure. */
  check(account: string, address: string): ThrottleDecision;
  /** Records a failed authentication. */
  fail(account: string, address: string): void;
  /** Records a success: the account's consecutive failures are forgotten. */
  succeed(account: string): void;
  size(): { accounts: number; addresses: number };
}

interface AccountEntry {
  failures: number;
  lockedUntil: number; // ms; 0 while still within the free failures
}

/** Creates a throttle; its state lives in the returned object only. */
export function createThrottle(options: ThrottleOptions = {}): Throttle {
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new TypeError('throttle: now must be a function');
  const maxEntries = positive(options.maxEntries ?? 10_000, 'maxEntries');
  const freeFailures = positive(options.accountFreeFailures ?? 5, 'accountFreeFailures');
  const baseDelayMs = positive(options.baseDelayMs ?? 1_000, 'baseDelayMs');
  const maxDelayMs = positive(options.maxDelayMs ?? 900_000, 'maxDelayMs');
  const addressMaxFailures = positive(options.addressMaxFailures ?? 50, 'addressMaxFailures');
  const addressWindowMs = positive(options.addressWindowMs ?? 900_000, 'addressWindowMs');
  if (maxDelayMs < baseDelayMs) throw new RangeError('throttle: maxDelayMs must be at least baseDelayMs');

  // Map iteration order is insertion order: delete + set moves a key to the end,
  // so the first key is always the least recently failed.
  const accounts = new Map<string, AccountEntry>();
  // The last `addressMaxFailures` failure times per address, oldest first.
  const addresses = new Map<string, number[]>();
  // Attempts admitted and not yet settled, per account (bounded by the hashing gate's capacity).
  const inFlight = new Map<string, number>();

  function settle(account: string): void {
    const n = (inFlight.get(account) ?? 0) - 1;
    if (n > 0) inFlight.set(account, n);
    else inFlight.delete(account);
  }

  // Evicting a tenth at a time, not one key per insert: V8 leaves deleted Map
  // slots in place until it rehashes, so asking for the first key after each
  // delete re-walks them all (measured: 1,000,000 names took 50 s, now ~1 s).
  const evictBatch = Math.max(1, Math.floor(maxEntries / 10));

  function touch<V>(table: Map<string, V>, key: string, value: V): void {
    table.delete(key);
    table.set(key, value);
    if (table.size <= maxEntries) return;
    let evicted = 0;
    for (const oldest of table.keys()) {
      if (evicted++ >= evictBatch) break;
      table.delete(oldest);
    }
  }

  function waitMs(failures: number): number {
    const doublings = failures - freeFailures;
    // 2 ** 40 already dwarfs any sane maxDelay; capping the exponent keeps it finite.
    return Math.min(baseDelayMs * 2 ** Math.min(doublings, 40), maxDelayMs);
  }

  const throttle: Throttle = {
    admit(account, address) {
      const decision = throttle.check(account, address);
      if (!decision.ok) return decision;
      const pending = inFlight.get(account) ?? 0;
      // At the threshold only one attempt at a time: its failure re-locks the account.
      if (pending > 0 && (accounts.get(account)?.failures ?? 0) + pending >= freeFailures) return { ok: false, retryAfterSeconds: 1 };
      inFlight.set(account, pending + 1);
      let open = true;
      const once = (fn: () => void) => () => {
        if (!open) return;
        open = false;
        settle(account);
        fn();
      };
      return {
        ok: true,
        attempt: { fail: once(() => throttle.fail(account, address)), succeed: once(() => throttle.succeed(account)), release: once(() => {}) },
      };
    },

    check(account, rawAddress) {
      const address = addressKey(rawAddress);
      const t = now();
      let until = accounts.get(account)?.lockedUntil ?? 0;
      const times = addresses.get(address);
      const oldest = times?.[0];
      if (times !== undefined && oldest !== undefined && times.length >= addressMaxFailures) {
        until = Math.max(until, oldest + addressWindowMs);
      }
      if (until <= t) return { ok: true };
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((until - t) / 1000)) };
    },

    fail(account, rawAddress) {
      const address = addressKey(rawAddress);
      const t = now();
      const failures = (accounts.get(account)?.failures ?? 0) + 1;
      touch(accounts, account, { failures, lockedUntil: failures >= freeFailures ? t + waitMs(failures) : 0 });

      const times = addresses.get(address) ?? [];
      times.push(t);
      while (times.length > addressMaxFailures) times.shift();
      // Times outside the window no longer count (keeps a slow, steady client unblocked).
      while (times.length > 0 && (times[0] ?? t) + addressWindowMs <= t) times.shift();
      touch(addresses, address, times);
    },

    succeed(account) {
      accounts.delete(account);
    },

    size() {
      return { accounts: accounts.size, addresses: addresses.size };
    },
  };
  return throttle;
}

function positive(value: number, name: string): number {
  if (Number.isSafeInteger(value) && value > 0) return value;
  throw new RangeError(`throttle: ${name} must be a positive integer, got ${String(value)}`);
}

/**
 * The key an address is throttled under: IPv4 as is, IPv6 by its /64 prefix, because one host
 * usually holds a whole /64 and could otherwise rotate through 2^64 addresses (RFC 7707 §2).
 */
export function addressKey(address: string): string {
  const bare = address.split('%', 1)[0] ?? address;
  if (isIP(bare) !== 6) return address;
  const [head = '', tail] = bare.toLowerCase().split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const backGroups = back.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - backGroups)).fill('0'), ...back];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
