// The users store (U-1): a JSON snapshot plus an append-only JSON Lines journal, compacted when
// the journal grows. A change costs one appended line and one fsync whatever the number of users;
// a full rewrite happens only at compaction. Internal on purpose: the format is not public API.
//
// Concurrency: calls on one Store run one at a time (a promise queue), and every disk access
// holds the cross-process lock file, so the server and the CLI can share one store. Before each
// read-modify-write the store catches up with what other processes appended or compacted.
import { ServiceError } from '../errors.js';
import type { JournalOp } from './store-format.js';
import { openStorePath } from './store-path.js';
import { acquireLock, sweepLockLeftovers, type LockOptions } from './store-lock.js';
import { resolveStoreOptions, type StoreHooks, type StoreOptions } from './store-options.js';
import { checkRecord, type UserRecord } from './store-record.js';
import { Replica } from './store-replica.js';

export type { ResetTokenRecord, UserRecord } from './store-record.js';
export type { StoreHooks, StoreOptions } from './store-options.js';

/** What an update function decides: `next` undefined writes nothing, null deletes the user. */
export interface UpdateDecision<T> {
  readonly next: UserRecord | null | undefined;
  readonly result: T;
}

export interface Store {
  /** The user as of the last refresh or write, from memory. */
  get(name: string): UserRecord | undefined;
  /** All users, sorted by name (UTF-16 code unit order). */
  list(): UserRecord[];
  readonly size: number;
  /** Picks up other processes' writes; one stat() when nothing changed. */
  refresh(): Promise<void>;
  /**
   * Atomic read-modify-write of one user, after catching up with the disk, under the in-process
   * queue and the cross-process lock. Resolves once the change is durable. `fn` must be
   * synchronous (hash passwords before calling); if it throws, nothing is written and the error
   * propagates. A failed write rejects with ERR_STORE_WRITE and changes nothing in memory.
   */
  update<T>(name: string, fn: (current: UserRecord | undefined) => UpdateDecision<T>): Promise<T>;
  /** Waits for queued work (including a compaction) and refuses further updates. */
  close(): Promise<void>;
}

/** Opens the store at `path`, creating an empty one if neither it nor its journal exists. */
export async function openStore(path: string, options: StoreOptions = {}): Promise<Store> {
  const config = resolveStoreOptions(path, options);
  // U-1: one real path (symbolic links resolved once), and files no other user can plant or read.
  const absolute = await openStorePath(path, { warn: config.hooks.onWarning });
  const store = new FileStore(absolute, config.compactBytes, config.hooks, { timeoutMs: config.lockTimeoutMs, staleMs: config.staleLockMs, now: config.now });
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
  #tail: Promise<unknown> = Promise.resolve();
  #pendingRefresh: Promise<void> | undefined;
  #compactQueued = false;
  #closed = false;

  constructor(path: string, compactBytes: number, hooks: StoreHooks, lock: LockOptions) {
    this.#path = path;
    this.#lockPath = `${path}.lock`;
    this.#compactBytes = compactBytes;
    this.#hooks = hooks;
    this.#lock = lock;
    this.#replica = new Replica(path, hooks);
  }

  get size(): number {
    return this.#replica.users.size;
  }

  get(name: string): UserRecord | undefined {
    return this.#replica.users.get(name);
  }

  list(): UserRecord[] {
    return [...this.#replica.sorted()];
  }

  async init(): Promise<void> {
    await this.#exclusive(async () => {
      await sweepLockLeftovers(this.#lockPath);
      await this.#replica.open();
    });
  }

  async refresh(): Promise<void> {
    this.#assertOpen();
    if (await this.#replica.unchanged()) return;
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

  async update<T>(name: string, fn: (current: UserRecord | undefined) => UpdateDecision<T>): Promise<T> {
    this.#assertOpen();
    if (typeof name !== 'string') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a user name string');
    if (typeof fn !== 'function') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a function');
    const { result, compact } = await this.#exclusive(async () => {
      await this.#replica.sync();
      const current = this.#replica.users.get(name);
      const { next, result } = fn(current);
      const op = toOp(name, current, next);
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
    let tail: Promise<unknown>;
    do {
      tail = this.#tail;
      await tail;
    } while (tail !== this.#tail);
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

function toOp(name: string, current: UserRecord | undefined, next: UserRecord | null | undefined): JournalOp | undefined {
  if (next === undefined) return undefined;
  if (next === null) return current === undefined ? undefined : { op: 'delete', name };
  const checked = checkRecord(next, 'policy');
  if (!checked.ok) throw new ServiceError(checked.nameProblem ? 'ERR_INVALID_NAME' : 'ERR_INVALID_OPTION', `update(${JSON.stringify(name)}): ${checked.problem}`);
  if (checked.record.name !== name) {
    throw new ServiceError('ERR_INVALID_OPTION', `update(${JSON.stringify(name)}) returned a record named ${JSON.stringify(checked.record.name)}`);
  }
  return { op: 'put', user: checked.record };
}
