// Cross-process mutual exclusion for the users store: a lock file created exclusively (link(),
// or O_EXCL "wx" where hard links are missing), holding who owns it. Node has no flock(), and a lock file also works on every filesystem Node
// runs on. The owner touches the file while it holds it, so "not touched for staleMs" means its
// holder is gone or hung; a lock whose process is dead is taken over at once.
import { randomBytes } from 'node:crypto';
import { link, open, readdir, rename, stat, unlink, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { process } from '../process.js';
import { ServiceError } from '../errors.js';
import { processExists } from './process-exists.js';
import { assertOwner } from './private-files.js';

export interface LockOptions {
  /** Give up after waiting this long (ERR_STORE_LOCKED). */
  readonly timeoutMs: number;
  /** A lock file not touched for this long is stale whoever holds it. */
  readonly staleMs: number;
  /** Clock compared with the lock file's mtime. */
  readonly now: () => number;
}

export interface HeldLock {
  /** Removes the lock file if it is still ours. Never rejects. */
  release(): Promise<void>;
}

interface Owner {
  readonly pid: number;
  readonly host: string;
  readonly nonce: string;
}

const MAX_BACKOFF_MS = 50;

/** Creates `path` exclusively, waiting with backoff and taking over stale locks. */
export async function acquireLock(path: string, options: LockOptions): Promise<HeldLock> {
  const nonce = randomBytes(12).toString('hex');
  const content = `${JSON.stringify({ pid: process.pid, host: hostname(), nonce, at: new Date(options.now()).toISOString() })}\n`;
  const deadline = performance.now() + options.timeoutMs;
  let backoff = 1;
  for (;;) {
    if (await tryCreate(path, content, nonce)) return hold(path, nonce, options.staleMs);
    if (await breakIfStale(path, options)) continue;
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw await lockedError(path, options.timeoutMs);
    // Jitter keeps two waiters from retrying in lockstep.
    await sleep(Math.min(remaining, backoff * (0.5 + Math.random())));
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}

async function tryCreate(path: string, content: string, nonce: string): Promise<boolean> {
  // Write the owner to a private file, then link() it into place: link fails with EEXIST like
  // O_EXCL does, but the lock never exists without its owner, so a kill -9 at any instant
  // cannot leave an anonymous lock that only age could judge.
  const staged = `${path}.${process.pid}-${nonce}`;
  try {
    await writeFile(staged, content, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    throw new ServiceError('ERR_STORE_WRITE', `cannot create the lock file ${path}: ${describe(error)}`, { cause: error });
  }
  try {
    await link(staged, path);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return false;
    // Filesystems without hard links: fall back to O_EXCL creation.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') return createExclusive(path, content);
    throw new ServiceError('ERR_STORE_WRITE', `cannot create the lock file ${path}: ${describe(error)}`, { cause: error });
  } finally {
    await unlink(staged).catch(() => undefined);
  }
}

async function createExclusive(path: string, content: string): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw new ServiceError('ERR_STORE_WRITE', `cannot create the lock file ${path}: ${describe(error)}`, { cause: error });
  }
  try {
    await handle.writeFile(content);
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw new ServiceError('ERR_STORE_WRITE', `cannot write the lock file ${path}: ${describe(error)}`, { cause: error });
  }
  await handle.close();
  return true;
}

/**
 * Removes files that a process killed while taking or breaking the lock left next to it: staged
 * owner files of dead processes and stale locks moved aside. Call it while holding the lock.
 */
export async function sweepLockLeftovers(path: string): Promise<void> {
  const directory = dirname(path);
  const prefix = `${basename(path)}.`;
  const names = await readdir(directory).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length);
    const staged = /^(\d+)-[0-9a-f]+$/.exec(rest);
    const leftover = rest.startsWith('stale-') || (staged !== null && staged[1] !== String(process.pid) && !processExists(Number(staged[1])));
    if (leftover) await unlink(join(directory, name)).catch(() => undefined);
  }
}

function hold(path: string, nonce: string, staleMs: number): HeldLock {
  const touch = setInterval(
    () => {
      const now = new Date();
      utimes(path, now, now).catch(() => undefined);
    },
    Math.max(10, Math.floor(staleMs / 3)),
  );
  touch.unref();
  return {
    async release(): Promise<void> {
      clearInterval(touch);
      // Remove it only if it is still ours: had it been taken over as stale, the file now
      // belongs to someone else.
      const current = await readOwner(path).catch(() => undefined);
      if (current?.owner?.nonce === nonce) await unlink(path).catch(() => undefined);
    },
  };
}

/** True when a stale lock was moved away (or vanished), so the caller should retry at once. */
async function breakIfStale(path: string, options: LockOptions): Promise<boolean> {
  let seen: { owner: Owner | undefined; ino: number; mtimeMs: number };
  try {
    seen = await readOwner(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return true;
    throw error;
  }
  if (!isStale(seen.owner, seen.mtimeMs, options)) return false;
  // Rename rather than unlink: if two waiters both judge the lock stale, only one rename
  // succeeds, and the inode check tells us we moved the file we judged, not a fresh lock that
  // a third process created in between.
  const aside = `${path}.stale-${randomBytes(6).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return true;
    throw error;
  }
  const moved = await stat(aside).catch(() => undefined);
  if (moved !== undefined && moved.ino !== seen.ino) await link(aside, path).catch(() => undefined);
  await unlink(aside).catch(() => undefined);
  return true;
}

function isStale(owner: Owner | undefined, mtimeMs: number, options: LockOptions): boolean {
  if (options.now() - mtimeMs > options.staleMs) return true;
  // Without a readable owner (a lock written by hand, or by the O_EXCL fallback before its
  // owner is filled in) or on another host, only age can tell.
  if (owner === undefined || owner.host !== hostname()) return false;
  if (owner.pid === process.pid) {
    // Our own pid: either another Store in this process (the file is younger than the process)
    // or a leftover of an earlier process that had the same pid (common as pid 1 in containers).
    const startedAt = Date.now() - process.uptime() * 1000;
    return mtimeMs < startedAt;
  }
  return !processExists(owner.pid);
}

async function readOwner(path: string): Promise<{ owner: Owner | undefined; ino: number; mtimeMs: number }> {
  // One descriptor for both, so the owner and the mtime describe the same file.
  const handle = await open(path, 'r');
  try {
    const info = await handle.stat();
    // A lock planted by another user would have us wait on, or break, a file we do not own.
    assertOwner(info, path);
    const text = await handle.readFile('utf8');
    return { owner: parseOwner(text), ino: info.ino, mtimeMs: info.mtimeMs };
  } finally {
    await handle.close();
  }
}

function parseOwner(text: string): Owner | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, host, nonce } = value as Record<string, unknown>;
    // pid 0 or negative would address a process group in kill(), never a single owner.
    if (!Number.isSafeInteger(pid) || (pid as number) <= 0 || typeof host !== 'string' || typeof nonce !== 'string') return undefined;
    return { pid: pid as number, host, nonce };
  } catch {
    return undefined;
  }
}

async function lockedError(path: string, timeoutMs: number): Promise<ServiceError> {
  const holder = await readOwner(path).catch(() => undefined);
  const who = holder?.owner === undefined ? 'another process' : `process ${holder.owner.pid} on ${holder.owner.host}`;
  return new ServiceError(
    'ERR_STORE_LOCKED',
    `the users store is locked by ${who} (lock file ${path}); gave up after ${timeoutMs} ms. ` +
      'If no other process uses the store, delete the lock file.',
  );
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
