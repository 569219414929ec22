// The ledgers of the JSON-file store (ledgers.ts): the state lives in memory and every event that
// must survive a restart (a failure, a success after failures, a used Digest nonce count, an issued
// reset token) is appended to a side file beside the store, `<store>.ledger`, one JSON line each,
// fsync'ed before the answer. Every process that shares the store reads the others' lines before
// it decides, and decisions that must be atomic across processes (a nonce count, an issuance) are
// taken under the store's cross-process lock. Attempts in flight (leases) live in the process:
// they end with it.
//
// Lines: {"f":[account|null,address,at]} failure · {"s":account} success · {"a":[account,failures,lockedUntil]}
// account state (compaction) · {"n":[nonce,nc,expiresAt]} · {"i":[account,at]}.
import { randomBytes } from 'node:crypto';
import { open, rename, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { assertOwner } from './store-safety.js';
import { lockMs, type Ledgers, type Outcome, type Reservation, type ThrottlePolicy } from './ledgers.js';

export interface FileLedgerOptions {
  readonly path: string;
  readonly policy: ThrottlePolicy;
  readonly now: () => number;
  /** Runs `task` under the store's cross-process lock (and its in-process queue). */
  readonly exclusive: <T>(task: () => Promise<T>) => Promise<T>;
  /** Keys kept per table (accounts, addresses); the least recently failed go first. @default 10_000 */
  readonly maxEntries?: number;
  /** Rewrite the side file from memory once it is larger than this. @default 1 MiB */
  readonly compactBytes?: number;
  /** Told about a line that does not parse (skipped) or a failed compaction. */
  readonly warn?: (message: string) => void;
}

interface Account {
  failures: number;
  lockedUntil: number;
}

interface Lease {
  readonly account: string | undefined;
  readonly address: string;
  readonly expiresAt: number;
}

export interface FileLedgers extends Ledgers {
  /** Reads the side file (creating nothing); call once before use. */
  load(): Promise<void>;
  size(): { accounts: number; addresses: number; nonces: number };
}

export function createFileLedgers(o: FileLedgerOptions): FileLedgers {
  const { path, policy, now } = o;
  const maxEntries = o.maxEntries ?? 10_000;
  const compactBytes = o.compactBytes ?? 1024 * 1024;
  const evictBatch = Math.max(1, Math.floor(maxEntries / 10));

  const accounts = new Map<string, Account>();
  const addresses = new Map<string, number[]>();
  const nonces = new Map<string, { nc: number; expiresAt: number }>();
  const issued = new Map<string, number[]>();
  const leases = new Map<string, Lease>();
  // What of the side file has been applied: its identity and how many bytes.
  let ino = -1;
  let offset = 0;
  let generation = 0;
  let tail: Promise<unknown> = Promise.resolve();

  /** One at a time in this process: catch-ups and appends both move `offset`. */
  const queued = <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task);
    tail = run.catch(() => undefined);
    return run;
  };

  // Map order is insertion order: delete + set moves a key to the end, so the first key is the
  // least recently touched. Evicting a tenth at a time keeps V8 from re-walking deleted slots.
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

  function recent(times: readonly number[] | undefined, windowMs: number, t: number): number[] {
    return times === undefined ? [] : times.filter((at) => at + windowMs > t);
  }

  function applyFailure(account: string | null, address: string, at: number): void {
    if (account !== null) {
      const failures = (accounts.get(account)?.failures ?? 0) + 1;
      touch(accounts, account, { failures, lockedUntil: failures >= policy.accountFreeFailures ? at + lockMs(policy, failures) : 0 });
    }
    const times = recent(addresses.get(address), policy.addressWindowMs, at);
    times.push(at);
    touch(addresses, address, times.slice(-policy.addressMaxFailures));
  }

  function apply(line: string): void {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      o.warn?.(`${path}: skipped a line that does not parse`);
      return;
    }
    if (typeof event !== 'object' || event === null) return;
    const e = event as Record<string, unknown>;
    const f = e['f'];
    if (Array.isArray(f) && (typeof f[0] === 'string' || f[0] === null) && typeof f[1] === 'string' && typeof f[2] === 'number') {
      applyFailure(f[0], f[1], f[2]);
    } else if (typeof e['s'] === 'string') {
      accounts.delete(e['s']);
    } else if (Array.isArray(e['a']) && typeof e['a'][0] === 'string' && typeof e['a'][1] === 'number' && typeof e['a'][2] === 'number') {
      touch(accounts, e['a'][0], { failures: e['a'][1], lockedUntil: e['a'][2] });
    } else if (Array.isArray(e['n']) && typeof e['n'][0] === 'string' && typeof e['n'][1] === 'number' && typeof e['n'][2] === 'number') {
      const known = nonces.get(e['n'][0]);
      if (known === undefined || known.nc < e['n'][1]) nonces.set(e['n'][0], { nc: e['n'][1], expiresAt: e['n'][2] });
    } else if (Array.isArray(e['i']) && typeof e['i'][0] === 'string' && typeof e['i'][1] === 'number') {
      const times = issued.get(e['i'][0]) ?? [];
      times.push(e['i'][1]);
      issued.set(e['i'][0], times);
    } else {
      o.warn?.(`${path}: skipped a line of an unknown kind`);
    }
  }

  function reset(): void {
    generation++;
    accounts.clear();
    addresses.clear();
    nonces.clear();
    issued.clear();
    offset = 0;
  }

  /** Applies what any process appended since we last looked (a compaction elsewhere: all of it). */
  async function catchUp(): Promise<void> {
    let info;
    try {
      info = await stat(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      if (ino !== -1) reset();
      ino = -1;
      return;
    }
    if (info.ino !== ino || info.size < offset) {
      reset();
      ino = info.ino;
    }
    if (info.size === offset) return;
    const handle = await open(path, 'r');
    try {
      // U-1: a ledger that appeared after open in a shared directory may be another user's.
      assertOwner(await handle.stat(), path);
      const length = info.size - offset;
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      // Only whole lines: another process may be half-way through an append.
      const end = text.lastIndexOf('\n');
      if (end < 0) return;
      for (const line of text.slice(0, end).split('\n')) if (line !== '') apply(line);
      offset += Buffer.byteLength(text.slice(0, end + 1));
    } finally {
      await handle.close();
    }
  }

  /** Appends lines durably; the caller holds the lock and has caught up. */
  async function append(lines: readonly unknown[]): Promise<void> {
    const text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
    const handle = await open(path, 'a', 0o600);
    try {
      await handle.write(text);
      await handle.datasync();
      const info = await handle.stat();
      ino = info.ino;
      offset = info.size;
    } finally {
      await handle.close();
    }
    if (offset > compactBytes) await compact().catch((error: unknown) => o.warn?.(`${path}: compaction failed: ${(error as Error).message}`));
  }

  /** Rewrites the side file with what still matters (temp file, fsync, rename). */
  async function compact(): Promise<void> {
    const t = now();
    const lines: unknown[] = [];
    for (const [account, a] of accounts) lines.push({ a: [account, a.failures, a.lockedUntil] });
    for (const [address, times] of addresses) for (const at of recent(times, policy.addressWindowMs, t)) lines.push({ f: [null, address, at] });
    for (const [nonce, n] of nonces) if (n.expiresAt > t) lines.push({ n: [nonce, n.nc, n.expiresAt] });
    for (const [account, times] of issued) for (const at of times) if (at + 3_600_000 > t) lines.push({ i: [account, at] });
    const temp = `${path}.${process.pid}.tmp`;
    const text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
    // Exclusive creation: a predictable name must never follow a link planted in its place.
    await unlink(temp).catch(() => undefined);
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.write(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    const dir = await open(dirname(path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    const info = await stat(path);
    ino = info.ino;
    offset = info.size;
  }

  /**
   * Under the cross-process lock: catch up, decide, append what was decided. The task is told
   * whether the catch-up started over (another process compacted the file), which forgets what
   * was applied in memory ahead of its line.
   */
  const locked = <T>(task: (wasReset: boolean) => Promise<T>): Promise<T> =>
    queued(() =>
      o.exclusive(async () => {
        const before = generation;
        await catchUp();
        return task(generation !== before);
      }),
    );

  function dropExpiredLeases(t: number): void {
    for (const [id, lease] of leases) if (lease.expiresAt <= t) leases.delete(id);
  }

  function reserveNow(account: string | undefined, address: string): Reservation {
    const t = now();
    dropExpiredLeases(t);
    const state = account === undefined ? undefined : accounts.get(account);
    const times = recent(addresses.get(address), policy.addressWindowMs, t);
    let until = state !== undefined && state.lockedUntil > t ? state.lockedUntil : 0;
    if (times.length >= policy.addressMaxFailures) until = Math.max(until, (times[times.length - policy.addressMaxFailures] ?? t) + policy.addressWindowMs);
    if (until > t) return { ok: false, reason: 'locked', retryAfterSeconds: Math.max(1, Math.ceil((until - t) / 1000)) };
    let forAccount = 0;
    let forAddress = 0;
    for (const lease of leases.values()) {
      if (account !== undefined && lease.account === account) forAccount++;
      if (lease.address === address) forAddress++;
    }
    if (forAccount > 0 && (state?.failures ?? 0) + forAccount >= policy.accountFreeFailures) return { ok: false, reason: 'busy' };
    if (forAddress > 0 && times.length + forAddress >= policy.addressMaxFailures) return { ok: false, reason: 'busy' };
    const id = randomBytes(12).toString('base64url');
    leases.set(id, { account, address, expiresAt: t + policy.leaseMs });
    return { ok: true, id };
  }

  return {
    load: () => queued(catchUp),

    size: () => ({ accounts: accounts.size, addresses: addresses.size, nonces: nonces.size }),

    throttle: {
      reserve: (account, address) => queued(async () => (await catchUp(), reserveNow(account, address))),

      async settle(id, account, address, outcome: Outcome) {
        // The outcome takes the lease's place in memory at once: a waiting attempt must never see
        // the lease gone and the failure not yet counted.
        const at = now();
        leases.delete(id);
        if (outcome === 'fail') {
          applyFailure(account ?? null, address, at);
          await locked(async (wasReset) => {
            if (wasReset) applyFailure(account ?? null, address, at);
            await append([{ f: [account ?? null, address, at] }]);
          });
        } else if (outcome === 'success' && account !== undefined && accounts.delete(account)) {
          // A success only needs writing when there was something to forget.
          await locked(async () => {
            accounts.delete(account);
            await append([{ s: account }]);
          });
        }
      },
    },

    nonces: {
      claim: (nonce, nc, expiresAt) =>
        locked(async () => {
          const t = now();
          for (const [key, n] of nonces) if (n.expiresAt <= t) nonces.delete(key);
          const known = nonces.get(nonce);
          if (known !== undefined && known.nc >= nc) return false;
          nonces.set(nonce, { nc, expiresAt });
          await append([{ n: [nonce, nc, expiresAt] }]);
          return true;
        }),
    },

    issuance: {
      take: (account, max, windowMs) =>
        locked(async () => {
          const t = now();
          const times = recent(issued.get(account), windowMs, t);
          if (times.length >= max) {
            issued.set(account, times);
            return false;
          }
          times.push(t);
          issued.set(account, times);
          await append([{ i: [account, t] }]);
          return true;
        }),
    },
  };
}
