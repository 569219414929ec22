// A journal of JSON lines that several processes append to and read: the engine under the file
// ledger (`<store>.ledger`). It knows how far this process has read (the file's inode and the
// bytes applied), catches up with what others appended, appends after a torn line without gluing
// to it, and compacts by replacing the file whole (temporary file, fsync, rename). What the lines
// mean is the caller's (ledger-lines.ts). The caller serialises calls and holds the store's lock
// for appends and compactions.
import { statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import { assertOwner } from '../../fs/private-files.js';

/** What a catch-up found: nothing new, new lines, a replaced file (read from its start), or no file. */
export type CatchUp = 'same' | 'appended' | 'replaced' | 'gone';

export class LineJournal {
  readonly path: string;
  /** What of the file has been applied: its identity and how many bytes. */
  #ino = -1;
  #offset = 0;
  /** Size right after the last compaction: the next one waits until the file has doubled. */
  #compactedSize = 0;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Whether the file differs from what has been applied. Synchronous: one stat of a local file
   * costs microseconds, a third of what the thread-pool round trip of an asynchronous one costs.
   */
  changed(): boolean {
    let info;
    try {
      info = statSync(this.path, { throwIfNoEntry: false });
    } catch {
      return true; // let catchUp() meet the error
    }
    if (info === undefined) return this.#ino !== -1;
    return info.ino !== this.#ino || info.size !== this.#offset;
  }

  /**
   * Hands every whole line appended since the last look to `line`, in order; a file replaced by a
   * compaction (or shrunk) calls `replaced` first and is read from its start. Bytes after the
   * last newline are another process's append in progress: left for the next look.
   */
  async catchUp(read: { readonly replaced: () => void; readonly line: (text: string) => void }): Promise<CatchUp> {
    if (!this.changed()) return 'same';
    let info = await stat(this.path).catch((error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
      return undefined;
    });
    if (info === undefined) {
      const had = this.#ino !== -1;
      this.#ino = -1;
      this.#offset = 0;
      return had ? 'gone' : 'same';
    }
    if (info.ino === this.#ino && info.size === this.#offset) return 'same'; // the common case: one stat
    const handle = await open(this.path, 'r');
    try {
      // The identity of what was opened, not of what stat() saw: a compaction elsewhere may have
      // renamed a new file into place in between, and its bytes are not the old file's.
      info = await handle.stat();
      // U-1: a file that appeared after open in a shared directory may be another user's.
      assertOwner(info, this.path);
      const replaced = info.ino !== this.#ino || info.size < this.#offset;
      if (replaced) {
        read.replaced();
        this.#offset = 0;
        this.#ino = info.ino;
      }
      const length = info.size - this.#offset;
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      const end = text.lastIndexOf('\n');
      if (end >= 0) {
        for (const line of text.slice(0, end).split('\n')) if (line !== '') read.line(line);
        this.#offset += Buffer.byteLength(text.slice(0, end + 1));
      }
      return replaced ? 'replaced' : 'appended';
    } finally {
      await handle.close();
    }
  }

  /** Appends `text` (whole lines), fsynced when `durable`; the caller holds the lock and has caught up. */
  async append(text: string, durable: boolean): Promise<void> {
    const handle = await open(this.path, 'a', 0o600);
    try {
      // Bytes past what was applied, after a catch-up under the lock, are a torn line of a crashed
      // append: end it, or our line would be glued to it and both skipped.
      const body = (await handle.stat()).size > this.#offset ? `\n${text}` : text;
      await handle.write(body);
      if (durable) await handle.datasync();
      const info = await handle.stat();
      this.#ino = info.ino;
      this.#offset = info.size;
    } finally {
      await handle.close();
    }
  }

  /** Past `compactBytes`, and twice what the last compaction left (or a large live state would be rewritten on every append). */
  wantsCompaction(compactBytes: number): boolean {
    return this.#offset > Math.max(compactBytes, 2 * this.#compactedSize);
  }

  /**
   * Replaces the file with `text` (what still matters), under the lock, so no other process
   * appends before the rename; a fresh 0600 temporary file whatever a crash left behind (U-1).
   */
  async compact(text: string): Promise<void> {
    await writeDurably(this.path, text, { temporary: `${this.path}.tmp` });
    const info = await stat(this.path);
    this.#ino = info.ino;
    this.#offset = info.size;
    this.#compactedSize = info.size;
  }
}
