import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceError } from '../../lib/errors.js';
import { createHashGate, isHashBusy } from '../../lib/users/hash-gate.js';
import type { HashGateOptions } from '../../lib/users/hash-gate.js';

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

// Lets queued starters and .finally() handlers run.
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('P-8: at most `concurrency` tasks run; then up to `queueLimit` wait; then rejection at once', async () => {
  const gate = createHashGate({ concurrency: 2, queueLimit: 1 });
  const tasks = [deferred<string>(), deferred<string>(), deferred<string>()];
  const started: number[] = [];
  const results = tasks.map((d, i) => gate.run(() => (started.push(i), d.promise)));
  await settle();
  assert.deepEqual(started, [0, 1]);
  assert.equal(gate.active, 2);
  assert.equal(gate.queued, 1);

  await assert.rejects(gate.run(async () => 'never'), (error: unknown) => {
    assert.ok(error instanceof ServiceError);
    assert.equal(error.code, 'ERR_HASH_BUSY');
    assert.ok(isHashBusy(error));
    return true;
  });

  tasks[0]?.resolve('a');
  assert.equal(await results[0], 'a');
  await settle();
  assert.deepEqual(started, [0, 1, 2]);
  assert.equal(gate.active, 2);
  assert.equal(gate.queued, 0);

  tasks[1]?.resolve('b');
  tasks[2]?.resolve('c');
  assert.deepEqual(await Promise.all(results), ['a', 'b', 'c']);
  await settle();
  assert.equal(gate.active, 0);
});

test('P-8: a failing task passes its error on and frees its slot', async () => {
  const gate = createHashGate({ concurrency: 1, queueLimit: 2 });
  const boom = new Error('boom');
  const first = gate.run(() => Promise.reject(boom));
  const second = gate.run(() => {
    throw new TypeError('synchronous throw');
  });
  const third = gate.run(async () => 3);
  await assert.rejects(first, (e) => e === boom);
  await assert.rejects(second, TypeError);
  assert.equal(await third, 3);
  await settle();
  assert.equal(gate.active, 0);
  assert.equal(gate.queued, 0);
});

test('P-8: waiting tasks start in arrival order', async () => {
  const gate = createHashGate({ concurrency: 1, queueLimit: 10 });
  const order: number[] = [];
  const gateOpen = deferred<void>();
  const runs = [gate.run(() => gateOpen.promise)];
  for (let i = 1; i <= 5; i++) runs.push(gate.run(async () => void order.push(i)));
  gateOpen.resolve();
  await Promise.all(runs);
  assert.deepEqual(order, [1, 2, 3, 4, 5]);
});

test('P-8: queueLimit 0 refuses as soon as every slot is busy', async () => {
  const gate = createHashGate({ concurrency: 1, queueLimit: 0 });
  const busy = deferred<void>();
  const running = gate.run(() => busy.promise);
  await assert.rejects(gate.run(async () => undefined), { code: 'ERR_HASH_BUSY' });
  busy.resolve();
  await running;
  await settle();
  assert.equal(await gate.run(async () => 'free again'), 'free again');
});

test('P-8: under load the number running never exceeds the bound', async () => {
  const gate = createHashGate({ concurrency: 3, queueLimit: 100 });
  let running = 0;
  let peak = 0;
  const task = async (): Promise<void> => {
    running++;
    peak = Math.max(peak, running);
    await settle();
    running--;
  };
  await Promise.all(Array.from({ length: 50 }, () => gate.run(task)));
  assert.equal(peak, 3);
});

test('P-8: by default the bound is the libuv pool size (UV_THREADPOOL_SIZE or 4), queue 4× that', async (t) => {
  const saved = process.env['UV_THREADPOOL_SIZE'];
  t.after(() => {
    if (saved === undefined) delete process.env['UV_THREADPOOL_SIZE'];
    else process.env['UV_THREADPOOL_SIZE'] = saved;
  });
  for (const [env, expected] of [[undefined, 4], ['6', 6], ['not a number', 4]] as const) {
    if (env === undefined) delete process.env['UV_THREADPOOL_SIZE'];
    else process.env['UV_THREADPOOL_SIZE'] = env;
    const gate = createHashGate();
    const block = deferred<void>();
    const runs: Promise<void>[] = [];
    for (let i = 0; i < expected * 5; i++) runs.push(gate.run(() => block.promise));
    await settle();
    assert.equal(gate.active, expected, `active with UV_THREADPOOL_SIZE=${String(env)}`);
    assert.equal(gate.queued, expected * 4);
    await assert.rejects(gate.run(async () => undefined), { name: 'ServiceError', code: 'ERR_HASH_BUSY' });
    block.resolve();
    await Promise.all(runs);
  }
});

const badOptions: ReadonlyArray<readonly [label: string, options: HashGateOptions]> = [
  ['concurrency 0', { concurrency: 0 }],
  ['concurrency 1.5', { concurrency: 1.5 }],
  ['queueLimit -1', { queueLimit: -1 }],
  ['queueLimit NaN', { queueLimit: Number.NaN }],
];

for (const [label, options] of badOptions) {
  test(`P-8: createHashGate refuses ${label}`, () => {
    assert.throws(() => createHashGate(options), RangeError);
  });
}
