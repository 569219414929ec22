// Where scrypt runs (CONTRACT P-8). `crypto.scrypt` runs on the libuv pool at the event loop's own
// OS priority: on a small machine four hashes at once take the cores from the thread that answers
// every other request (GET p99 rose 2.6x on 2 cores while 8 password changes ran, bench/README.md),
// and every asynchronous fs call of the store queues behind them in the same pool.
//
// On Linux each hash runs instead on a worker thread of this module's own, which lowers its own
// scheduling priority (nice +10; the nice value is per thread on Linux): hashes still get every
// idle cycle, and yield to the event loop whenever it has work. The hashing gate (hash-gate.ts)
// still decides how many run at once. Where a thread's priority cannot be set (other systems), or a
// worker cannot be started, `crypto.scrypt` runs as before.
import { scrypt, type ScryptOptions } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/** The hashing threads' nice value: well below the event loop (0), not starved by other processes. */
export const HASH_THREAD_NICE = 10;
/** An idle worker is ended after this long (its isolate is about 10 MiB). */
const IDLE_MS = 10_000;
/** More hashes at once than this (the gate normally bounds them far lower) use crypto.scrypt. */
const MAX_WORKERS = 64;

// CommonJS, evaluated as the worker's main script: nothing to resolve on disk, under any loader.
const WORKER_SOURCE = `'use strict';
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try {
  // '/proc/thread-self' links to '<pid>/task/<tid>': this thread's id, which setpriority(2) takes.
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) require('node:os').setPriority(tid, ${HASH_THREAD_NICE});
} catch {}
parentPort.on('message', (m) => {
  try {
    parentPort.postMessage({ key: scryptSync(m.input, m.salt, m.keyLength, m.options) });
  } catch (error) {
    parentPort.postMessage({ error: { message: String(error && error.message), code: error && error.code } });
  }
});
`;

interface Reply {
  readonly key?: Uint8Array;
  readonly error?: { readonly message: string; readonly code?: string };
}

const useWorkers = process.platform === 'linux';
const idle: Worker[] = [];
const idleTimers = new Map<Worker, NodeJS.Timeout>();
let busy = 0;

/** scrypt into `keyLength` bytes, off the event loop, at a lower priority where the OS allows it. */
export function scryptKey(input: Buffer, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  const worker = useWorkers && busy < MAX_WORKERS ? acquire() : undefined;
  if (worker === undefined) return libuvScrypt(input, salt, keyLength, options);
  busy++;
  return new Promise<Buffer>((resolve, reject) => {
    const settle = (): void => {
      busy--;
      worker.off('message', onMessage);
      worker.off('error', onFailure);
      worker.off('exit', onFailure);
    };
    const onMessage = (reply: Reply): void => {
      settle();
      release(worker);
      if (reply.key !== undefined) resolve(Buffer.from(reply.key.buffer, reply.key.byteOffset, reply.key.byteLength));
      else reject(Object.assign(new Error(reply.error?.message ?? 'scrypt failed'), { code: reply.error?.code }));
    };
    // A worker that dies mid-hash (out of memory, terminated) is not reused; the hash runs on libuv.
    const onFailure = (): void => {
      settle();
      void worker.terminate();
      libuvScrypt(input, salt, keyLength, options).then(resolve, reject);
    };
    worker.on('message', onMessage);
    worker.once('error', onFailure);
    worker.once('exit', onFailure);
    worker.postMessage({ input, salt, keyLength, options });
  });
}

function acquire(): Worker | undefined {
  const reused = idle.pop();
  if (reused !== undefined) {
    clearTimeout(idleTimers.get(reused));
    idleTimers.delete(reused);
    reused.ref();
    return reused;
  }
  try {
    return new Worker(WORKER_SOURCE, { eval: true, stdout: false, stderr: false });
  } catch {
    return undefined;
  }
}

/** Parks a worker: it no longer keeps the process alive, and ends after IDLE_MS unused. */
function release(worker: Worker): void {
  worker.unref();
  idle.push(worker);
  const timer = setTimeout(() => {
    idleTimers.delete(worker);
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
    void worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idleTimers.set(worker, timer);
}

function libuvScrypt(input: Buffer, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(input, salt, keyLength, options, (error, key) => {
      if (error === null) resolve(key);
      else reject(error);
    });
  });
}
