import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createThrottle } from '../../lib/users/throttle.js';
import type { ThrottleOptions } from '../../lib/users/throttle.js';

function setup(options: ThrottleOptions = {}) {
  const clock = { t: 1_000_000 };
  const throttle = createThrottle({ now: () => clock.t, ...options });
  return { clock, throttle };
}

const OK = { ok: true } as const;
const wait = (retryAfterSeconds: number) => ({ ok: false, retryAfterSeconds }) as const;

test('P-8: five consecutive failures are free; beyond that the account waits 1 s', () => {
  const { clock, throttle } = setup();
  for (let i = 0; i < 4; i++) {
    throttle.fail('alice', '10.0.0.1');
    assert.deepEqual(throttle.check('alice', '10.0.0.1'), OK, `after failure ${i + 1}`);
  }
  throttle.fail('alice', '10.0.0.1');
  assert.deepEqual(throttle.check('alice', '10.0.0.1'), wait(1));
  // The account is throttled from any address (the lock is the account's, not the client's).
  assert.deepEqual(throttle.check('alice', '192.0.2.7'), wait(1));
  clock.t += 999;
  assert.deepEqual(throttle.check('alice', '10.0.0.1'), wait(1));
  clock.t += 1;
  assert.deepEqual(throttle.check('alice', '10.0.0.1'), OK);
});

test('P-8: the wait doubles per further failure, 1 s up to 15 minutes', () => {
  const { clock, throttle } = setup();
  for (let i = 0; i < 4; i++) throttle.fail('alice', `10.0.0.${i}`);
  const seen: number[] = [];
  for (let i = 0; i < 14; i++) {
    throttle.fail('alice', `10.0.1.${i}`);
    const decision = throttle.check('alice', '10.0.2.1');
    assert.equal(decision.ok, false);
    if (!decision.ok) seen.push(decision.retryAfterSeconds);
    clock.t += 900_000; // sit out the longest possible wait
  }
  assert.deepEqual(seen, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900]);
});

test('P-8: Retry-After counts down with the clock and is never below 1', () => {
  const { clock, throttle } = setup();
  for (let i = 0; i < 9; i++) throttle.fail('alice', `10.0.0.${i}`); // 5 free + 4 → 16 s
  assert.deepEqual(throttle.check('alice', 'x'), wait(16));
  clock.t += 10_500;
  assert.deepEqual(throttle.check('alice', 'x'), wait(6));
  clock.t += 5_499;
  assert.deepEqual(throttle.check('alice', 'x'), wait(1));
  clock.t += 1;
  assert.deepEqual(throttle.check('alice', 'x'), OK);
});

test('P-8: a success resets the account: five free failures again', () => {
  const { throttle } = setup();
  for (let i = 0; i < 7; i++) throttle.fail('alice', `10.0.0.${i}`);
  assert.equal(throttle.check('alice', '10.0.1.1').ok, false);
  throttle.succeed('alice');
  assert.deepEqual(throttle.check('alice', '10.0.1.1'), OK);
  for (let i = 0; i < 4; i++) throttle.fail('alice', `10.0.2.${i}`);
  assert.deepEqual(throttle.check('alice', '10.0.1.1'), OK);
  throttle.fail('alice', '10.0.2.9');
  assert.deepEqual(throttle.check('alice', '10.0.1.1'), wait(1));
});

test('P-8: accounts are independent, and unknown accounts are throttled like known ones', () => {
  const { throttle } = setup();
  for (let i = 0; i < 5; i++) throttle.fail('no-such-user', `10.0.0.${i}`);
  assert.deepEqual(throttle.check('no-such-user', '10.0.9.9'), wait(1));
  assert.deepEqual(throttle.check('alice', '10.0.9.9'), OK);
  throttle.succeed('never-seen'); // harmless
  assert.deepEqual(throttle.size(), { accounts: 1, addresses: 5 });
});

test('P-8: more than 50 failures from one address within 15 minutes → that address waits', () => {
  const { clock, throttle } = setup();
  // Password spraying: one guess per account, each 10 s apart.
  for (let i = 0; i < 50; i++) {
    assert.deepEqual(throttle.check(`user${i}`, '203.0.113.5'), OK, `attempt ${i + 1}`);
    throttle.fail(`user${i}`, '203.0.113.5');
    clock.t += 10_000;
  }
  // The first failure was 500 s ago: it leaves the window in 400 s.
  assert.deepEqual(throttle.check('fresh-account', '203.0.113.5'), wait(400));
  assert.deepEqual(throttle.check('fresh-account', '203.0.113.6'), OK);
  clock.t += 399_999;
  assert.equal(throttle.check('fresh-account', '203.0.113.5').ok, false);
  clock.t += 1;
  // One failure has left the window: one more attempt is allowed, then the next one leaves 10 s later.
  assert.deepEqual(throttle.check('fresh-account', '203.0.113.5'), OK);
  throttle.fail('fresh-account', '203.0.113.5');
  assert.deepEqual(throttle.check('another', '203.0.113.5'), wait(10));
});

