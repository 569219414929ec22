// The file store's reads: a file's identity (to notice another process's write with one stat) and
// its bytes, through one descriptor whose owner is checked (U-1).
import { Buffer } from 'node:buffer';
import { statSync } from 'node:fs';
import { stat, type FileHandle } from 'node:fs/promises';
import { errorCode } from '../../fs/errno.js';
import { openPrivate } from '../../fs/private-files.js';

/** What identifies one version of a file cheaply: any write or replacement changes one of these. */
export interface FileId {
  readonly ino: bigint;
  readonly size: number;
  readonly ctimeNs: bigint;
}

export async function statId(path: string): Promise<FileId | undefined> {
  try {
    return toId(await stat(path, { bigint: true }));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * statId without the thread pool, for the check every read makes: on a local file a synchronous
 * stat costs a few microseconds, the asynchronous one's round trip ten times that in CPU.
 */
export function statIdSync(path: string): FileId | undefined {
  const info = statSync(path, { bigint: true, throwIfNoEntry: false });
  return info === undefined ? undefined : toId(info);
}

export async function handleId(handle: FileHandle): Promise<FileId> {
  return toId(await handle.stat({ bigint: true }));
}

export function sameId(a: FileId | undefined, b: FileId | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.ino === b.ino && a.size === b.size && a.ctimeNs === b.ctimeNs;
}

/** The whole file, its identity and its mode read through one descriptor, or undefined when missing; refuses another user's file (ERR_STORE_UNSAFE). */
export async function readWhole(path: string): Promise<{ bytes: Buffer; id: FileId; mode: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await openPrivate(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    // openPrivate checked the descriptor we read (a file created in a shared, sticky directory may be another user's).
    const info = await handle.stat({ bigint: true });
    return { bytes: await handle.readFile(), id: toId(info), mode: Number(info.mode) };
  } finally {
    await handle.close();
  }
}

/** Bytes [start, end) through an open handle (fewer if the file is shorter). */
export async function readAt(handle: FileHandle, start: number, end: number): Promise<Buffer> {
  const buffer = Buffer.alloc(Math.max(0, end - start));
  let done = 0;
  while (done < buffer.length) {
    const { bytesRead } = await handle.read(buffer, done, buffer.length - done, start + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

export function toId(info: { ino: bigint; size: bigint; ctimeNs: bigint }): FileId {
  return { ino: info.ino, size: Number(info.size), ctimeNs: info.ctimeNs };
}
