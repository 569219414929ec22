// A journal of lines that several processes append to and read: the one engine under the file
// ledger (`<store>.ledger`) and the users store's replica (`<store>.journal`). It knows how far
// this process has read (the file as last seen and the end of its last whole line), catches up
// with what others appended, appends, and compacts by replacing the file whole (temporary file,
// fsync, rename). What the lines mean, and whether a file is the caller's to read on (the
// replica's generation header), is the caller's. The two users differ in what a torn tail (bytes
// after the last newline) means when they append, so that is a parameter:
// - 'end-line' (the ledger): the tail may be another process's append in progress or a crashed
//   one; the new lines go after a newline that ends it, never glued to it;
// - 'cut' (the replica): the tail is a write that was never acknowledged; it is truncated before
//   the append, and a failed append is truncated away again, so a change the caller was told
//   failed never surfaces on a later load.
// The caller serialises calls and holds the store's lock for appends and compactions.
import { Buffer } from 'node:buffer';
import type { FileHandle } from 'node:fs/promises';
import { writeAll, writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import { openPrivate } from '../../fs/private-files.js';
import { handleId, readAt, statId, statIdSync, sameId, toId, type FileId } from './files.js';

/** What a catch-up found: nothing new, new lines, a replaced file (read from its start), or no file. */
export type CatchUp = 'same' | 'appended' | 'replaced' | 'gone';

export type TornTailPolicy = 'end-line' | 'cut';

export interface LineJournalOptions {
  readonly tornTail: TornTailPolicy;
  /** Told once per torn tail a catch-up leaves behind (how many bytes are ignored). */
  readonly onTorn?: (bytes: number) => void;
  /** Test hooks around an append: before the write, and after it before the fsync. */
  readonly beforeAppend?: () => void | Promise<void>;
  readonly beforeSync?: () => void | Promise<void>;
}

/**
 * Where a catch-up reads from: 'follow', after what was applied (a replaced file from its start);
 * 'start', the whole file; 'onward', after what was applied only: a file replaced or gone is
 * reported and nothing is read or moved, for a caller that reloads more than the journal then.
 */
export type ReadFrom = 'follow' | 'start' | 'onward';

/**
 * Takes the whole lines read (all of the file's when `fromStart`); may throw to leave the cursor
 * as it was. 'ignored': the file is not the caller's to read on (nothing counts as applied).
 */
export type Consume = (lines: Buffer, fromStart: boolean) => void | 'ignored';

const NEWLINE = 0x0a;

export class LineJournal {
  readonly path: string;
  readonly #options: LineJournalOptions;
  /** The file as last seen (undefined: no file) and the end of the last whole line applied. */
  #seen: FileId | undefined;
  #end = 0;
  /** Size right after the last compaction: the next one waits until the file has doubled. */
  #compactedSize = 0;
  /** A failed append could not be undone: what is on disk is unknown until a whole re-read. */
  #lost = false;
  /** The torn tail last reported (inode and where the tail starts). */
  #tornReported: string | undefined;

  constructor(path: string, options: LineJournalOptions) {
    this.path = path;
    this.#options = options;
  }

  get seen(): FileId | undefined {
    return this.#seen;
  }

  /** End of the last whole line applied: bytes after it are a torn (or in-progress) write. */
  get end(): number {
    return this.#end;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /**
   * Whether the file's identity or size differs from what has been applied. Synchronous: one
   * stat of a local file costs microseconds, a third of what the thread-pool round trip costs.
   */
  changed(): boolean {
    let info;
    try {
      info = statIdSync(this.path);
    } catch {
      return true; // let catchUp() meet the error
    }
    if (info === undefined) return this.#seen !== undefined;
    return this.#seen === undefined || info.ino !== this.#seen.ino || info.size !== this.#end;
  }

  /** Whether the file is exactly the one last seen (torn tail included): one stat, no read. */
  unchanged(): boolean {
    return sameId(statIdSync(this.path), this.#seen);
  }

  /**
   * Hands the whole lines appended since the last look to `consume`; a file replaced by a
   * compaction (or shrunk) is read from its start (see `from`). Bytes after the last newline are
   * left for the next look. If `consume` throws, nothing moves.
   */
  async catchUp(consume: Consume, from: ReadFrom = 'follow'): Promise<CatchUp> {
    const whole = from === 'start';
    const info = await statId(this.path);
    if (info === undefined) return from === 'onward' ? (this.#seen === undefined ? 'same' : 'gone') : this.#forget();
    const seen = this.#seen;
    if (!whole && seen !== undefined && info.ino === seen.ino && info.size === this.#end) {
      this.#seen = info;
      return 'same'; // the common case: one stat
    }
    let handle: FileHandle;
    try {
      handle = await openPrivate(this.path, 'r');
    } catch (error) {
      // Removed since the stat: a whole read finds no file; a read onward meets the error.
      if (whole && errorCode(error) === 'ENOENT') return this.#forget();
      throw error;
    }
    try {
      // The identity of what was opened, not of what stat() saw: a compaction elsewhere may have
      // renamed a new file into place in between, and its bytes are not the old file's.
      // (openPrivate checked this descriptor is a regular file of ours, U-1: a journal deleted and
      // re-created by someone else can reuse the inode number.)
      const id = toId(await handle.stat({ bigint: true }));
      const replaced = whole || seen === undefined || id.ino !== seen.ino || id.size < this.#end;
      if (replaced && from === 'onward') return 'replaced';
      const start = replaced ? 0 : this.#end;
      const bytes = await readAt(handle, start, id.size);
      const lines = bytes.subarray(0, bytes.lastIndexOf(NEWLINE) + 1);
      const ignored = consume(lines, replaced) === 'ignored';
      this.#seen = id;
      this.#end = ignored ? 0 : start + lines.length;
      this.#lost = false;
      if (!ignored) this.#reportTorn();
      return replaced ? 'replaced' : 'appended';
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends whole lines, fsynced when `durable`; the caller holds the lock and has caught up.
   * What happens to a torn tail, and to a failed write, is the policy's (see the top).
   */
  async append(text: string, durable: boolean): Promise<void> {
    if (this.#options.tornTail === 'cut') return this.#appendCut(Buffer.from(text, 'utf8'));
    const handle = await openPrivate(this.path, 'a');
    try {
      // Bytes past what was applied, after a catch-up under the lock, are a torn line of a crashed
      // append: end it, or our line would be glued to it and both skipped.
      const body = (await handle.stat()).size > this.#end ? `\n${text}` : text;
      await handle.write(body);
      if (durable) await handle.datasync();
      const info = await handleId(handle);
      this.#seen = info;
      this.#end = info.size;
    } finally {
      await handle.close();
    }
  }

  /** Past `compactBytes`, and twice what the last compaction left (or a large live state would be rewritten on every append). */
  wantsCompaction(compactBytes: number): boolean {
    return this.#end > Math.max(compactBytes, 2 * this.#compactedSize);
  }

  /**
   * Replaces the file with `text` (what still matters), under the lock, so no other process
   * appends before the rename; a fresh 0600 temporary file whatever a crash left behind (U-1).
   */
  async compact(text: string): Promise<void> {
    await writeDurably(this.path, text, { temporary: `${this.path}.tmp` });
    const info = await statId(this.path);
    this.#seen = info;
    this.#end = info?.size ?? 0;
    this.#compactedSize = this.#end;
    this.#lost = false;
  }

  /**
   * 'cut': drops a torn tail, writes at the end of the last whole line and fsyncs. On failure the
   * line is truncated away again; if that (or dropping the tail) fails, `lost` is set. Either way
   * the error is thrown.
   */
  async #appendCut(buffer: Buffer): Promise<void> {
    if (this.#seen !== undefined && this.#seen.size > this.#end) {
      // A torn last line is an unacknowledged write: drop it so the next line starts clean.
      try {
        const handle = await openPrivate(this.path, 'r+');
        try {
          await handle.truncate(this.#end);
          await handle.datasync();
          this.#seen = await handleId(handle);
        } finally {
          await handle.close();
        }
      } catch (error) {
        this.#lost = true;
        throw error;
      }
    }
    const start = this.#end;
    const handle = await openPrivate(this.path, 'r+');
    try {
      try {
        await this.#options.beforeAppend?.();
        await writeAll(handle, buffer, start);
        await this.#options.beforeSync?.();
        await handle.datasync();
      } catch (error) {
        // The caller will be told the change failed, so it must not surface on a later load.
        try {
          await handle.truncate(start);
          await handle.datasync();
        } catch {
          this.#lost = true;
        }
        throw error;
      }
      const info = await handleId(handle).catch(() => undefined);
      if (info === undefined) this.#lost = true;
      else {
        this.#seen = info;
        this.#end = start + buffer.length;
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** There is no file (any more). */
  #forget(): CatchUp {
    const had = this.#seen !== undefined;
    this.#seen = undefined;
    this.#end = 0;
    this.#lost = false;
    return had ? 'gone' : 'same';
  }

  /** One report per torn tail: the same tail seen again by a later catch-up is not reported twice. */
  #reportTorn(): void {
    const seen = this.#seen;
    if (this.#options.onTorn === undefined || seen === undefined) return;
    const bytes = seen.size - this.#end;
    const key = `${seen.ino}:${this.#end}`;
    if (bytes <= 0 || this.#tornReported === key) return;
    this.#tornReported = key;
    this.#options.onTorn(bytes);
  }
}
