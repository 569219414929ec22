import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMemo } from '../lib/memo.js';

function counted(size: number, maxKeyLength = 100) {
  const calls: string[] = [];
  const memo = createMemo((key) => {
    calls.push(key);
    if (key === 'bad') throw new Error('refused');
    return key.toUpperCase();
  }, { size, maxKeyLength });
  return { memo, calls };
}

test('memo: a key is remembered the second time it is asked for, then never computed again', () => {
  const { memo, calls } = counted(4);
  assert.equal(memo('a'), 'A');
  assert.equal(memo('b'), 'B');
  assert.equal(memo('a'), 'A'); // second time: computed and remembered
  assert.equal(memo('b'), 'B');
  assert.equal(memo('a'), 'A');
  assert.equal(memo('b'), 'B');
  assert.deepEqual(calls, ['a', 'b', 'a', 'b']);
});

test('memo: the same key asked twice in a row is computed once', () => {
  const { memo, calls } = counted(4);
  assert.equal(memo('a'), 'A');
  assert.equal(memo('a'), 'A');
  assert.deepEqual(calls, ['a']);
});

/** Asks for each key twice, apart, so that each is remembered (the doorkeeper lets it in). */
function remember(memo: (key: string) => string, keys: readonly string[]): void {
  for (const key of keys) {
    memo(key);
    memo('-'); // another key between, so the repeat is not the last key asked
    memo(key);
  }
}

test('memo: bounded, at most `size` keys kept, recently used keys survive a generation change', () => {
  const { memo, calls } = counted(4);
  remember(memo, ['a', 'b']); // young {a, b} ('-' is remembered too: young {a, -} → old, young {b, …})
  calls.length = 0;
  for (let i = 0; i < 3; i++) memo('b');
  assert.deepEqual(calls, []);
  remember(memo, ['c', 'd', 'e']);
  calls.length = 0;
  memo('a'); // pushed out by the later generations
  memo('e');
  assert.deepEqual(calls, ['a']);
});

test('memo: keys asked for in turn are all remembered, up to a generation and one (half of `size`, plus one)', () => {
  for (const [size, count] of [
    [2, 2],
    [256, 129],
  ] as const) {
    const { memo, calls } = counted(size);
    const keys = Array.from({ length: count }, (_, i) => `k${i}`);
    for (let round = 0; round < 5; round++) for (const key of keys) memo(key);
    calls.length = 0;
    for (const key of keys) memo(key);
    assert.deepEqual(calls, [], `size ${size}, ${count} keys in turn`);
  }
});

test('memo: 10,000 distinct keys keep at most `size` remembered (a client cannot grow it)', () => {
  const { memo, calls } = counted(64);
  for (let i = 0; i < 10_000; i++) remember(memo, [`k${i}`]);
  calls.length = 0;
  for (let i = 0; i < 10_000; i++) memo(`k${i}`);
  assert.ok(calls.length >= 10_000 - 64, `only the last 64 keys may be remembered, ${10_000 - calls.length} were`);
});

test('memo: a flood of keys asked for once does not push out the keys asked for again and again', () => {
  const { memo, calls } = counted(8);
  remember(memo, ['hot1', 'hot2']);
  for (let i = 0; i < 10_000; i++) {
    memo(`once${i}`);
    if (i % 100 === 0) memo(i % 200 === 0 ? 'hot1' : 'hot2');
  }
  calls.length = 0;
  memo('hot1');
  memo('hot2');
  memo('once1');
  assert.deepEqual(calls, ['once1'], 'the repeated keys are still remembered; a key asked once is computed again');
});

test('memo: keys longer than maxKeyLength are computed every time, never remembered', () => {
  const { memo, calls } = counted(8, 3);
  memo('long');
  memo('long');
  assert.deepEqual(calls, ['long', 'long']);
});

test('memo: a computation that throws remembers nothing and throws again', () => {
  const { memo, calls } = counted(8);
  assert.throws(() => memo('bad'), /refused/);
  assert.throws(() => memo('bad'), /refused/);
  assert.deepEqual(calls, ['bad', 'bad']);
});

test('memo: size 0 turns it off', () => {
  const { memo, calls } = counted(0);
  memo('a');
  memo('a');
  assert.deepEqual(calls, ['a', 'a']);
});
