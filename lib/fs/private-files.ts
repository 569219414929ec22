// Who may touch the users store's files (U-1, amended 2026-11-22). Another local user must not be
// able to plant a store (with an admin of theirs), swap a file under us, or read the hashes we
// write. So every store file and side file must be ours, not writable by anyone else, and live in
// a directory where nobody else can rename or replace it. One refusal code, ERR_STORE_UNSAFE, with
// a one-line message that names the path, what is wrong and what to do.
//
// POSIX only: Windows has no uid or mode bits to compare (ACLs guard those files instead).
import { constants, readFileSync } from 'node:fs';
import { chmod, lstat, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { process } from '../process.js';
import { ServiceError } from '../errors.js';

const PRIVATE_MODE = 0o600;
const STICKY = 0o1000;

/** Told when a file's mode was narrowed, so an operator learns their files were too open. */
export type SafetyWarn = (message: string, fields: Readonly<Record<string, unknown>>) => void;

/** The owner fields of a stat result (bigint or number). */
interface Owned {
  readonly uid: number | bigint;
  readonly gid: number | bigint;
  readonly mode: number | bigint;
}

/**
 * Checks one store file or side file before use: absent is fine (we create it 0600); otherwise it
 * must be a regular file (not a symbolic link) owned by the user running us. A group/other mode is
 * narrowed to 0600, and a failed chmod is a refusal, never ignored. Throws ERR_STORE_UNSAFE.
 * The store's directory is checked separately, once (checkStoreDirectory).
 */
export async function checkStoreFile(path: string, warn?: SafetyWarn): Promise<void> {
  if (!posixOwnership()) return;
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw unsafe(`cannot inspect ${path}: ${describe(error)}`, 'check the path and its permissions');
  }
  if (info.isSymbolicLink()) {
    throw unsafe(`${path} is a symbolic link, and a side file of the users store must be a regular file`, 'remove the link');
  }
  if (!info.isFile()) throw unsafe(`${path} is not a regular file`, 'move it away');
  assertOwner(info, path);
  if ((info.mode & 0o077) === 0) return;
  const was = octal(info.mode);
  try {
    await chmod(path, PRIVATE_MODE);
  } catch (error) {
    throw unsafe(
      `${path} has mode ${was} (open to group or others) and could not be narrowed to 0600: ${describe(error)}`,
      'fix its mode by hand (chmod 600), or move the store',
    );
  }
  warn?.(`narrowed the mode of ${path} from ${was} to 0600: users store files must be private`, { file: path, was });
}

/**
 * Refuses a directory (and every directory above it) in which another user could rename, replace
 * or plant our files: one owned by someone other than us or root, or one writable by others
 * without the sticky bit (with the sticky bit, as in /tmp, only a file's owner can rename or
 * delete it, and every store file is checked to be ours). A group-writable directory is accepted
 * only when the group is our own, as with Debian's per-user groups; `dir` must be a real path.
 * `subject` names what the directory holds in the messages (the development certificate's too).
 */
export async function checkStoreDirectory(dir: string, subject: Subject = STORE): Promise<void> {
  const { owner, files } = subject;
  if (!posixOwnership()) return;
  const uid = process.geteuid?.() ?? -1;
  const gid = process.getegid?.() ?? -1;
  for (let current = dir; ; current = dirname(current)) {
    let info;
    try {
      info = await lstat(current);
    } catch (error) {
      throw unsafe(`cannot inspect the directory ${current}: ${describe(error)}`, 'check the path and its permissions', subject);
    }
    const sticky = (info.mode & STICKY) !== 0;
    const where = current === dir ? `${owner}'s directory ${current}` : `the directory ${current}, above ${owner},`;
    if (info.uid !== uid && info.uid !== 0) {
      throw unsafe(`${where} is owned by ${who(info.uid)}, who could replace ${files}`, `keep ${files} in a directory of your own`, subject);
    }
    if (!sticky && (info.mode & 0o002) !== 0) {
      throw unsafe(`${where} is writable by others (mode ${octal(info.mode)}) without the sticky bit`, `run chmod o-w on it, or keep ${files} elsewhere`, subject);
    }
    if (!sticky && (info.mode & 0o020) !== 0 && info.gid !== gid) {
      throw unsafe(`${where} is writable by group ${info.gid} (mode ${octal(info.mode)}) without the sticky bit`, `run chmod g-w on it, or keep ${files} elsewhere`, subject);
    }
    if (dirname(current) === current) return;
  }
}

