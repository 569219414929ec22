// The users store (U-1): a JSON snapshot plus an append-only JSON Lines journal, compacted when
// the journal grows. A change costs one appended line and one fsync whatever the number of users;
// a full rewrite happens only at compaction. Internal on purpose: the format is not public API.
//
// Concurrency: calls on one Store run one at a time (a promise queue), and every disk access
// holds the cross-process lock file, so the server and the CLI can share one store. Before each
// read-modify-write the store catches up with what other processes appended or compacted.
import { acquireLock, sweepLockLeftovers, type LockOptions } from '../../fs/lock-file.js';
import { ServiceError } from '../../errors.js';
import type { StoreConfig, StoreHooks } from '../options.js';
import { checkWrite, needUserhash } from '../record.js';
import { reserveThenGet } from '../reserve-then-get.js';
import type { IssuanceLedger, NonceLedger, Page, ReservedRead, SettingsLedger, Store, ThrottleLedger, UpdateDecision, UpdateOptions, UpdateView, UserRecord, Userhash } from '../store.js';
import type { JournalOp } from './format.js';
import { createFileLedgers, type FileLedgers } from './ledger-file.js';
import { openStorePath } from './path.js';
import { Replica } from './replica.js';
import { createServersFile } from './servers-file.js';

/** Opens the store at `path`, creating an empty one if neither it nor its journal exists. */
export async function openFileStore(path: string, config: StoreConfig): Promise<Store> {
  // U-1: one real path (symbolic links resolved once), and files no other user can plant or read.
  const absolute = await openStorePath(path, { warn: config.hooks.onWarning });
  const store = new FileStore(absolute, config);
  await store.init();
  return store;
}

class FileStore implements Store {
  readonly #path: string;
  readonly #lockPath: string;
  readonly #compactBytes: number;
  readonly #hooks: StoreHooks;
  readonly #userhash: Userhash | undefined;
  readonly #lock: LockOptions;
  readonly #replica: Replica;
  readonly #ledgers: FileLedgers;
  readonly #servers: SettingsLedger;
  readonly #userhashes = new Map<string, { readonly users: readonly UserRecord[]; readonly map: ReadonlyMap<string, string> }>();
  #tail: Promise<unknown> = Promise.resolve();
  #pendingRefresh: Promise<void> | undefined;
  #compactQueued = false;
  #closed = false;