test('P-8: a slow client that stays under 50 failures per 15 minutes is never throttled by address', () => {
  const { clock, throttle } = setup();
  for (let i = 0; i < 500; i++) {
    assert.deepEqual(throttle.check(`user${i}`, '203.0.113.5'), OK, `attempt ${i + 1}`);
    throttle.fail(`user${i}`, '203.0.113.5');
    clock.t += 18_001; // 900 s / 50, rounded up
  }
});

test('P-8: memory stays bounded: 1,000,000 distinct names and addresses keep ≤ maxEntries each', () => {
  const { throttle } = setup({ accountFreeFailures: 1, addressMaxFailures: 1 });
  for (let i = 0; i < 1_000_000; i++) {
    throttle.fail(`name-${i}`, `addr-${i}`);
    const size = throttle.size();
    if (size.accounts > 10_000 || size.addresses > 10_000) assert.fail(`over the bound at ${i}: ${JSON.stringify(size)}`);
  }
  // Eviction drops the least recently failed (a tenth at a time): the newest are still tracked.
  assert.ok(throttle.size().accounts >= 9_000);
  assert.equal(throttle.check('name-999999', 'elsewhere').ok, false);
  assert.equal(throttle.check('somebody', 'addr-999999').ok, false);
  assert.equal(throttle.check('name-0', 'addr-0').ok, true);
});

test('P-8: eviction forgets the least recently failed key first', () => {
  const { throttle } = setup({ maxEntries: 3, accountFreeFailures: 1 });
  throttle.fail('a', 'x');
  throttle.fail('b', 'x');
  throttle.fail('c', 'x');
  throttle.fail('a', 'x'); // a is now the most recent
  throttle.fail('d', 'x'); // evicts b
  assert.deepEqual(throttle.size(), { accounts: 3, addresses: 1 });
  assert.equal(throttle.check('b', 'y').ok, true);
  assert.equal(throttle.check('a', 'y').ok, false);
  assert.equal(throttle.check('c', 'y').ok, false);
  assert.equal(throttle.check('d', 'y').ok, false);
});

test('P-8: check() alone stores nothing', () => {
  const { throttle } = setup();
  for (let i = 0; i < 1000; i++) throttle.check(`name-${i}`, `addr-${i}`);
  assert.deepEqual(throttle.size(), { accounts: 0, addresses: 0 });
});

const badOptions: ReadonlyArray<readonly [label: string, options: ThrottleOptions]> = [
  ['maxEntries 0', { maxEntries: 0 }],
  ['accountFreeFailures -1', { accountFreeFailures: -1 }],
  ['baseDelayMs 1.5', { baseDelayMs: 1.5 }],
  ['maxDelayMs below baseDelayMs', { baseDelayMs: 2_000, maxDelayMs: 1_000 }],
  ['addressMaxFailures NaN', { addressMaxFailures: Number.NaN }],
  ['addressWindowMs Infinity', { addressWindowMs: Number.POSITIVE_INFINITY }],
];

for (const [label, options] of badOptions) {
  test(`P-8: createThrottle refuses ${label}`, () => {
    assert.throws(() => createThrottle(options), RangeError);
  });
}

test('P-8 IPv6 clients are throttled by their /64, IPv4 by the address', async () => {
  const { addressKey, createThrottle } = await import('../../lib/users/throttle.js');
  const cases: Array<[string, string]> = [
    ['203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::ffff:192.0.2.1', '0:0:0:0::/64'],
    ['2001:DB8:1:2::abcd', '2001:db8:1:2::/64'],
  ];
  for (const [address, key] of cases) assert.equal(addressKey(address), key, address);
  const t = createThrottle({ addressMaxFailures: 3, now: () => 0 });
  for (let i = 0; i < 3; i++) t.fail(`victim-${i}`, `2001:db8:1:2::${i + 1}`);
  assert.equal(t.check('someone-else', '2001:db8:1:2:ffff::9').ok, false, 'a sibling address in the /64 is throttled too');
  assert.equal(t.check('someone-else', '2001:db8:1:3::1').ok, true);
});
