// P-8's numbers (lib/store/throttle-policy.ts): a policy given by a programmer is checked loudly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ThrottlePolicy } from '../../lib/store/ledgers.js';
import { lockMs, resolveThrottlePolicy } from '../../lib/store/throttle-policy.js';

const badOptions: ReadonlyArray<readonly [label: string, options: Partial<ThrottlePolicy>]> = [
  ['accountFreeFailures -1', { accountFreeFailures: -1 }],
  ['baseDelayMs 1.5', { baseDelayMs: 1.5 }],
  ['maxDelayMs below baseDelayMs', { baseDelayMs: 2_000, maxDelayMs: 1_000 }],
  ['addressMaxFailures NaN', { addressMaxFailures: Number.NaN }],
  ['addressWindowMs Infinity', { addressWindowMs: Number.POSITIVE_INFINITY }],
  ['leaseMs 0', { leaseMs: 0 }],
];

for (const [label, options] of badOptions) {
  test(`P-8: the throttle policy refuses ${label}`, () => {
    assert.throws(() => resolveThrottlePolicy(options), RangeError);
  });
}

test('P-8: the wait after n failures: none within the free ones, then the base doubled up to the maximum', () => {
  const policy = resolveThrottlePolicy();
  assert.deepEqual(
    Array.from({ length: 17 }, (_, failures) => lockMs(policy, failures)),
    [0, 0, 0, 0, 0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 900_000, 900_000],
  );
  assert.equal(lockMs(policy, 10_000), 900_000);
});