  constructor(path: string, config: StoreConfig) {
    this.#path = path;
    this.#lockPath = `${path}.lock`;
    this.#compactBytes = config.compactBytes;
    this.#hooks = config.hooks;
    this.#userhash = config.userhash;
    this.#lock = { timeoutMs: config.lockTimeoutMs, staleMs: config.staleLockMs, now: config.now };
    this.#replica = new Replica(path, config.hooks);
    this.#ledgers = createFileLedgers({
      path: `${path}.ledger`,
      policy: config.throttle,
      now: config.now,
      exclusive: (task) => this.#exclusive(task),
      ...(config.hooks.onWarning === undefined ? {} : { warn: config.hooks.onWarning }),
    });
    this.#servers = createServersFile({ store: path, exclusive: (task) => this.#exclusive(task) });
  }

  get throttle(): ThrottleLedger {
    return this.#ledgers.throttle;
  }

  get nonces(): NonceLedger {
    return this.#ledgers.nonces;
  }

  get issuance(): IssuanceLedger {
    return this.#ledgers.issuance;
  }

  get settings(): SettingsLedger {
    return this.#servers;
  }

  async get(name: string): Promise<UserRecord | undefined> {
    // The common case (nothing changed) stays synchronous: one await fewer per login.
    if (this.#closed || !this.#replica.unchanged()) await this.#refresh();
    return this.#replica.users.get(name);
  }

  async page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<Page> {
    await this.#refresh();
    const sorted = this.#replica.sorted();
    // Binary search for the first name after `after`: a page costs O(log n + limit), no copy of the list.
    let low = 0;
    if (options.after !== undefined) {
      const after = options.after;
      let high = sorted.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if ((sorted[mid] as UserRecord).name <= after) low = mid + 1;
        else high = mid;
      }
    }
    const users = sorted.slice(low, low + options.limit);
    return { users, more: low + options.limit < sorted.length };
  }

  async list(): Promise<UserRecord[]> {
    await this.#refresh();
    return [...this.#replica.sorted()];
  }

  async count(): Promise<number> {
    await this.#refresh();
    return this.#replica.users.size;
  }

  async findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined> {
    const userhash = needUserhash(this.#userhash);
    await this.#refresh();
    // Rebuilt when the user list changed (sorted() is a new array then): O(1) per look-up.
    const users = this.#replica.sorted();
    let index = this.#userhashes.get(realm);
    if (index?.users !== users) {
      const map = new Map<string, string>();
      for (const { name } of users) {
        map.set(`SHA-256:${userhash('SHA-256', name, realm)}`, name);
        map.set(`MD5:${userhash('MD5', name, realm)}`, name);
      }
      index = { users, map };
      this.#userhashes.clear();
      this.#userhashes.set(realm, index);
    }
    return index.map.get(`${algorithm}:${hash.toLowerCase()}`);
  }

  reserveAndGet(account: string, address: string): Promise<ReservedRead> {
    return reserveThenGet(this, account, address);
  }

  async ping(): Promise<void> {
    this.#assertOpen();
    // Never queued behind the writers (issue 19): a flood of probes must not hold a write up,
    // nor a long write make a probe fail. What is on disk is read and parsed, not locked.
    await this.#replica.check();
  }

  async init(): Promise<void> {
    await this.#exclusive(async () => {
      await sweepLockLeftovers(this.#lockPath);
      await this.#replica.open();
    });
    await this.#ledgers.load();
  }

  /** Picks up other processes' writes; one stat() when nothing changed. */
  async #refresh(): Promise<void> {
    this.#assertOpen();
    if (this.#replica.unchanged()) return;
    // Concurrent callers share one queued catch-up; one that arrives after it started queues anew.
    if (this.#pendingRefresh === undefined) {
      const pending: Promise<void> = this.#exclusive(async () => {
        if (this.#pendingRefresh === pending) this.#pendingRefresh = undefined;
        await this.#replica.sync();
      });
      this.#pendingRefresh = pending;
      pending.catch(() => {
        if (this.#pendingRefresh === pending) this.#pendingRefresh = undefined;
      });
    }
    return this.#pendingRefresh;
  }

  async update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options: UpdateOptions = {}): Promise<T> {
    this.#assertOpen();
    if (typeof name !== 'string') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a user name string');
    if (typeof fn !== 'function') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a function');
    const { result, compact } = await this.#exclusive(async () => {
      await this.#replica.sync();
      const current = this.#replica.users.get(name);
      const { next, result } = fn(current, { admins: options.countAdmins === true ? this.#admins() : 0 });
      const op = toOp(name, current, next, options.verbatim === true ? 'shape' : 'policy');
      if (op === undefined) return { result, compact: false };
      try {
        await this.#replica.commit(op);
      } catch (error) {
        throw new ServiceError('ERR_STORE_WRITE', `could not write to the users store ${this.#path}: ${(error as Error).message}`, { cause: error });
      }
      return { result, compact: this.#replica.journalBytes > this.#compactBytes };
    });
    // Compaction runs after the caller has its answer; its cost is not theirs to wait for.
    if (compact && !this.#compactQueued) {
      this.#compactQueued = true;
      this.#exclusive(async () => {
        this.#compactQueued = false;
        await this.#replica.compact(this.#compactBytes);
      }).catch((error: unknown) => this.#hooks.onCompactError?.(error));
    }
    return result;
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Other servers on the store go back to keeping their attempts in memory once they are alone.
    await this.#ledgers.leave().catch((error: unknown) => this.#hooks.onWarning?.(`could not sign off from ${this.#path}.ledger: ${(error as Error).message}`));
    // A server that was not stopped first (its store closed under it) is no longer running either.
    await this.#servers.leave().catch((error: unknown) => this.#hooks.onWarning?.(`could not sign off from ${this.#path}.servers: ${(error as Error).message}`));
    let tail: Promise<unknown>;
    do {
      tail = this.#tail;
      await tail;
    } while (tail !== this.#tail);
  }

  #admins(): number {
    let admins = 0;
    for (const user of this.#replica.users.values()) if (user.role === 'admin') admins++;
    return admins;
  }

  #assertOpen(): void {
    if (this.#closed) throw new ServiceError('ERR_STORE_CLOSED', `the users store ${this.#path} is closed`);
  }

  /** Runs `task` after all queued ones, holding the cross-process lock. */
  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(async () => {
      const lock = await acquireLock(this.#lockPath, this.#lock);
      try {
        return await task();
      } finally {
        await lock.release();
      }
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }
}

function toOp(name: string, current: UserRecord | undefined, next: UserRecord | null | undefined, names: 'policy' | 'shape'): JournalOp | undefined {
  if (next === undefined) return undefined;
  if (next === null) return current === undefined ? undefined : { op: 'delete', name };
  return { op: 'put', user: checkWrite(name, next, names) };
}
