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
// Split by job: the lines and their codec (ledger-lines.ts), the state and its decisions
// (../ledger-state.ts), reading and appending the file (line-journal.ts), the peer protocol
// (ledger-peers.ts); this file puts them together under the lock.
// A lease id is "<server>.<n>": the leases of a server found gone go with it.
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '../../errors.js';
import type { Ledgers, Outcome, Reservation, ThrottlePolicy } from '../ledgers.js';
import { LedgerState, recent, type Lease } from '../ledger-state.js';
import { decodeLine, encodeLine, type LedgerLine } from './ledger-lines.js';
import { PeerProtocol } from './ledger-peers.js';
import { LineJournal } from './line-journal.js';

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
  const journal = new LineJournal(path, { tornTail: 'end-line' });
  let tail: Promise<unknown> = Promise.resolve();

  // This process as a server on the store: its id (a prefix of its lease ids), the other servers,
  // the newcomers it owes an acknowledgement, and every acknowledgement seen ("<from> <to>").
  const peers = new PeerProtocol(dropLeasesOf);
  const { self } = peers;
  let leaseCount = 0;
  let joining: Promise<void> | undefined;
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

  function apply(text: string): void {
    const decoded = decodeLine(text);
    if (decoded === 'unparsable') return void o.warn?.(`${path}: skipped a line that does not parse`);
    if (decoded === 'unknown') return void o.warn?.(`${path}: skipped a line of an unknown kind`);
    if (decoded.ended !== undefined) leases.delete(decoded.ended);
    const line = decoded.line;
    switch (line?.kind) {
      case 'failure':
        applyFailure(line.account, line.address, line.at);
        if (line.lease !== undefined) leases.delete(line.lease);
        return;
      case 'lease':
        leases.set(line.id, { account: line.account ?? undefined, address: line.address, expiresAt: line.expiresAt, published: true });
        return;
      case 'success':
        if (line.account !== undefined) accounts.delete(line.account);
        return;
      case 'account':
        state.touch(accounts, line.account, { failures: line.failures, lockedUntil: line.lockedUntil });
        return;
      case 'nonce':
        state.applyNonce(line.nonce, line.nc, line.expiresAt);
        return;
      case 'issued':
        state.applyIssued(line.account, line.at);
        return;
      case 'joined':
      case 'left':
      case 'ack':
        peers.apply(line);
        return;
      case undefined:
        return;
    }
  }

  function reset(): void {
    state.clear();
    peers.clear();
  }

  /** Applies what any process appended since we last looked (a compaction elsewhere: all of it). */
  async function catchUp(): Promise<void> {
    const found = await journal.catchUp((bytes, fromStart) => {
      if (fromStart) reset();
      for (const line of bytes.toString('utf8').split('\n')) if (line !== '') apply(line);
    });
    // The side file is gone: forget it all but what is still on its way to it.
    if (found === 'gone') reset();
    // Failures counted ahead of their lines are in no file yet: count them again, after the
    // file's own state (an "a" line sets an account's count and would overwrite them).
    if (found === 'gone' || found === 'replaced') reapplyPending();
  }

  const changed = (): boolean => journal.changed();

  /** Those a compaction already wrote are in the file just read: only the others. */
  function reapplyPending(): void {
    for (const p of pending) if (!p.written) applyFailure(p.account, p.address, p.at);
    for (const id of ended) leases.delete(id);
  }

  /** Appends lines durably; the caller holds the lock and has caught up. */
  async function append(lines: readonly LedgerLine[], durable = true): Promise<void> {
    await journal.append(lines.map(encodeLine).join(''), durable);
    if (journal.wantsCompaction(compactBytes)) await compact().catch((error: unknown) => o.warn?.(`${path}: compaction failed: ${(error as Error).message}`));
  }

  /** Rewrites the side file with what still matters (temp file, fsync, rename). */
  async function compact(): Promise<void> {
    const t = now();
    const lines: LedgerLine[] = [];
    for (const [account, a] of accounts) lines.push({ kind: 'account', account, failures: a.failures, lockedUntil: a.lockedUntil });
    for (const [address, times] of addresses) for (const at of recent(times, policy.addressWindowMs, t)) lines.push({ kind: 'failure', account: null, address, at });
    for (const [nonce, n] of nonces) if (n.expiresAt > t) lines.push({ kind: 'nonce', nonce, nc: n.nc, expiresAt: n.expiresAt });
    for (const [account, times] of state.issued) for (const at of recent(times, state.issuanceWindowMs, t)) lines.push({ kind: 'issued', account, at });
    for (const [id, lease] of leases) {
      if (lease.expiresAt <= t) continue;
      lines.push(leaseLine(id, lease));
      lease.published = true; // its end must be written now
    }
    lines.push(...peers.compactionLines());
    await journal.compact(lines.map(encodeLine).join(''));
    // Every failure counted ahead is in the new file now, from memory.
    for (const p of pending) p.written = true;
  }

  /** Under the cross-process lock: catch up (answering newcomers), decide, append what was decided. */
  const locked = <T>(task: () => Promise<T>): Promise<T> =>
    queued(() =>
      o.exclusive(async () => {
        await catchUp();
        if (peers.owing) await acknowledge();
        return task();
      }),
    );

  /** Acknowledges the newcomers seen by a catch-up outside the lock (locked() does it first thing). */
  const answerNewcomers = async (): Promise<void> => {
    if (peers.owing) await locked(async () => undefined);
  };

  /** Under the lock: our leases into the side file, then a "k" line for each newcomer waiting for them. */
  async function acknowledge(): Promise<void> {
    const lines: LedgerLine[] = [];
    const written: Lease[] = [];
    const t = now();
    for (const [id, lease] of leases) {
      if (lease.published || lease.expiresAt <= t) continue;
      lines.push(leaseLine(id, lease));
      written.push(lease);
    }
    const acknowledgements = peers.acknowledgements();
    lines.push(...acknowledgements.lines);
    // Marked before the write: an attempt that ends while it is under way must write its end.
    for (const lease of written) lease.published = true;
    try {
      await append(lines, false);
    } catch (error) {
      for (const lease of written) lease.published = false;
      throw error;
    }
    acknowledgements.done();
  }

  /** The leases of a server that left or whose process is gone. */
  function dropLeasesOf(server: string): void {
    const prefix = `${server}.`;
    for (const id of leases.keys()) if (id.startsWith(prefix)) leases.delete(id);
  }

  /**
   * Announces this server before its first attempt, and waits (at most joinWaitMs) until every
   * server already on the store has written out its attempts in flight, so none goes uncounted.
   */
  function join(): Promise<void> {
    joining ??= (async () => {
      if (watcher === undefined) watchSideFile();
      await locked(async () => {
        await append([peers.joinedLine()], false);
        peers.member = true;
      });
      const waitFor = [...peers.live().keys()];
      const deadline = performance.now() + joinWaitMs;
      for (;;) {
        const silent = peers.silent(waitFor);
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
      if ((await joining?.then(() => peers.member, () => false)) !== true) return;
      peers.member = false;
      await locked(() => append([peers.leftLine()], false));
    },

    size: () => ({ accounts: accounts.size, addresses: addresses.size, nonces: nonces.size, issued: state.issued.size }),

    throttle: {
      async reserve(account, address) {
        if (!joined && !left) await join();
        if (changed()) await queued(catchUp);
        if (peers.owing) await answerNewcomers(); // checked here too: no await on the usual path
        // Alone on the store: decided and kept in memory, nothing written.
        if (peers.alone()) return reserveNow(account, address, true);
        // A refusal needs no lock (the busy-wait loop asks often); a lease is taken under it, so
        // that no two processes both take the last place in a budget.
        const first = reserveNow(account, address, false);
        if (!first.ok) return first;
        return locked(async () => {
          const r = reserveNow(account, address, true, true);
          if (!r.ok) return r;
          const lease = leases.get(r.id) as Lease;
          try {
            await append([leaseLine(r.id, lease)], false);
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
                if (!failure.written) await append([{ kind: 'failure', account: failure.account, address, at, lease: published ? id : undefined }]);
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
            await append([{ kind: 'success', account: forget ? account : undefined, ended: published ? id : undefined }], forget);
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
          await append([{ kind: 'nonce', nonce, nc, expiresAt }]);
          return true;
        }),
    },

    issuance: {
      take: (account, max, windowMs) =>
        locked(async () => {
          const t = now();
          if (!state.takeIssuance(account, max, windowMs, t)) return false;
          await append([{ kind: 'issued', account, at: t }]);
          return true;
        }),
    },
  };
}

function leaseLine(id: string, lease: Lease): LedgerLine {
  return { kind: 'lease', id, account: lease.account ?? null, address: lease.address, expiresAt: lease.expiresAt };
}
