// The in-memory copy of the users store and the disk operations that keep it in step with the
// files (the journal through the engine the ledger uses too, line-journal.ts). Every method
// except `unchanged()` and `check()` expects the caller (store.ts) to hold the lock.
import { open } from 'node:fs/promises';
import { writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import type { StoreHooks } from '../options.js';
import type { UserRecord } from '../store.js';
import { readWhole, sameId, statId, type FileId } from './files.js';
import { LineJournal } from './line-journal.js';
import { applyOps, corrupt, journalHeader, journalLine, parseJournal, parseSnapshot, snapshotText, type JournalOp } from './format.js';

/** How far this process has read the files, besides the journal's own cursor (line-journal.ts). */
interface View {
  readonly snapshot: FileId;
  readonly generation: number;
  /** The journal has a header naming our snapshot's generation, so appends may go there. */
  readonly journalUsable: boolean;
  /** Whole journal lines read (for the line numbers of errors). */
  readonly lines: number;
}

export class Replica {
  readonly #path: string;
  readonly #journalPath: string;
  readonly #hooks: StoreHooks;
  /** The journal engine: a torn tail is cut before an append and a failed append is cut away. */
  readonly #journal: LineJournal;
  #users = new Map<string, UserRecord>();
  #sorted: readonly UserRecord[] | undefined;
  /** undefined: memory may disagree with the disk; the next sync reloads everything. */
  #view: View | undefined;

  constructor(path: string, hooks: StoreHooks) {
    this.#path = path;
    this.#journalPath = `${path}.journal`;
    this.#hooks = hooks;
    const journalPath = this.#journalPath;
    this.#journal = new LineJournal(journalPath, {
      tornTail: 'cut',
      // One warning per torn tail (a line whose append was never acknowledged, as after a crash
      // mid-write): it is ignored now and cut off before the next append, and an operator should
      // know that bytes were dropped.
      onTorn: (bytes) =>
        hooks.onWarning?.(
          `the users store journal ${journalPath} ends with a torn line: ${bytes} bytes of a write that was never acknowledged ` +
            '(a crash or a full disk mid-append) are ignored and will be dropped at the next change',
          { file: journalPath, bytes },
        ),
      ...(hooks.beforeAppend === undefined ? {} : { beforeAppend: hooks.beforeAppend }),
      ...(hooks.beforeSync === undefined ? {} : { beforeSync: hooks.beforeSync }),
    });
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
    return this.#view === undefined ? 0 : this.#journal.end;
  }

  /**
   * True when nothing can have changed since we last looked: one stat of the journal, no lock.
   * Every write appends to it or replaces it, so its identity moves with any change.
   */
  unchanged(): boolean {
    return this.#view !== undefined && this.#journal.unchanged();
  }

  /**
   * Readiness (H-3) without the writers' lock and without touching this replica: the files are
   * the ones already loaded and can still be read, or else what is there now parses. Only reads:
   * a compaction replaces files by rename and a torn last line is not an error, so no lock is
   * needed to see a consistent state.
   */
  async check(): Promise<void> {
    if (this.unchanged()) {
      await Promise.all([readable(this.#path, true), readable(this.#journalPath, false)]);
      return;
    }
    const [snapshot, journal] = await Promise.all([readWhole(this.#path), readWhole(this.#journalPath)]);
    // A store without its snapshot (its directory moved away, the file deleted) cannot be loaded: as #load says.
    if (snapshot === undefined) throw corrupt(this.#path, journal === undefined ? 'the file has disappeared' : `the file is missing but its journal ${this.#journalPath} exists`);
    parseSnapshot(snapshot.bytes, this.#path);
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
    if (!view.journalUsable) return this.#journal.unchanged() ? undefined : this.#load();
    // Lines appended by others (or a torn tail, re-read in case it has been completed); a journal
    // replaced or gone is read again with its snapshot.
    let ops: readonly JournalOp[] = [];
    let lines = 0;
    const found = await this.#journal.catchUp((bytes) => {
      const entries = parseJournal(bytes, this.#journalPath, view.lines + 1, false);
      ops = entries.ops;
      lines = entries.lines;
    }, 'onward');
    if (found === 'replaced' || found === 'gone') return this.#load();
    this.#apply(ops);
    this.#view = { ...view, lines: view.lines + lines };
  }

  /** Appends one change, fsyncs it, then applies it in memory. On failure neither changes. */
  async commit(op: JournalOp): Promise<void> {
    const view = await this.#prepareJournal();
    try {
      await this.#journal.append(journalLine(op), true);
    } catch (error) {
      if (this.#journal.lost) this.#view = undefined;
      throw error;
    }
    this.#view = this.#journal.lost ? undefined : { ...view, lines: view.lines + 1 };
    this.#apply([op]);
  }

  /** Folds the journal into a new snapshot generation when it is larger than `threshold`. */
  async compact(threshold: number): Promise<void> {
    await this.sync();
    const view = this.#view;
    if (view === undefined || this.#journal.end <= threshold) return;
    const generation = view.generation + 1;
    try {
      await this.#hooks.beforeCompact?.();
      // Snapshot first: until the journal is replaced too, its older generation marks it as
      // already folded in, so a crash between the two steps loses nothing.
      await writeDurably(this.#path, snapshotText(generation, this.sorted()), { temporary: `${this.#path}.tmp` });
      await this.#journal.compact(journalHeader(generation));
      const snapshot = await statId(this.#path);
      this.#view = snapshot === undefined ? undefined : { snapshot, generation, journalUsable: true, lines: 1 };
    } catch (error) {
      this.#view = undefined;
      throw error;
    }
  }

  #apply(ops: readonly JournalOp[]): void {
    if (ops.length === 0) return;
    applyOps(this.#users, ops);
    this.#sorted = undefined;
  }

  /** Reads snapshot and journal from scratch; memory changes only if both are sound. */
  async #load(): Promise<void> {
    const snapshot = await readWhole(this.#path);
    if (snapshot === undefined) {
      const journal = await statId(this.#journalPath);
      throw corrupt(this.#path, journal === undefined ? 'the file has disappeared' : `the file is missing but its journal ${this.#journalPath} exists`);
    }
    const { generation, users } = parseSnapshot(snapshot.bytes, this.#path);
    let view: View = { snapshot: snapshot.id, generation, journalUsable: false, lines: 0 };
    await this.#journal.catchUp((bytes) => {
      const entries = parseJournal(bytes, this.#journalPath, 1, true);
      if (entries.generation !== undefined && entries.generation > generation) {
        throw corrupt(this.#journalPath, `its generation ${entries.generation} is newer than the snapshot's (${generation})`);
      }
      // An older generation was folded into the snapshot by a compaction that died before
      // replacing the journal; no header at all is a journal whose creation was torn. Either is
      // replaced before the next append (and only the second's torn bytes are reported).
      if (entries.generation === generation) {
        applyOps(users, entries.ops);
        view = { ...view, journalUsable: true, lines: entries.lines };
        return undefined;
      }
      return entries.lines === 0 ? undefined : 'ignored';
    }, 'start');
    this.#users = users;
    this.#sorted = undefined;
    this.#view = view;
  }

  /** Makes the journal ready for an append: a fresh one (with our generation's header) if unusable. */
  async #prepareJournal(): Promise<View> {
    let view = this.#view;
    if (view === undefined) throw new Error('the store state is unknown; sync() first');
    if (view.journalUsable && this.#journal.seen !== undefined) return view;
    try {
      await this.#journal.compact(journalHeader(view.generation));
      view = { ...view, journalUsable: true, lines: 1 };
    } catch (error) {
      this.#view = undefined;
      throw error;
    }
    this.#view = view;
    return view;
  }
}

/** Opens `path` for reading and closes it: the permission and the directory are still there (and the file, when `needed`). */
async function readable(path: string, needed: boolean): Promise<void> {
  const handle = await open(path, 'r').catch((error: unknown) => {
    if (errorCode(error) !== 'ENOENT') throw error;
    if (needed) throw corrupt(path, 'the file has disappeared');
    return undefined;
  });
  await handle?.close();
}
