// Writes that survive a crash at any instant: a file is replaced (or created) whole or not at all.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { link, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { process } from '../process.js';
import { errorCode } from './errno.js';

const FILE_MODE = 0o600;

export interface DurableWriteOptions {
  /** Mode of the new file. @default 0o600 */
  readonly mode?: number;
  /**
   * The temporary file's name. A caller that holds a lock may fix one (a crash's leftover is then
   * removed first); without one, a fresh unique name beside `path`. @default unique
   */
  readonly temporary?: string;
}

/**
 * Replaces `path` with `data` so that a crash at any instant leaves either the old or the new
 * file: write a temporary file, fsync it, rename it over, fsync the directory (the rename itself
 * lives in the directory).
 */
export async function writeDurably(path: string, data: string | Uint8Array, options: DurableWriteOptions = {}): Promise<void> {
  const temporary = await writeTemporary(path, data, options);
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dirname(path));
}

/**
 * Creates `path` holding `data` unless it exists, never replacing it and never leaving it half
 * written: a synced temporary file hard-linked into place (the link is atomic and fails on an
 * existing file). True when this call created it, false when someone else's was there.
 */
export async function createDurably(path: string, data: string | Uint8Array, options: Omit<DurableWriteOptions, 'temporary'> = {}): Promise<boolean> {
  const temporary = await writeTemporary(path, data, options);
  try {
    await link(temporary, path);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  await syncDirectory(dirname(path)).catch(() => undefined);
  return true;
}

/** A new temporary file beside `path`, holding `data`, synced; its name. */
async function writeTemporary(path: string, data: string | Uint8Array, options: DurableWriteOptions): Promise<string> {
  const temporary = options.temporary ?? `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  if (options.temporary !== undefined) {
    // A temporary file left by a crash may carry a wider mode; start afresh.
    await unlink(temporary).catch((error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
    });
  }
  const handle = await open(temporary, 'wx', options.mode ?? FILE_MODE);
  try {
    await writeAll(handle, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, 0);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await handle.close();
  return temporary;
}

export async function writeAll(handle: FileHandle, buffer: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, done, buffer.length - done, position + done);
    done += bytesWritten;
  }
}

export async function syncDirectory(directory: string): Promise<void> {
  // Windows cannot open a directory for fsync; NTFS journals renames itself.
  if (process.platform === 'win32') return;
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

