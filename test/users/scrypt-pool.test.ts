// P-8: hashes run off the event loop, at a lower OS priority than it where the OS allows that.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { scryptSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker, type TransferListItem } from 'node:worker_threads';
import { HASH_THREAD_NICE, PROCESS_HASH_LIMIT, scryptKey } from '../../lib/users/scrypt-pool.js';

const OPTIONS = { N: 2 ** 10, r: 8, p: 1, maxmem: 32 * 1024 * 1024 };

test('P-8 scryptKey gives the same keys as crypto.scryptSync, many at once', async () => {
  const inputs = Array.from({ length: 12 }, (_, i) => [Buffer.from(`password ${i} ü`), Buffer.from(`salt-${i}-salt-${i}`)] as const);
  const keys = await Promise.all(inputs.map(([password, salt]) => scryptKey(password, salt, 32, OPTIONS)));
  inputs.forEach(([password, salt], i) => assert.deepEqual(keys[i], scryptSync(password, salt, 32, OPTIONS)));
  assert.ok(keys.every((key) => Buffer.isBuffer(key) && key.length === 32));
});

test('P-8 scryptKey rejects impossible parameters with crypto’s error, and keeps working after', async () => {
  await assert.rejects(scryptKey(Buffer.from('pw'), Buffer.from('saltsalt'), 32, { N: 2 ** 14, r: 8, p: 1, maxmem: 1024 }), (error: Error & { code?: string }) => {
    assert.match(error.message, /memory|scrypt|param/i);
    assert.equal(typeof error.code, 'string');
    return true;
  });
  const key = await scryptKey(Buffer.from('pw'), Buffer.from('saltsalt'), 16, OPTIONS);
  assert.deepEqual(key, scryptSync(Buffer.from('pw'), Buffer.from('saltsalt'), 16, OPTIONS));
});

test('P-8 on Linux the hashing threads run below the event loop’s priority (nice +10)', { skip: process.platform !== 'linux' }, async () => {
  await scryptKey(Buffer.from('pw'), Buffer.from('saltsalt'), 32, OPTIONS);
  // The worker that hashed stays parked for a while; read every thread's nice value (stat field 19).
  const nice = (tid: string): number => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  };
  const values = readdirSync('/proc/self/task').map(nice);
  assert.equal(nice(String(process.pid)), 0, 'the event loop keeps its priority');
  assert.ok(values.includes(HASH_THREAD_NICE), `a thread at nice ${HASH_THREAD_NICE}; saw ${values.join(' ')}`);
});

test('P-8 parked hashing threads do not keep a process alive', () => {
  const script = `import { scryptKey } from './lib/users/scrypt-pool.ts';
const key = await scryptKey(Buffer.from('pw'), Buffer.from('saltsalt'), 32, { N: 1024, r: 8, p: 1 });
console.log(key.length);`;
  const started = Date.now();
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(import.meta.dirname, '..', '..'), encoding: 'utf8', timeout: 8_000 });
  assert.equal(out.trim(), '32');
  assert.ok(Date.now() - started < 8_000);
});

/** Records the workers the pool posts to (and can terminate the next one right after its post). */
function watchWorkers(t: import('node:test').TestContext) {
  const seen: Worker[] = [];
  const original = Worker.prototype.postMessage;
  const state = { killNext: false, seen };
  Worker.prototype.postMessage = function (this: Worker, message: unknown, transfer?: readonly TransferListItem[]) {
    if (!seen.includes(this)) seen.push(this);
    original.call(this, message, transfer as TransferListItem[]);
    if (state.killNext) {
      state.killNext = false;
      void this.terminate();
    }
  };
  t.after(() => {
    Worker.prototype.postMessage = original;
  });
  return state;
}

const want = (password: string) => scryptSync(password, 'saltsalt', 32, OPTIONS);
const run = (password: string) => scryptKey(Buffer.from(password), Buffer.from('saltsalt'), 32, OPTIONS);

test('P-8 a hashing thread that dies mid-hash: that hash still completes, and so do the next ones', { skip: process.platform !== 'linux' }, async (t) => {
  const workers = watchWorkers(t);
  workers.killNext = true;
  assert.deepEqual(await run('mid-hash'), want('mid-hash'));
  assert.deepEqual(await run('after'), want('after'));
});

test('P-8 a parked hashing thread that died is not reused (the next hash does not hang)', { skip: process.platform !== 'linux' }, async (t) => {
  const workers = watchWorkers(t);
  await run('first');
  for (const worker of workers.seen) await worker.terminate();
  const next = await Promise.race([run('second'), new Promise((resolve) => setTimeout(() => resolve('hung'), 5_000))]);
  assert.deepEqual(next, want('second'));
});

test('P-8 at most PROCESS_HASH_LIMIT hashes run at once in the process (the libuv pool’s bound)', { skip: process.platform !== 'linux' }, async (t) => {
  const workers = watchWorkers(t);
  const passwords = Array.from({ length: PROCESS_HASH_LIMIT * 3 }, (_, i) => `p${i}`);
  const keys = await Promise.all(passwords.map(run));
  passwords.forEach((p, i) => assert.deepEqual(keys[i], want(p)));
  const alive = workers.seen.filter((w) => w.threadId >= 0);
  assert.ok(alive.length <= PROCESS_HASH_LIMIT, `${alive.length} hashing threads for a limit of ${PROCESS_HASH_LIMIT}`);
});
