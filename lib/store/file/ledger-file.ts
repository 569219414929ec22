// The ledgers of the JSON-file store (../ledgers.ts): the state lives in memory and every event that
// must survive a restart (a failure, a success after failures, a used Digest nonce count, an issued
// reset token) is appended to a side file beside the store, `<store>.ledger`, one JSON line each,
// fsync'ed before the answer. Every process that shares the store reads the others' lines before
// it decides, and decisions that must be atomic across processes (a lease, a nonce count, an
// issuance) are taken under the store's cross-process lock.
//
// Attempts in flight (leases) must be counted by every server on the store (P-8 amended: two
// servers on one store do not double the guesses), but a server alone on its store need not tell
// anyone: it keeps them in memory, and a login that succeeds writes nothing at all. A server
// announces itself ("p") before its first attempt; one that sees a newcomer writes out its leases
// and acknowledges ("k"), and the newcomer waits for those acknowledgements before it admits an
// attempt. From then on both write their leases, until one is alone again (it left with "q", or its
// process is gone: ledger-peers.ts). A crashed process's leases expire.
//
// Lines: {"f":[account|null,address,at,lease?]} failure · {"s":account} success · {"a":[account,failures,lockedUntil]}
// account state (compaction) · {"n":[nonce,nc,expiresAt]} · {"i":[account,at]} ·
// {"l":[lease,account|null,address,expiresAt]} attempt in flight · {"e":lease} (alone or on an "s" line) it ended ·
// {"p":[server,pid,host]} a server joined · {"q":server} it left · {"k":[server,newcomer]} its leases are written.
// A lease id is "<server>.<n>": the leases of a server found gone go with it.
import { randomBytes } from 'node:crypto';
import { statSync, watch, type FSWatcher } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '../../errors.js';
import { writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import { assertOwner } from '../../fs/private-files.js';
import type { Ledgers, Outcome, Reservation, ThrottlePolicy } from '../ledgers.js';
import { LedgerState, recent, type Lease } from '../ledger-state.js';
import { PeerTable } from './ledger-peers.js';

export interface FileLedgerOptions {
  readonly path: string;
  readonly policy: ThrottlePolicy;
  readonly now: () => number;
  /** Runs `task` under the store's cross-process lock (and its in-process queue). */
  readonly exclusive: <T>(task: () => Promise<T>) => Promise<T>;
  /** Keys kept per table (accounts, addresses); the least recently failed go first. @default 10_000 */
  readonly maxEntries?: number;
  /** Rewrite the side file from memory once it is larger than this. @default 1 MiB */
  readonly compactBytes?: number;
  /** Told about a line that does not parse (skipped) or a failed compaction. */
  readonly warn?: (message: string) => void;
  /** How long a server that joins waits for the others to write out their leases. @default 2000 */
  readonly joinWaitMs?: number;
}

/** A failure counted in memory ahead of its line: it must survive a start-over and be written once. */
interface PendingFailure {
  readonly account: string | null;
  readonly address: string;
  readonly at: number;
  /** A compaction wrote it (from memory) before its own append came: do not append it again. */
  written: boolean;
}

export interface FileLedgers extends Ledgers {
  /** Reads the side file (creating nothing); call once before use. */
  load(): Promise<void>;
  /** A server that announced itself says goodbye (others may go back to keeping leases in memory). */
  leave(): Promise<void>;
  size(): { accounts: number; addresses: number; nonces: number; issued: number };
}

export function createFileLedgers(o: FileLedgerOptions): FileLedgers {
  const { path, policy, now } = o;
  const compactBytes = o.compactBytes ?? 1024 * 1024;
  const joinWaitMs = o.joinWaitMs ?? 2_000;
  const fileName = basename(path);

  // Our leases stay out of the side file (unpublished) while we are alone on the store.
  const state = new LedgerState(policy, o.maxEntries);
  const { accounts, addresses, nonces, leases } = state;
  const pending = new Set<PendingFailure>();
  // Leases ended in memory ahead of their line ("e" or "f"): a start-over must not bring them back.
  const ended = new Set<string>();
  // What of the side file has been applied: its identity and how many bytes.
  let ino = -1;
  let offset = 0;
  // Size right after the last compaction: the next one waits until the file has doubled, or a
  // live state larger than compactBytes would be rewritten on every append.
  let compactedSize = 0;
  let tail: Promise<unknown> = Promise.resolve();

  // This process as a server on the store: its id (a prefix of its lease ids), the other servers,
  // the newcomers it owes an acknowledgement, and every acknowledgement seen ("<from> <to>").
  const self = randomBytes(9).toString('base64url');
  let leaseCount = 0;
  const peers = new PeerTable();
  const seenPeers = new Set<string>();
  const owed = new Set<string>();
  const acks = new Set<string>();
  let joining: Promise<void> | undefined;
  let member = false;
  /** Announced and answered: attempts may be admitted without waiting for join(). */
  let joined = false;
  let left = false;
  let watcher: FSWatcher | undefined;
  let watchBusy = false;

  /**
   * One at a time in this process: catch-ups and appends both move `offset`. A side file that
   * cannot be read or written is the store being unavailable (503 with Retry-After), not a bug.
   */
  const queued = <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task).catch((error: unknown) => {
      if (error instanceof ServiceError) throw error;
      throw new ServiceError('ERR_STORE_UNAVAILABLE', `cannot use ${path}: ${(error as Error).message}`, { cause: error });
    });
    tail = run.catch(() => undefined);
    return run;
  };

  const applyFailure = (account: string | null, address: string, at: number): void => state.applyFailure(account, address, at);

  function apply(line: string): void {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      o.warn?.(`${path}: skipped a line that does not parse`);
      return;
    }
    if (typeof event !== 'object' || event === null) return;
    const e = event as Record<string, unknown>;
    if (typeof e['e'] === 'string') {
      leases.delete(e['e']);
      if (Object.keys(e).length === 1) return;
    }
    const f = e['f'];
    const l = e['l'];
    if (Array.isArray(f) && (typeof f[0] === 'string' || f[0] === null) && typeof f[1] === 'string' && typeof f[2] === 'number') {
      applyFailure(f[0], f[1], f[2]);
      if (typeof f[3] === 'string') leases.delete(f[3]);
    } else if (Array.isArray(l) && typeof l[0] === 'string' && (typeof l[1] === 'string' || l[1] === null) && typeof l[2] === 'string' && typeof l[3] === 'number') {
      leases.set(l[0], { account: l[1] ?? undefined, address: l[2], expiresAt: l[3], published: true });
    } else if (typeof e['s'] === 'string') {
      accounts.delete(e['s']);
    } else if (Array.isArray(e['a']) && typeof e['a'][0] === 'string' && typeof e['a'][1] === 'number' && typeof e['a'][2] === 'number') {
      state.touch(accounts, e['a'][0], { failures: e['a'][1], lockedUntil: e['a'][2] });
    } else if (Array.isArray(e['n']) && typeof e['n'][0] === 'string' && typeof e['n'][1] === 'number' && typeof e['n'][2] === 'number') {
      state.applyNonce(e['n'][0], e['n'][1], e['n'][2]);
    } else if (Array.isArray(e['i']) && typeof e['i'][0] === 'string' && typeof e['i'][1] === 'number') {
      state.applyIssued(e['i'][0], e['i'][1]);
    } else if (Array.isArray(e['p']) && typeof e['p'][0] === 'string' && typeof e['p'][1] === 'number' && typeof e['p'][2] === 'string') {
      const id = e['p'][0];
      if (id === self) return;
      peers.add(id, { pid: e['p'][1], host: e['p'][2] });
      // A newcomer (not one re-read after a compaction) waits for our leases before it admits any.
      if (!seenPeers.has(id) && member) owed.add(id);
      seenPeers.add(id);
    } else if (typeof e['q'] === 'string') {
      peers.delete(e['q']);
      owed.delete(e['q']);
      dropLeasesOf(e['q']);
    } else if (Array.isArray(e['k']) && typeof e['k'][0] === 'string' && typeof e['k'][1] === 'string') {
      acks.add(`${e['k'][0]} ${e['k'][1]}`);
    } else {
      o.warn?.(`${path}: skipped a line of an unknown kind`);
    }
  }

  function reset(): void {
    state.clear();
    peers.clear();
    offset = 0;
  }

  /** Applies what any process appended since we last looked (a compaction elsewhere: all of it). */
  async function catchUp(): Promise<void> {
    if (!changed()) return;
    let info = await stat(path).catch((error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
      return undefined;
    });
    if (info === undefined) {
      if (ino !== -1) startOver();
      ino = -1;
      return;
    }
    if (info.ino === ino && info.size === offset) return; // the common case: one stat
    const handle = await open(path, 'r');
    try {
      // The identity of what was opened, not of what stat() saw: a compaction elsewhere may have
      // renamed a new file into place in between, and its bytes are not the old file's.
      info = await handle.stat();
      // U-1: a ledger that appeared after open in a shared directory may be another user's.
      assertOwner(info, path);
      const wasReset = info.ino !== ino || info.size < offset;
      if (wasReset) {
        reset();
        ino = info.ino;
      }
      const length = info.size - offset;
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      // Only whole lines: another process may be half-way through an append.
      const end = text.lastIndexOf('\n');
      if (end >= 0) {
        for (const line of text.slice(0, end).split('\n')) if (line !== '') apply(line);
        offset += Buffer.byteLength(text.slice(0, end + 1));
      }
      // Failures counted ahead of their lines are in no file yet: count them again, after the
      // file's own state (an "a" line sets an account's count and would overwrite them).
      if (wasReset) reapplyPending();
    } finally {
      await handle.close();
    }
  }

  /**
   * Whether the side file differs from what has been applied. Synchronous: one stat of a local
   * file costs microseconds, a third of what the thread-pool round trip of an asynchronous one costs.
   */
  function changed(): boolean {
    let info;
    try {
      info = statSync(path, { throwIfNoEntry: false });
    } catch {
      return true; // let catchUp() meet the error
    }
    if (info === undefined) return ino !== -1;
    return info.ino !== ino || info.size !== offset;
  }

  /** The side file is gone: forget it all but what is still on its way to it. */
  function startOver(): void {
    reset();
    reapplyPending();
  }

  /** Those a compaction already wrote are in the file just read: only the others. */
  function reapplyPending(): void {
    for (const p of pending) if (!p.written) applyFailure(p.account, p.address, p.at);
    for (const id of ended) leases.delete(id);
  }

  /** Appends lines durably; the caller holds the lock and has caught up. */
  async function append(lines: readonly unknown[], durable = true): Promise<void> {
    let text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
    const handle = await open(path, 'a', 0o600);
    try {
      // Bytes past `offset` after a catch-up under the lock are a torn line of a crashed append:
      // end it, or our line would be glued to it and both skipped.
      if ((await handle.stat()).size > offset) text = `\n${text}`;
      await handle.write(text);
      if (durable) await handle.datasync();
      const info = await handle.stat();
      ino = info.ino;
      offset = info.size;
    } finally {
      await handle.close();
    }
    if (offset > Math.max(compactBytes, 2 * compactedSize)) await compact().catch((error: unknown) => o.warn?.(`${path}: compaction failed: ${(error as Error).message}`));
  }

  /** Rewrites the side file with what still matters (temp file, fsync, rename). */
  async function compact(): Promise<void> {
    const t = now();
    const lines: unknown[] = [];
    for (const [account, a] of accounts) lines.push({ a: [account, a.failures, a.lockedUntil] });
    for (const [address, times] of addresses) for (const at of recent(times, policy.addressWindowMs, t)) lines.push({ f: [null, address, at] });
    for (const [nonce, n] of nonces) if (n.expiresAt > t) lines.push({ n: [nonce, n.nc, n.expiresAt] });
    for (const [account, times] of state.issued) for (const at of recent(times, state.issuanceWindowMs, t)) lines.push({ i: [account, at] });
    for (const [id, lease] of leases) {
      if (lease.expiresAt <= t) continue;
      lines.push({ l: [id, lease.account ?? null, lease.address, lease.expiresAt] });
      lease.published = true; // its end must be written now
    }
    const live = peers.live(dropLeasesOf);
    if (member) lines.push({ p: [self, process.pid, peers.host] });
    for (const [id, peer] of live) lines.push({ p: [id, peer.pid, peer.host] });
    for (const ack of acks) {
      const [from = '', to = ''] = ack.split(' ');
      if ((from === self || live.has(from)) && (to === self || live.has(to))) lines.push({ k: [from, to] });
    }
    // Under the lock (append's caller holds it), so no other process appends before the rename;
    // writeDurably starts from a fresh 0600 temporary file, whatever a crash left behind (U-1).
    await writeDurably(path, lines.map((line) => `${JSON.stringify(line)}\n`).join(''), { temporary: `${path}.tmp` });
    const info = await stat(path);
    ino = info.ino;
    offset = info.size;
    compactedSize = info.size;
    // Every failure counted ahead is in the new file now, from memory.
    for (const p of pending) p.written = true;
  }

  /** Under the cross-process lock: catch up (answering newcomers), decide, append what was decided. */
  const locked = <T>(task: () => Promise<T>): Promise<T> =>
    queued(() =>
      o.exclusive(async () => {
        await catchUp();
        if (owed.size > 0) await acknowledge();
        return task();
      }),
    );

  /** Acknowledges the newcomers seen by a catch-up outside the lock (locked() does it first thing). */
  const answerNewcomers = async (): Promise<void> => {
    if (owed.size > 0) await locked(async () => undefined);
  };

  /** Under the lock: our leases into the side file, then a "k" line for each newcomer waiting for them. */
  async function acknowledge(): Promise<void> {
    const lines: unknown[] = [];
    const written: Lease[] = [];
    const t = now();
    for (const [id, lease] of leases) {
      if (lease.published || lease.expiresAt <= t) continue;
      lines.push({ l: [id, lease.account ?? null, lease.address, lease.expiresAt] });
      written.push(lease);
    }
    const newcomers = [...owed];
    for (const peer of newcomers) lines.push({ k: [self, peer] });
    // Marked before the write: an attempt that ends while it is under way must write its end.
    for (const lease of written) lease.published = true;
    try {
      await append(lines, false);
    } catch (error) {
      for (const lease of written) lease.published = false;
      throw error;
    }
    for (const peer of newcomers) owed.delete(peer);
  }

  /** The leases of a server that left or whose process is gone. */
  function dropLeasesOf(server: string): void {
    const prefix = `${server}.`;
    for (const id of leases.keys()) if (id.startsWith(prefix)) leases.delete(id);
  }

  /** No other live server on the store: our attempts in flight may stay in memory. */
  function alone(): boolean {
    return peers.live(dropLeasesOf).size === 0;
  }

  /**
   * Announces this server before its first attempt, and waits (at most joinWaitMs) until every
   * server already on the store has written out its attempts in flight, so none goes uncounted.
   */
  function join(): Promise<void> {
    joining ??= (async () => {
      if (watcher === undefined) watchSideFile();
      await locked(async () => {
        await append([{ p: [self, process.pid, peers.host] }], false);
        member = true;
      });
      const waitFor = [...peers.live(dropLeasesOf).keys()];
      const deadline = performance.now() + joinWaitMs;
      for (;;) {
        const live = peers.live(dropLeasesOf);
        const silent = waitFor.filter((id) => live.has(id) && !acks.has(`${id} ${self}`));
        if (silent.length === 0) break;
        if (performance.now() >= deadline) {
          o.warn?.(`${path}: ${silent.length} other server(s) on this store did not answer within ${joinWaitMs} ms; attempts they had in flight were not counted here`);
          break;
        }
        await sleep(10);
        await queued(catchUp);
      }
      joined = true;
    })();
    // A failed announcement is tried again by the next attempt.
    joining.catch(() => (joining = undefined));
    return joining;
  }

  /**
   * Another server's announcement must be answered even when no request comes here to notice it:
   * the directory is watched (the side file is replaced by compactions) and every change of the
   * side file is caught up with. Without a watcher a newcomer waits joinWaitMs and says so.
   */
  function watchSideFile(): void {
    // One catch-up at a time; a change seen during one gets another after it (it may have read
    // the file just before the newcomer's line arrived).
    let again = false;
    const onChange = (): void => {
      if (watchBusy) {
        again = true;
        return;
      }
      if (!changed()) return;
      watchBusy = true;
      queued(catchUp)
        .then(answerNewcomers)
        .catch((error: unknown) => o.warn?.(`${path}: ${(error as Error).message}`))
        .finally(() => {
          watchBusy = false;
          if (again) {
            again = false;
            onChange();
          }
        });
    };
    try {
      watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
        if (name === null || name === fileName) onChange();
      });
      watcher.on('error', () => watcher?.close());
    } catch {
      watcher = undefined;
    }
  }

  /** Decides a reservation on what memory holds; with `record`, takes a lease (`published`: in the side file). */
  function reserveNow(account: string | undefined, address: string, record: boolean, published = false): Reservation {
    return state.reserve(account, address, now(), record ? { id: `${self}.${(leaseCount++).toString(36)}`, published } : undefined);
  }

  return {
    load: () => queued(catchUp),

    async leave() {
      left = true;
      watcher?.close();
      watcher = undefined;
      if ((await joining?.then(() => member, () => false)) !== true) return;
      member = false;
      await locked(() => append([{ q: self }], false));
    },

    size: () => ({ accounts: accounts.size, addresses: addresses.size, nonces: nonces.size, issued: state.issued.size }),

    throttle: {
      async reserve(account, address) {
        if (!joined && !left) await join();
        if (changed()) await queued(catchUp);
        if (owed.size > 0) await answerNewcomers(); // checked here too: no await on the usual path
        // Alone on the store: decided and kept in memory, nothing written.
        if (alone()) return reserveNow(account, address, true);
        // A refusal needs no lock (the busy-wait loop asks often); a lease is taken under it, so
        // that no two processes both take the last place in a budget.
        const first = reserveNow(account, address, false);
        if (!first.ok) return first;
        return locked(async () => {
          const r = reserveNow(account, address, true, true);
          if (!r.ok) return r;
          const lease = leases.get(r.id) as Lease;
          try {
            await append([{ l: [r.id, account ?? null, address, lease.expiresAt] }], false);
          } catch (error) {
            leases.delete(r.id);
            throw error;
          }
          return r;
        });
      },

      async settle(id, account, address, outcome: Outcome) {
        // The outcome takes the lease's place in memory at once: a waiting attempt must never see
        // the lease gone and the failure not yet counted.
        const at = now();
        const lease = leases.get(id);
        leases.delete(id);
        // Only a lease in the side file has an end to write; one kept in memory ends there.
        const published = lease?.published === true;
        if (lease !== undefined) ended.add(id);
        try {
          if (outcome === 'fail') {
            const failure: PendingFailure = { account: account ?? null, address, at, written: false };
            pending.add(failure);
            applyFailure(failure.account, address, at);
            try {
              await locked(async () => {
                leases.delete(id);
                // One line: another process sees the lease end and the failure at once.
                if (!failure.written) await append([{ f: [failure.account, address, at, ...(published ? [id] : [])] }]);
              });
            } finally {
              pending.delete(failure);
            }
            return;
          }
          // A success needs writing durably only when there was something to forget.
          const forget = outcome === 'success' && account !== undefined && accounts.delete(account);
          if (!forget && !published) return;
          await locked(async () => {
            leases.delete(id);
            if (forget) accounts.delete(account);
            await append([{ ...(forget ? { s: account } : {}), ...(published ? { e: id } : {}) }], forget);
          });
        } finally {
          ended.delete(id);
        }
      },
    },

    nonces: {
      claim: (nonce, nc, expiresAt) =>
        locked(async () => {
          if (!state.claimNonce(nonce, nc, expiresAt, now())) return false;
          await append([{ n: [nonce, nc, expiresAt] }]);
          return true;
        }),
    },

    issuance: {
      take: (account, max, windowMs) =>
        locked(async () => {
          const t = now();
          if (!state.takeIssuance(account, max, windowMs, t)) return false;
          await append([{ i: [account, t] }]);
          return true;
        }),
    },
  };
}
