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

test('memo: a repeated key is computed once', () => {
  const { memo, calls } = counted(4);
  assert.equal(memo('a'), 'A');
  assert.equal(memo('a'), 'A');
  assert.deepEqual(calls, ['a']);
});

test('memo: bounded, at most `size` keys kept, recently used keys survive a generation change', () => {
  const { memo, calls } = counted(4);
  memo('a');
  memo('b'); // young {a, b}: full
  memo('c'); // old {a, b}, young {c}
  memo('a'); // promoted from old
  memo('d'); // young full again: old {c, a}, young {d}
  assert.deepEqual(calls, ['a', 'b', 'c', 'd']);
  memo('b'); // b was dropped with the first old generation
  memo('a');
  assert.deepEqual(calls, ['a', 'b', 'c', 'd', 'b']);
});

test('memo: 10,000 distinct keys keep at most `size` remembered (a client cannot grow it)', () => {
  const { memo, calls } = counted(64);
  for (let i = 0; i < 10_000; i++) memo(`k${i}`);
  calls.length = 0;
  for (let i = 0; i < 10_000; i++) memo(`k${i}`);
  assert.ok(calls.length >= 10_000 - 64, `only the last 64 keys may be remembered, ${10_000 - calls.length} were`);
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
