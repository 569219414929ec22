// The users store (U-1): a JSON snapshot plus an append-only JSON Lines journal, compacted when
// the journal grows. A change costs one appended line and one fsync whatever the number of users;
// a full rewrite happens only at compaction. Internal on purpose: the format is not public API.
//
// Concurrency: calls on one Store run one at a time (a promise queue), and every disk access
// holds the cross-process lock file, so the server and the CLI can share one store. Before each
// read-modify-write the store catches up with what other processes appended or compacted.
import { mkdir, open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { ServiceError } from '../errors.js';
import { handleId, readRange, readWhole, sameId, statId, tightenMode, writeAll, writeDurably, type FileId } from './store-files.js';
import { applyOps, corrupt, journalHeader, journalLine, parseJournal, parseSnapshot, snapshotText, type JournalOp } from './store-format.js';
import { acquireLock, type LockOptions } from './store-lock.js';
import { checkRecord, type UserRecord } from './store-record.js';
import { resolveStoreOptions, type StoreHooks, type StoreOptions } from './store-options.js';

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
  const absolute = resolve(path);
  try {
    await mkdir(dirname(absolute), { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ServiceError('ERR_STORE_WRITE', `cannot create the directory of the users store ${absolute}: ${(error as Error).message}`, { cause: error });
  }
  const store = new FileStore(absolute, config.compactBytes, config.hooks, { timeoutMs: config.lockTimeoutMs, staleMs: config.staleLockMs, now: config.now });
  await store.init();
  return store;
}

/** How far this process has read the files; replaced as a whole on every change. */
interface View {
  readonly snapshot: FileId;
  readonly generation: number;
  /** undefined when there is no journal file. */
  readonly journal: FileId | undefined;
  /** The journal has a header naming our snapshot's generation, so appends may go there. */
  readonly journalUsable: boolean;
  /** End of the last complete journal line read; bytes after it are a torn write. */
  readonly validEnd: number;
  readonly lines: number;
}

class FileStore implements Store {
  readonly #path: string;
  readonly #journalPath: string;
  readonly #lockPath: string;
  readonly #compactBytes: number;
  readonly #hooks: StoreHooks;
  readonly #lock: LockOptions;
  #users = new Map<string, UserRecord>();
  #sorted: readonly UserRecord[] | undefined;
  /** undefined: memory may disagree with the disk; the next sync reloads everything. */
  #view: View | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #pendingRefresh: Promise<void> | undefined;
  #compactQueued = false;
  #closed = false;

  constructor(path: string, compactBytes: number, hooks: StoreHooks, lock: LockOptions) {
    this.#path = path;
    this.#journalPath = `${path}.journal`;
    this.#lockPath = `${path}.lock`;
    this.#compactBytes = compactBytes;
    this.#hooks = hooks;
    this.#lock = lock;
  }

  get size(): number {
    return this.#users.size;
  }

  get(name: string): UserRecord | undefined {
    return this.#users.get(name);
  }

  list(): UserRecord[] {
    return [...this.#sortedUsers()];
  }

  async init(): Promise<void> {
    await this.#exclusive(async () => {
      if ((await statId(this.#path)) === undefined && (await statId(this.#journalPath)) === undefined) {
        await writeDurably(this.#path, snapshotText(0, []));
        await writeDurably(this.#journalPath, journalHeader(0));
      }
      await tightenMode(this.#path);
      await tightenMode(this.#journalPath);
      await this.#load();
    });
  }

  async refresh(): Promise<void> {
    this.#assertOpen();
    const view = this.#view;
    if (view !== undefined && sameId(await statId(this.#journalPath), view.journal)) return;
    // Concurrent callers share one queued catch-up; one that arrives after it started queues anew.
    if (this.#pendingRefresh === undefined) {
      const pending: Promise<void> = this.#exclusive(async () => {
        if (this.#pendingRefresh === pending) this.#pendingRefresh = undefined;
        await this.#sync();
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
      await this.#sync();
      const current = this.#users.get(name);
      const { next, result } = fn(current);
      const op = toOp(name, current, next);
      if (op === undefined) return { result, compact: false };
      try {
        await this.#append(journalLine(op));
      } catch (error) {
        throw new ServiceError('ERR_STORE_WRITE', `could not write to the users store ${this.#journalPath}: ${(error as Error).message}`, { cause: error });
      }
      applyOps(this.#users, [op]);
      this.#sorted = undefined;
      return { result, compact: (this.#view?.validEnd ?? 0) > this.#compactBytes };
    });
    // Compaction runs after the caller has its answer; its cost is not theirs to wait for.
    if (compact && !this.#compactQueued) {
      this.#compactQueued = true;
      this.#exclusive(() => this.#compact()).catch((error: unknown) => this.#hooks.onCompactError?.(error));
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

  #sortedUsers(): readonly UserRecord[] {
    this.#sorted ??= [...this.#users.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this.#sorted;
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

  /** Reads snapshot and journal from scratch; memory changes only if both are sound. */
  async #load(): Promise<void> {
    const snapshot = await readWhole(this.#path);
    const journal = await readWhole(this.#journalPath);
    if (snapshot === undefined) {
      throw corrupt(this.#path, journal === undefined ? 'the file has disappeared' : `the file is missing but its journal ${this.#journalPath} exists`);
    }
    const { generation, users } = parseSnapshot(snapshot.bytes, this.#path);
    let view: View = { snapshot: snapshot.id, generation, journal: journal?.id, journalUsable: false, validEnd: 0, lines: 0 };
    if (journal !== undefined) {
      const entries = parseJournal(journal.bytes, this.#journalPath, 1, true);
      if (entries.generation !== undefined && entries.generation > generation) {
        throw corrupt(this.#journalPath, `its generation ${entries.generation} is newer than the snapshot's (${generation})`);
      }
      // An older generation was folded into the snapshot by a compaction that died before
      // replacing the journal; no header at all is a journal whose creation was torn. Either is
      // replaced before the next append.
      if (entries.generation === generation) {
        applyOps(users, entries.ops);
        view = { ...view, journalUsable: true, validEnd: entries.consumed, lines: entries.lines };
      }
    }
    this.#users = users;
    this.#sorted = undefined;
    this.#view = view;
  }

  /** Brings memory up to date with the disk (lock held). */
  async #sync(): Promise<void> {
    const view = this.#view;
    if (view === undefined || !sameId(await statId(this.#path), view.snapshot)) return this.#load();
    const journal = await statId(this.#journalPath);
    if (journal === undefined || view.journal === undefined) return journal === view.journal ? undefined : this.#load();
    if (journal.ino !== view.journal.ino || journal.size < view.validEnd) return this.#load();
    if (sameId(journal, view.journal) && (journal.size === view.validEnd || !view.journalUsable)) return;
    if (!view.journalUsable) return this.#load();
    // Lines appended by others (or a torn tail, re-read in case it has been completed).
    const bytes = await readRange(this.#journalPath, view.validEnd, journal.size);
    const entries = parseJournal(bytes, this.#journalPath, view.lines + 1, false);
    applyOps(this.#users, entries.ops);
    if (entries.ops.length > 0) this.#sorted = undefined;
    this.#view = { ...view, journal, validEnd: view.validEnd + entries.consumed, lines: view.lines + entries.lines };
  }

  /** Appends one line and fsyncs it; on failure, takes back whatever reached the file. */
  async #append(line: string): Promise<void> {
    const view = await this.#prepareJournal();
    const buffer = Buffer.from(line, 'utf8');
    const handle = await open(this.#journalPath, 'r+');
    try {
      try {
        await this.#hooks.beforeAppend?.();
        await writeAll(handle, buffer, view.validEnd);
        await this.#hooks.beforeSync?.();
        await handle.datasync();
      } catch (error) {
        // The caller will be told the change failed, so it must not surface on a later load.
        try {
          await handle.truncate(view.validEnd);
          await handle.datasync();
        } catch {
          this.#view = undefined;
        }
        throw error;
      }
      const journal = await handleId(handle).catch(() => undefined);
      this.#view = journal === undefined ? undefined : { ...view, journal, validEnd: view.validEnd + buffer.length, lines: view.lines + 1 };
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** Makes the journal ready for an append: a fresh one if unusable, no torn tail otherwise. */
  async #prepareJournal(): Promise<View> {
    let view = this.#view;
    if (view === undefined) throw new Error('the store state is unknown'); // #sync just ran
    try {
      if (!view.journalUsable || view.journal === undefined) {
        const header = journalHeader(view.generation);
        await writeDurably(this.#journalPath, header);
        const journal = await statId(this.#journalPath);
        view = { ...view, journal, journalUsable: true, validEnd: Buffer.byteLength(header), lines: 1 };
      } else if (view.journal.size > view.validEnd) {
        // A torn last line is an unacknowledged write: drop it so the next line starts clean.
        const handle = await open(this.#journalPath, 'r+');
        try {
          await handle.truncate(view.validEnd);
          await handle.datasync();
          view = { ...view, journal: await handleId(handle) };
        } finally {
          await handle.close();
        }
      }
    } catch (error) {
      this.#view = undefined;
      throw error;
    }
    this.#view = view;
    return view;
  }

  /** Folds the journal into a new snapshot generation (lock held). */
  async #compact(): Promise<void> {
    this.#compactQueued = false;
    await this.#sync();
    const view = this.#view;
    if (view === undefined || view.validEnd <= this.#compactBytes) return;
    const generation = view.generation + 1;
    const header = journalHeader(generation);
    try {
      await this.#hooks.beforeCompact?.();
      // Snapshot first: until the journal is replaced too, its older generation marks it as
      // already folded in, so a crash between the two steps loses nothing.
      await writeDurably(this.#path, snapshotText(generation, this.#sortedUsers()));
      await writeDurably(this.#journalPath, header);
      const snapshot = await statId(this.#path);
      const journal = await statId(this.#journalPath);
      this.#view =
        snapshot === undefined ? undefined : { snapshot, generation, journal, journalUsable: true, validEnd: Buffer.byteLength(header), lines: 1 };
    } catch (error) {
      this.#view = undefined;
      throw error;
    }
  }
}

function toOp(name: string, current: UserRecord | undefined, next: UserRecord | null | undefined): JournalOp | undefined {
  if (next === undefined) return undefined;
  if (next === null) return current === undefined ? undefined : { op: 'delete', name };
  const checked = checkRecord(next);
  if (!checked.ok) throw new ServiceError(checked.nameProblem ? 'ERR_INVALID_NAME' : 'ERR_INVALID_OPTION', `update(${JSON.stringify(name)}): ${checked.problem}`);
  if (checked.record.name !== name) {
    throw new ServiceError('ERR_INVALID_OPTION', `update(${JSON.stringify(name)}) returned a record named ${JSON.stringify(checked.record.name)}`);
  }
  return { op: 'put', user: checked.record };
}
