// The users store (U-1): a JSON snapshot plus an append-only JSON Lines journal, compacted when
// the journal grows. A change costs one appended line and one fsync whatever the number of users;
// a full rewrite happens only at compaction. Internal on purpose: the format is not public API.
//
// Concurrency: calls on one Store run one at a time (a promise queue), and every disk access
// holds the cross-process lock file, so the server and the CLI can share one store. Before each
// read-modify-write the store catches up with what other processes appended or compacted.
import { computeUserhash } from '../auth/digest-hash.js';
import { ServiceError } from '../errors.js';
import type { JournalOp } from './store-format.js';
import { createFileLedgers, type FileLedgers } from './ledger-file.js';
import type { IssuanceLedger, NonceLedger, ThrottleLedger } from './ledgers.js';
import { openStorePath } from './store-path.js';
import { acquireLock, sweepLockLeftovers, type LockOptions } from './store-lock.js';
import { resolveStoreOptions, type StoreConfig, type StoreHooks, type StoreOptions } from './store-options.js';
import { checkRecord, type UserRecord } from './store-record.js';
import { Replica } from './store-replica.js';
import { isPostgresUrl } from './postgres/postgres-options.js';

export type { ResetTokenRecord, UserRecord } from './store-record.js';
export type { StoreHooks, StoreOptions } from './store-options.js';

/** What an update function decides: `next` undefined writes nothing, null deletes the user. */
export interface UpdateDecision<T> {
  readonly next: UserRecord | null | undefined;
  readonly result: T;
}

/** What an update function may know besides the user, as of the same atomic moment. */
export interface UpdateView {
  /** The number of admins; counted only when the update asked for it (0 otherwise). */
  readonly admins: number;
}

export interface UpdateOptions {
  /** Count the admins for the view (R-5, R-6: the last admin is protected). */
  readonly countAdmins?: boolean;
  /**
   * The record comes from another store (`store copy`): its name is checked as loading checks it
   * (a non-empty string), not as a new name is, so a name that older rules allowed moves too.
   */
  readonly verbatim?: boolean;
}

export interface Page {
  readonly users: readonly UserRecord[];
  /** True when users after the last one exist. */
  readonly more: boolean;
}

/**
 * Where users and the state that decides a login live. Two implementations: the JSON file (the
 * default, this file) and PostgreSQL (postgres/). Reads are fresh: a change made by another
 * process sharing the store is seen by the next read (S-2, S-3).
 */
export interface Store {
  get(name: string): Promise<UserRecord | undefined>;
  /** Users sorted by name (UTF-16 code unit order), those after `after`, at most `limit`. */
  page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<Page>;
  /** Every user, sorted as page(). */
  list(): Promise<UserRecord[]>;
  count(): Promise<number>;
  /** RFC 7616 §3.4.4 userhash: the user whose H(name ":" realm) under `algorithm` is `hash` (hex). */
  findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined>;
  /**
   * Atomic read-modify-write of one user, on the latest committed state. Resolves once the change
   * is durable. `fn` must be synchronous and runs once per call; if it throws, nothing is written
   * and the error propagates. A failed write rejects with ERR_STORE_WRITE (or
   * ERR_STORE_UNAVAILABLE) and changes nothing.
   */
  update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options?: UpdateOptions): Promise<T>;
  /** Readiness (H-3): resolves when the store can serve reads and writes, rejects otherwise. */
  ping(): Promise<void>;
  readonly throttle: ThrottleLedger;
  readonly nonces: NonceLedger;
  readonly issuance: IssuanceLedger;
  /**
   * Waits for queued work (including a compaction) and refuses further updates. `abandon`: the
   * caller has given up on work still running (the service, past its grace): a database store ends
   * the connections such work holds instead of waiting for it.
   */
  close(options?: { readonly abandon?: boolean }): Promise<void>;
}

/**
 * Opens the store at `path`, creating an empty one if neither it nor its journal exists; a
 * postgres:// (or postgresql://) URL opens the PostgreSQL store instead (S-1), which needs the
 * optional package `pg`.
 */
export async function openStore(path: string, options: StoreOptions = {}): Promise<Store> {
  if (typeof path === 'string' && isPostgresUrl(path)) {
    const { openPostgresStore } = await import('./postgres/postgres-store.js');
    const { onWarning } = options.hooks ?? {};
    return openPostgresStore(path, {
      ...options.postgres,
      ...(options.throttle === undefined ? {} : { throttle: options.throttle }),
      ...(onWarning === undefined ? {} : { onBackgroundError: (error: unknown) => onWarning(`store clean-up failed: ${(error as Error).message}`) }),
    });
  }
  const config = resolveStoreOptions(path, options);
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
  readonly #lock: LockOptions;
  readonly #replica: Replica;
  readonly #ledgers: FileLedgers;
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
    this.#lock = { timeoutMs: config.lockTimeoutMs, staleMs: config.staleLockMs, now: config.now };
    this.#replica = new Replica(path, config.hooks);
    this.#ledgers = createFileLedgers({
      path: `${path}.ledger`,
      policy: config.throttle,
      now: config.now,
      exclusive: (task) => this.#exclusive(task),
      ...(config.hooks.onWarning === undefined ? {} : { warn: config.hooks.onWarning }),
    });
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
    await this.#refresh();
    // Rebuilt when the user list changed (sorted() is a new array then): O(1) per look-up.
    const users = this.#replica.sorted();
    let index = this.#userhashes.get(realm);
    if (index?.users !== users) {
      const map = new Map<string, string>();
      for (const { name } of users) {
        map.set(`SHA-256:${computeUserhash('SHA-256', name, realm)}`, name);
        map.set(`MD5:${computeUserhash('MD5', name, realm)}`, name);
      }
      index = { users, map };
      this.#userhashes.clear();
      this.#userhashes.set(realm, index);
    }
    return index.map.get(`${algorithm}:${hash.toLowerCase()}`);
  }

  async ping(): Promise<void> {
    this.#assertOpen();
    // The lock taken and the files read: what every write needs.
    await this.#exclusive(() => this.#replica.sync());
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
  const checked = checkRecord(next, names);
  if (!checked.ok) throw new ServiceError(checked.nameProblem ? 'ERR_INVALID_NAME' : 'ERR_INVALID_OPTION', `update(${JSON.stringify(name)}): ${checked.problem}`);
  if (checked.record.name !== name) {
    throw new ServiceError('ERR_INVALID_OPTION', `update(${JSON.stringify(name)}) returned a record named ${JSON.stringify(checked.record.name)}`);
  }
  return { op: 'put', user: checked.record };
}
