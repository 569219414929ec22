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

test('P-8: callers take turns at free slots: one caller with many waiting does not go before another\'s first', async () => {
  const gate = createHashGate({ concurrency: 1, queueLimit: 10 });
  const order: string[] = [];
  const slot = deferred<void>();
  const runs = [gate.run(() => slot.promise, 'flood')];
  for (let i = 1; i <= 4; i++) runs.push(gate.run(async () => void order.push(`flood ${i}`), 'flood'));
  runs.push(gate.run(async () => void order.push('other 1'), 'other'));
  runs.push(gate.run(async () => void order.push('other 2'), 'other'));
  runs.push(gate.run(async () => void order.push('anonymous'))); // no caller: a turn of its own
  slot.resolve();
  await Promise.all(runs);
  assert.deepEqual(order, ['flood 1', 'other 1', 'anonymous', 'flood 2', 'other 2', 'flood 3', 'flood 4']);
});

test('P-8: a caller that finds the queue full takes the newest place of the caller holding the most, which gets ERR_HASH_BUSY', async () => {
  const gate = createHashGate({ concurrency: 1, queueLimit: 3 });
  const slot = deferred<void>();
  const ran: string[] = [];
  const running = gate.run(() => slot.promise, 'flood');
  const flood = [1, 2, 3].map((i) => gate.run(async () => void ran.push(`flood ${i}`), 'flood'));
  // The same caller is refused, as before: its own places are not given to itself.
  await assert.rejects(gate.run(async () => undefined, 'flood'), { code: 'ERR_HASH_BUSY' });
  // Another caller gets a place: the flood's newest gives it up.
  const other = gate.run(async () => void ran.push('other'), 'other');
  await assert.rejects(flood[2] as Promise<void>, { code: 'ERR_HASH_BUSY' });
  assert.equal(gate.queued, 3);
  // The flood holds 2, the other 1: a place changes hands only from a caller holding at least two
  // more, so the other's second is refused, and a third caller's first takes the flood's newest.
  await assert.rejects(gate.run(async () => undefined, 'other'), { code: 'ERR_HASH_BUSY' });
  const third = gate.run(async () => void ran.push('third'), 'third');
  await assert.rejects(flood[1] as Promise<void>, { code: 'ERR_HASH_BUSY' });
  // One each: everyone is refused now.
  for (const caller of ['flood', 'other', 'third', 'fourth']) await assert.rejects(gate.run(async () => undefined, caller), { code: 'ERR_HASH_BUSY' });
  slot.resolve();
  await Promise.all([running, flood[0], other, third]);
  // A caller that gave a place up goes to the back of the turns.
  assert.deepEqual(ran, ['other', 'flood 1', 'third']);
  await settle();
  assert.equal(gate.active, 0);
  assert.equal(gate.queued, 0);
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
