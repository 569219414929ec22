// The in-memory copy of the users store and the disk operations that keep it in step with the
// files. Every method except `unchanged()` expects the caller (store.ts) to hold the lock.
import { open } from 'node:fs/promises';
import { writeAll, writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import type { StoreHooks } from '../options.js';
import type { UserRecord } from '../store.js';
import { handleId, readRange, readWhole, sameId, statId, statIdSync, type FileId } from './files.js';
import { applyOps, corrupt, journalHeader, journalLine, parseJournal, parseSnapshot, snapshotText, type JournalOp } from './format.js';

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

export class Replica {
  readonly #path: string;
  readonly #journalPath: string;
  readonly #hooks: StoreHooks;
  #users = new Map<string, UserRecord>();
  #sorted: readonly UserRecord[] | undefined;
  /** undefined: memory may disagree with the disk; the next sync reloads everything. */
  #view: View | undefined;
  /** The torn tail last warned about (journal inode and where the tail starts). */
  #tornReported: string | undefined;

  constructor(path: string, hooks: StoreHooks) {
    this.#path = path;
    this.#journalPath = `${path}.journal`;
    this.#hooks = hooks;
  }

  get users(): ReadonlyMap<string, UserRecord> {
    return this.#users;
  }

  /** All users sorted by name (UTF-16 code unit order), cached until the next change. */
  sorted(): readonly UserRecord[] {
    this.#sorted ??= [...this.#users.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this.#sorted;
  }

  /** Bytes in the journal, as far as we know. */
  get journalBytes(): number {
    return this.#view?.validEnd ?? 0;
  }

  /**
   * True when nothing can have changed since we last looked: one stat of the journal, no lock.
   * Every write appends to it or replaces it, so its identity moves with any change.
   */
  unchanged(): boolean {
    const view = this.#view;
    return view !== undefined && sameId(statIdSync(this.#journalPath), view.journal);
  }

  /**
   * Readiness (H-3) without the writers' lock and without touching this replica: the files are
   * the ones already loaded and can still be read, or else what is there now parses. Only reads:
   * a compaction replaces files by rename and a torn last line is not an error, so no lock is
   * needed to see a consistent state.
   */
  async check(): Promise<void> {
    if (this.unchanged()) {
      await Promise.all([readable(this.#path), readable(this.#journalPath)]);
      return;
    }
    const [snapshot, journal] = await Promise.all([readWhole(this.#path), readWhole(this.#journalPath)]);
    if (snapshot !== undefined) parseSnapshot(snapshot.bytes, this.#path);
    if (journal !== undefined) parseJournal(journal.bytes, this.#journalPath, 1, true);
  }

  /** Creates an empty store when neither file exists, and loads (modes and owners were checked at open). */
  async open(): Promise<void> {
    if ((await statId(this.#path)) === undefined && (await statId(this.#journalPath)) === undefined) {
      await writeDurably(this.#path, snapshotText(0, []), { temporary: `${this.#path}.tmp` });
      await writeDurably(this.#journalPath, journalHeader(0), { temporary: `${this.#journalPath}.tmp` });
    }
    await this.#load();
  }

  /** Brings memory up to date with what other processes appended or compacted. */
  async sync(): Promise<void> {
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
    this.#apply(entries.ops);
    this.#view = { ...view, journal, validEnd: view.validEnd + entries.consumed, lines: view.lines + entries.lines };
    this.#reportTorn(journal, view.validEnd + entries.consumed);
  }

  /** Appends one change, fsyncs it, then applies it in memory. On failure neither changes. */
  async commit(op: JournalOp): Promise<void> {
    const view = await this.#prepareJournal();
    const buffer = Buffer.from(journalLine(op), 'utf8');
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
    this.#apply([op]);
  }

  /** Folds the journal into a new snapshot generation when it is larger than `threshold`. */
  async compact(threshold: number): Promise<void> {
    await this.sync();
    const view = this.#view;
    if (view === undefined || view.validEnd <= threshold) return;
    const generation = view.generation + 1;
    const header = journalHeader(generation);
    try {
      await this.#hooks.beforeCompact?.();
      // Snapshot first: until the journal is replaced too, its older generation marks it as
      // already folded in, so a crash between the two steps loses nothing.
      await writeDurably(this.#path, snapshotText(generation, this.sorted()), { temporary: `${this.#path}.tmp` });
      await writeDurably(this.#journalPath, header, { temporary: `${this.#journalPath}.tmp` });
      const snapshot = await statId(this.#path);
      const journal = await statId(this.#journalPath);
      this.#view =
        snapshot === undefined ? undefined : { snapshot, generation, journal, journalUsable: true, validEnd: Buffer.byteLength(header), lines: 1 };
    } catch (error) {
      this.#view = undefined;
      throw error;
    }
  }

  /**
   * One warning per torn tail (a line whose append was never acknowledged, as after a crash
   * mid-write): it is ignored now and cut off before the next append, and an operator should
   * know that bytes were dropped. The same tail seen again by a later sync is not reported twice.
   */
  #reportTorn(journal: FileId, validEnd: number): void {
    const bytes = journal.size - validEnd;
    const key = `${journal.ino}:${validEnd}`;
    if (bytes <= 0 || this.#tornReported === key) return;
    this.#tornReported = key;
    this.#hooks.onWarning?.(
      `the users store journal ${this.#journalPath} ends with a torn line: ${bytes} bytes of a write that was never acknowledged ` +
        '(a crash or a full disk mid-append) are ignored and will be dropped at the next change',
      { file: this.#journalPath, bytes },
    );
  }

  #apply(ops: readonly JournalOp[]): void {
    if (ops.length === 0) return;
    applyOps(this.#users, ops);
    this.#sorted = undefined;
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
      if (entries.generation === generation || entries.lines === 0) this.#reportTorn(journal.id, entries.consumed);
    }
    this.#users = users;
    this.#sorted = undefined;
    this.#view = view;
  }

  /** Makes the journal ready for an append: a fresh one if unusable, no torn tail otherwise. */
  async #prepareJournal(): Promise<View> {
    let view = this.#view;
    if (view === undefined) throw new Error('the store state is unknown; sync() first');
    try {
      if (!view.journalUsable || view.journal === undefined) {
        const header = journalHeader(view.generation);
        await writeDurably(this.#journalPath, header, { temporary: `${this.#journalPath}.tmp` });
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
}

/** Opens `path` for reading and closes it: the permission and the directory are still there. */
async function readable(path: string): Promise<void> {
  const handle = await open(path, 'r').catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  });
  await handle?.close();
}
