// Bounds a service's concurrent password hashing (CONTRACT P-8). At N=2^17 each hash
// holds 128 MiB; the process runs at most UV_THREADPOOL_SIZE (default 4) at once, and
// no more than one per CPU (scrypt-pool.ts). Beyond `concurrency` admitted hashes,
// callers wait in a bounded queue; when that is full they are refused at once (the
// caller answers 503 with Retry-After) instead of piling up memory.

import { ServiceError } from '../errors.js';

export interface HashGateOptions {
  /** Hashes running at once. @default Number(process.env.UV_THREADPOOL_SIZE) || 4 */
  readonly concurrency?: number;
  /** Hashes waiting for a slot. @default 4 × concurrency */
  readonly queueLimit?: number;
}

export interface HashGate {
  /** Runs `task` when a slot is free; rejects with ServiceError ERR_HASH_BUSY when the queue is full. */
  run<T>(task: () => Promise<T>): Promise<T>;
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
  const waiting: Array<() => void> = []; // FIFO of starters

  function release(): void {
    active--;
    const next = waiting.shift();
    if (next !== undefined) next();
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
    run<T>(task: () => Promise<T>): Promise<T> {
      if (active < concurrency) return runNow(task); // the common case, without a queue's promise
      if (waiting.length >= queueLimit) return Promise.reject(new ServiceError('ERR_HASH_BUSY', 'too many password hashes in progress'));
      return new Promise<T>((resolve, reject) => {
        waiting.push(() => void runNow(task).then(resolve, reject));
      });
    },
    get active() {
      return active;
    },
    get queued() {
      return waiting.length;
    },
  };
}

function integer(value: number, name: string, min: number): number {
  if (Number.isSafeInteger(value) && value >= min) return value;
  throw new RangeError(`hash gate: ${name} must be an integer of at least ${min}, got ${String(value)}`);
}
