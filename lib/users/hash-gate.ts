// Bounds a service's concurrent password hashing (CONTRACT P-8). At N=2^17 each hash
// holds 128 MiB; the process runs at most UV_THREADPOOL_SIZE (default 4) at once, and
// no more than one per CPU (scrypt-pool.ts). Beyond `concurrency` admitted hashes,
// callers wait in a bounded queue; when that is full they are refused at once (the
// caller answers 503 with Retry-After) instead of piling up memory.
//
// The queue is shared out by caller (an address): callers take turns at the free slots, and a
// caller who finds the queue full takes the newest place of the one holding the most, when that
// one holds at least two more than it. So one address's flood of guesses fills the queue only
// while nobody else waits: a review's 50 connections of wrong Basic credentials from one address
// kept another address's password change getting 503 for 20 s, first come, first served.

import { ServiceError } from '../errors.js';
import { process } from '../process.js';

export interface HashGateOptions {
  /** Hashes running at once. @default Number(process.env.UV_THREADPOOL_SIZE) || 4 */
  readonly concurrency?: number;
  /** Hashes waiting for a slot. @default 4 × concurrency */
  readonly queueLimit?: number;
}

export interface HashGate {
  /**
   * Runs `task` when a slot is free; rejects with ServiceError ERR_HASH_BUSY when the queue is full
   * and `caller` may not take another's place in it. `caller` names who asks (an address key); tasks
   * without one share one turn.
   */
  run<T>(task: () => Promise<T>, caller?: string): Promise<T>;
  readonly active: number;
  readonly queued: number;
}

/** A rejection of {@link HashGate.run} because no slot and no queue place is free (→ 503, P-8)? */
export function isHashBusy(error: unknown): boolean {
  return error instanceof ServiceError && error.code === 'ERR_HASH_BUSY';
}

/** Creates a gate; its counters and queue live in the returned object only. */
export function createHashGate(options: HashGateOptions = {}): HashGate {
  const concurrency = integer(
    options.concurrency ?? (Number(process.env['UV_THREADPOOL_SIZE']) || 4),
    'concurrency',
    1,
  );
  const queueLimit = integer(options.queueLimit ?? concurrency * 4, 'queueLimit', 0);
  let active = 0;
  // Each caller's waiting tasks, in the order callers take their turns: the first caller's oldest
  // task starts next, and the caller goes to the back if it has more (round robin).
  const lines = new Map<string, Waiter[]>();
  // holding[n]: the callers with n tasks waiting; `most` the largest such n (0 when none wait).
  const holding: Array<Set<string>> = [];
  let most = 0;
  let waiting = 0;

  // Caller `caller` goes from `from` tasks waiting to `to` (one more or one fewer).
  function recount(caller: string, from: number, to: number): void {
    if (from > 0) holding[from]?.delete(caller);
    if (to > 0) (holding[to] ??= new Set()).add(caller);
    if (to > most) most = to;
    while (most > 0 && (holding[most]?.size ?? 0) === 0) most--;
  }

  function enqueue(caller: string, waiter: Waiter): void {
    let line = lines.get(caller);
    if (line === undefined) lines.set(caller, (line = []));
    line.push(waiter);
    waiting++;
    recount(caller, line.length - 1, line.length);
  }

  // Takes `caller`'s oldest task (its turn) or its newest (its place given up) off the queue; a
  // caller with more waiting goes to the back of the turns.
  function dequeue(caller: string, line: Waiter[], newest: boolean): Waiter {
    const waiter = (newest ? line.pop() : line.shift()) as Waiter;
    lines.delete(caller);
    if (line.length > 0) lines.set(caller, line);
    waiting--;
    recount(caller, line.length + 1, line.length);
    return waiter;
  }

  function release(): void {
    active--;
    const first = lines.entries().next();
    if (!first.done) dequeue(first.value[0], first.value[1], false).start();
  }

  function runNow<T>(task: () => Promise<T>): Promise<T> {
    active++;
    let running: Promise<T>;
    try {
      running = task();
    } catch (error) {
      release(); // a task that throws synchronously still releases its slot
      return Promise.reject(error as Error);
    }
    return running.then(
      (value) => (release(), value),
      (error: unknown) => {
        release();
        throw error;
      },
    );
  }

  return {
    run<T>(task: () => Promise<T>, caller = ''): Promise<T> {
      if (active < concurrency) return runNow(task); // the common case, without a queue's promise
      if (waiting >= queueLimit) {
        const mine = lines.get(caller)?.length ?? 0;
        if (queueLimit === 0 || most < mine + 2) return Promise.reject(busy());
        // The newest task of a caller holding the most gives its place up.
        const heaviest = (holding[most] as Set<string>).values().next().value as string;
        const evicted = dequeue(heaviest, lines.get(heaviest) as Waiter[], true);
        evicted.refuse(busy());
      }
      return new Promise<T>((resolve, reject) => {
        enqueue(caller, { start: () => void runNow(task).then(resolve, reject), refuse: reject });
      });
    },
    get active() {
      return active;
    },
    get queued() {
      return waiting;
    },
  };
}

interface Waiter {
  readonly start: () => void;
  readonly refuse: (error: ServiceError) => void;
}

function busy(): ServiceError {
  return new ServiceError('ERR_HASH_BUSY', 'too many password hashes in progress');
}

function integer(value: number, name: string, min: number): number {
  if (Number.isSafeInteger(value) && value >= min) return value;
  throw new RangeError(`hash gate: ${name} must be an integer of at least ${min}, got ${String(value)}`);
}
