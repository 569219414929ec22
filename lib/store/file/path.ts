// Where the users store really is, and whether it is safe to use (U-1, amended 2026-11-22).
//
// The path is resolved through symbolic links once, at open: the journal, the lock and every
// other side file are named after the real file, so `real/users.json` and a link to it are one
// store with one lock. (Renaming a new snapshot over a link would replace the link with a file
// and split the store in two.)
import { lstat, mkdir, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ServiceError } from '../../errors.js';
import { errorCode } from '../../fs/errno.js';
import { assertLinkOwner, checkStoreDirectory, checkStoreFile, type SafetyWarn } from '../../fs/private-files.js';

/** Symbolic links followed before giving up, as the kernel's own limit (ELOOP) does. */
const MAX_LINKS = 40;

export interface StorePathOptions {
  /** Create the store's directory (0700) when missing. @default true */
  readonly create?: boolean;
  /** Told when a file's mode is narrowed to 0600. */
  readonly warn?: SafetyWarn | undefined;
}

/** The side files of the store at real path `path`, each of which must be ours (U-1). */
export function storeSideFiles(path: string): string[] {
  return [`${path}.journal`, `${path}.lock`, `${path}.tmp`, `${path}.journal.tmp`, `${path}.ledger`];
}

/**
 * Resolves the store path through symbolic links and checks that the store can be trusted: its
 * directory and those above it (no other user can rename or plant files there) and the store
 * file and its side files (ours, regular, narrowed to 0600). Returns the real path; throws
 * ERR_STORE_UNSAFE with one line saying what is wrong, or ERR_STORE_WRITE when the directory
 * cannot be created.
 */
export async function openStorePath(path: string, options: StorePathOptions = {}): Promise<string> {
  let real: string;
  try {
    real = await resolveStorePath(path, options.create ?? true);
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw new ServiceError('ERR_STORE_WRITE', `cannot create the directory of the users store ${resolve(path)}: ${(error as Error).message}`, { cause: error });
  }
  const directory = dirname(real);
  if (!(options.create ?? true) && (await lstat(directory).catch(() => undefined)) === undefined) return real;
  await checkStoreDirectory(directory);
  for (const file of [real, ...storeSideFiles(real)]) await checkStoreFile(file, options.warn);
  return real;
}

/**
 * The real path of `path`. A dangling link (its target not created yet) resolves to its target,
 * so the store is created there and the link stays a link. With `create`, a missing directory is
 * created 0700 so that its real path can be known (after checking the directory it goes in).
 */
export async function resolveStorePath(path: string, create = true): Promise<string> {
  let current = resolve(path);
  for (let links = 0; ; links++) {
    try {
      return await realpath(current);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
    const info = await lstat(current).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      throw error;
    });
    if (info === undefined || !info.isSymbolicLink()) break;
    // Whoever owns a dangling link chooses where we would create the store.
    assertLinkOwner(info, current);
    if (links >= MAX_LINKS) throw new ServiceError('ERR_STORE_WRITE', `too many symbolic links in the users store path ${resolve(path)}`);
    current = resolve(dirname(current), await readlink(current));
  }
  const directory = dirname(current);
  if ((await lstat(directory).catch(() => undefined)) === undefined) {
    if (!create) return current;
    // Nothing is created inside a directory another user could write (the check throws first).
    await checkStoreDirectory(await realpath(await existingAncestor(directory)));
    await mkdir(directory, { recursive: true, mode: 0o700 });
  }
  return join(await realpath(directory), basename(current));
}

async function existingAncestor(directory: string): Promise<string> {
  let current = directory;
  while ((await lstat(current).catch(() => undefined)) === undefined && dirname(current) !== current) current = dirname(current);
  return current;
}