/** Refuses a file another user owns (from a stat we already have, e.g. of an open descriptor). */
export function assertOwner(info: Owned, path: string): void {
  if (!posixOwnership()) return;
  const uid = Number(info.uid);
  const ours = process.geteuid?.() ?? uid;
  if (uid === ours) return;
  // Two honest causes besides an attack: a command run as the wrong user (sudo without -u), or
  // files restored from a backup by someone else.
  throw unsafe(
    `${path} is owned by ${who(uid)}, not by ${who(ours)} who runs this process: another user may have planted it`,
    `run as the user that owns the store (sudo -u ${userName(uid) ?? `'#${uid}'`} …); otherwise inspect the file, then move it away or chown it`,
  );
}

/** open(2)'s flags for openPrivate's modes, with O_NOFOLLOW where the platform has it. */
const OPEN_FLAGS = {
  r: constants.O_RDONLY,
  'r+': constants.O_RDWR,
  a: constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT,
} as const;

/**
 * Opens a store file or side file as `fs.open` would with `flags`, never through a symbolic link
 * (O_NOFOLLOW), and refuses what it opened unless it is a regular file of ours: a side file made
 * after the start-up checks (the ledger at the first failed login) in a shared directory may have
 * been planted as a link to a file of ours, or be another user's. Throws ERR_STORE_UNSAFE for
 * those; other errors (ENOENT) as fs.open's.
 */
export async function openPrivate(path: string, flags: keyof typeof OPEN_FLAGS, mode = PRIVATE_MODE): Promise<FileHandle> {
  if (!posixOwnership() || constants.O_NOFOLLOW === undefined) return open(path, flags, mode);
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO planted there would otherwise hold the open (and a thread) for ever
    // before it could be refused; on a regular file it changes nothing.
    handle = await open(path, OPEN_FLAGS[flags] | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (error) {
    if (errorCode(error) === 'ELOOP') throw unsafe(`${path} is a symbolic link, and a file of the users store must be a regular file`, 'remove the link');
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw unsafe(`${path} is not a regular file`, 'move it away');
    assertOwner(info, path);
    // A hard link planted there to a file of ours (where the kernel allows it) would have us
    // write into that file; the store's own files are only ever replaced by rename: one link.
    if (flags !== 'r' && info.nlink !== 1) throw unsafe(`${path} has ${info.nlink} hard links, and a file the users store writes must have one`, 'move it away');
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Refuses a symbolic link that another user (not root) owns: they would choose where we write. */
export function assertLinkOwner(info: Owned, path: string): void {
  if (!posixOwnership() || Number(info.uid) === 0) return;
  const ours = process.geteuid?.() ?? Number(info.uid);
  if (Number(info.uid) === ours) return;
  throw unsafe(`the symbolic link ${path} is owned by ${who(Number(info.uid))}, who could point the store anywhere`, 'use a path of your own');
}

/** What a refusal is about: the users store's files, or the development certificate's. */
export interface Subject {
  /** The thing whose directory it is ("the users store"). */
  readonly owner: string;
  /** Its files, as the fix names them ("the store"). */
  readonly files: string;
  /** The message's first words ("unsafe users store"). */
  readonly heading: string;
}

export const STORE: Subject = { owner: 'the users store', files: 'the store', heading: 'unsafe users store' };

export function unsafe(problem: string, fix: string, subject: Subject = STORE): ServiceError {
  return new ServiceError('ERR_STORE_UNSAFE', `${subject.heading}: ${problem}; ${fix}.`);
}

function posixOwnership(): boolean {
  return process.platform !== 'win32' && typeof process.geteuid === 'function';
}

/** "user 65534 (nobody)": the name from /etc/passwd when it has one (on the error path only). */
function who(uid: number): string {
  const name = userName(uid);
  return name === undefined ? `user ${uid}` : `user ${uid} (${name})`;
}

function userName(uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [user, , id] = line.split(':');
      if (id === String(uid) && user !== undefined && user !== '') return user;
    }
  } catch {
    // no passwd file (containers, NSS-only systems): the number alone
  }
  return undefined;
}

function octal(mode: number | bigint): string {
  return `0${(Number(mode) & 0o7777).toString(8).padStart(3, '0')}`;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
