// Where scrypt runs (CONTRACT P-8). `crypto.scrypt` runs on the libuv pool at the event loop's own
// OS priority: on a small machine four hashes at once take the cores from the thread that answers
// every other request (GET p99 rose 2.6x on 2 cores while 8 password changes ran, bench/README.md),
// and every asynchronous fs call of the store queues behind them in the same pool.
//
// On Linux each hash runs instead on a worker thread of this module's own, which lowers its own
// scheduling priority to nice +10 (the nice value is per thread on Linux): hashes still get every
// idle cycle, and yield to the event loop whenever it has work. If the priority cannot be lowered,
// the worker hashes at normal priority (as the libuv pool did). As with the libuv pool, at most
// UV_THREADPOOL_SIZE (default 4) hashes run at once in the whole process, and no more than there
// are CPUs: scrypt is CPU-bound, so more would only share the cores and hold 128 MiB each. The
// services' gates (hash-gate.ts) still decide how many are admitted; admitted hashes beyond this
// limit wait their turn here. Elsewhere, or when workers cannot be started, `crypto.scrypt` runs
// as before.
import { Buffer } from 'node:buffer';
import { scrypt, scryptSync, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { process } from '../process.js';

/** The hashing threads' nice value: well below the event loop (0), yet not starved by other processes. */
export const HASH_THREAD_NICE = 10;
/** Hashes at once in the process: the libuv pool's size (the bound when scrypt ran there), at most one per CPU. */
export const PROCESS_HASH_LIMIT = Math.min(
  1024,
  Math.max(1, Math.trunc(Number(process.env['UV_THREADPOOL_SIZE'])) || 4),
  Math.max(1, availableParallelism()),
);
/**
 * Work (N·r·p) up to which a hash runs on the calling thread: at N=16, r=8 scrypt takes about 50 µs,
 * less than the CPU of handing it to a worker and back (measured 150 µs across both threads, most
 * of it waking the worker and the garbage of the messages). Only test and benchmark costs are this
 * low; the default is N=2^17.
 */
const INLINE_WORK = 16 * 8;
/** An idle worker is ended after this long (its isolate is about 8 MiB). */
const IDLE_MS = 10_000;
/** Workers that die or fail to start this many times in a row turn the workers off for the process. */
const MAX_FAILURES = 3;

// CommonJS, evaluated as the worker's main script: nothing to resolve on disk, under any loader.
// setPriority(pid 0) is setpriority(2) on the calling thread: on Linux that is this thread alone.
// The password bytes arrive in a buffer of their own (transferred) and are zeroed after use.
const WORKER_SOURCE = `'use strict';
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try { require('node:os').setPriority(${HASH_THREAD_NICE}); } catch {}
parentPort.on('message', (m) => {
  try {
    const key = new Uint8Array(scryptSync(m.input, m.salt, m.keyLength, m.options));
    parentPort.postMessage({ key }, [key.buffer]);
  } catch (error) {
    parentPort.postMessage({ error: { message: String(error && error.message), code: error && error.code } });
  } finally {
    m.input.fill(0);
  }
});
`;

interface Reply {
  readonly key?: Uint8Array;
  readonly error?: { readonly message: string; readonly code?: string };
}

let workersOn = process.platform === 'linux';
let failures = 0;
let running = 0;
const waiting: Array<() => void> = [];
const idle: Worker[] = [];
const idleTimers = new Map<Worker, NodeJS.Timeout>();

/** Hashes computed by this process and their work (N·r·p summed), for metrics and tests. */
const stats = { count: 0, work: 0 };

/** A snapshot of the process's scrypt count and work so far (they only grow). */
export function scryptStats(): { readonly count: number; readonly work: number } {
  return { count: stats.count, work: stats.work };
}

/** scrypt into `keyLength` bytes, off the event loop, at a lower priority where the OS allows it. */
export function scryptKey(input: Buffer, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  const work = (options.N ?? 16_384) * (options.r ?? 8) * (options.p ?? 1);
  // Too small to be worth a worker, and done before anything else could start: nothing to bound.
  if (work <= INLINE_WORK) {
    stats.count++;
    stats.work += work;
    try {
      return Promise.resolve(scryptSync(input, salt, keyLength, options));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }
  return new Promise<Buffer>((resolve, reject) => {
    const start = (): void => {
      running++;
      stats.count++;
      stats.work += work;
      hash(input, salt, keyLength, options)
        .then(resolve, reject)
        .finally(() => {
          running--;
          waiting.shift()?.();
        });
    };
    if (running < PROCESS_HASH_LIMIT) start();
    else waiting.push(start);
  });
}

function hash(input: Buffer, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  const worker = workersOn ? acquire() : undefined;
  if (worker === undefined) return libuvScrypt(input, salt, keyLength, options);
  // Copies in buffers of their own: a Buffer's bytes may sit in Node's shared 8 KiB pool next to
  // other requests' secrets, and posting a view clones its whole ArrayBuffer.
  const bytes = new Uint8Array(input);
  const saltBytes = new Uint8Array(salt);
  return new Promise<Buffer>((resolve, reject) => {
    const detach = (): void => {
      worker.off('message', onMessage);
      worker.off('messageerror', onFailure);
      worker.off('error', onFailure);
      worker.off('exit', onFailure);
    };
    const onMessage = (reply: Reply): void => {
      detach();
      failures = 0;
      park(worker);
      if (reply.key !== undefined) resolve(Buffer.from(reply.key.buffer, reply.key.byteOffset, reply.key.byteLength));
      else reject(Object.assign(new Error(reply.error?.message ?? 'scrypt failed'), { code: reply.error?.code }));
    };
    // A worker that dies or fails mid-hash is not reused; this hash runs on the libuv pool.
    const onFailure = (): void => {
      detach();
      if (++failures >= MAX_FAILURES) workersOn = false;
      forget(worker);
      void worker.terminate();
      libuvScrypt(input, salt, keyLength, options).then(resolve, reject);
    };
    worker.on('message', onMessage);
    worker.on('messageerror', onFailure);
    worker.on('error', onFailure);
    worker.on('exit', onFailure);
    worker.postMessage({ input: bytes, salt: saltBytes, keyLength, options }, [bytes.buffer, saltBytes.buffer]);
  });
}

function acquire(): Worker | undefined {
  for (let worker = idle.pop(); worker !== undefined; worker = idle.pop()) {
    clearTimeout(idleTimers.get(worker));
    idleTimers.delete(worker);
    if (worker.threadId < 0) continue; // exited while parked
    worker.ref();
    return worker;
  }
  try {
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], stdout: false, stderr: false });
    // For its whole life: a parked worker that dies is dropped, and its errors never go unhandled.
    worker.on('exit', () => forget(worker));
    worker.on('error', () => forget(worker));
    return worker;
  } catch {
    workersOn = false;
    return undefined;
  }
}

/** Parks a worker: it no longer keeps the process alive, and ends after IDLE_MS unused. */
function park(worker: Worker): void {
  worker.unref();
  idle.push(worker);
  const timer = setTimeout(() => {
    forget(worker);
    void worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idleTimers.set(worker, timer);
}

function forget(worker: Worker): void {
  clearTimeout(idleTimers.get(worker));
  idleTimers.delete(worker);
  const at = idle.indexOf(worker);
  if (at >= 0) idle.splice(at, 1);
}

function libuvScrypt(input: Buffer, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(input, salt, keyLength, options, (error, key) => {
      if (error === null) resolve(key);
      else reject(error);
    });
  });
}
