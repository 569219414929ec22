// P-8 on the file store's throttle ledger (lib/store/file/ledger-file.ts), with a fake clock.
// The ledger tests that every store must pass are in the store conformance suite.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createFileLedgers } from '../../lib/store/file/ledger-file.js';
import type { ThrottlePolicy } from '../../lib/store/ledgers.js';
import { resolveThrottlePolicy } from '../../lib/store/throttle-policy.js';
import { addressKey } from '../../lib/users/throttle.js';
import { tempDir } from '../helpers/tmp.js';

type Options = Partial<ThrottlePolicy> & { readonly maxEntries?: number };

/** The ledger seen through the questions these tests ask: fail, succeed, check (reserve and let go). */
async function setup(t: TestContext, options: Options = {}) {
  const clock = { t: 1_000_000 };
  const { maxEntries, ...policy } = options;
  const path = join(await tempDir(t), 'users.json.ledger');
  const open = async () => {
    const l = createFileLedgers({
      path,
      policy: resolveThrottlePolicy(policy),
      now: () => clock.t,
      exclusive: (task) => task(),
      ...(maxEntries === undefined ? {} : { maxEntries }),
    });
    await l.load();
    return l;
  };
  const ledgers = await open();
  const throttle = {
    fail: (account: string, address: string) => ledgers.throttle.settle('no-lease', account, address, 'fail'),
    succeed: (account: string) => ledgers.throttle.settle('no-lease', account, 'nowhere', 'success'),
    async check(account: string, address: string) {
      const r = await ledgers.throttle.reserve(account, address);
      if (r.ok) {
        await ledgers.throttle.settle(r.id, account, address, 'none');
        return OK;
      }
      assert.equal(r.reason, 'locked', 'nothing is in flight in these tests');
      return wait(r.reason === 'locked' ? r.retryAfterSeconds : 0);
    },
    size: () => {
      const { accounts, addresses } = ledgers.size();
      return { accounts, addresses };
    },
  };
  return { clock, throttle, ledgers, open };
}

const OK = { ok: true } as const;
const wait = (retryAfterSeconds: number) => ({ ok: false, retryAfterSeconds }) as const;

test('P-8: five consecutive failures are free; beyond that the account waits 1 s', async (t) => {
  const { clock, throttle } = await setup(t);
  for (let i = 0; i < 4; i++) {
    await throttle.fail('alice', '10.0.0.1');
    assert.deepEqual(await throttle.check('alice', '10.0.0.1'), OK, `after failure ${i + 1}`);
  }
  await throttle.fail('alice', '10.0.0.1');
  assert.deepEqual(await throttle.check('alice', '10.0.0.1'), wait(1));
  // The account is throttled from any address (the lock is the account's, not the client's).
  assert.deepEqual(await throttle.check('alice', '192.0.2.7'), wait(1));
  clock.t += 999;
  assert.deepEqual(await throttle.check('alice', '10.0.0.1'), wait(1));
  clock.t += 1;
  assert.deepEqual(await throttle.check('alice', '10.0.0.1'), OK);
});

test('P-8: the wait doubles per further failure, 1 s up to 15 minutes', async (t) => {
  const { clock, throttle } = await setup(t);
  for (let i = 0; i < 4; i++) await throttle.fail('alice', `10.0.0.${i}`);
  const seen: number[] = [];
  for (let i = 0; i < 14; i++) {
    await throttle.fail('alice', `10.0.1.${i}`);
    const decision = await throttle.check('alice', '10.0.2.1');
    assert.equal(decision.ok, false);
    if (!decision.ok) seen.push(decision.retryAfterSeconds);
    clock.t += 900_000; // sit out the longest possible wait
  }
  assert.deepEqual(seen, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900]);
});

test('P-8: Retry-After counts down with the clock and is never below 1', async (t) => {
  const { clock, throttle } = await setup(t);
  for (let i = 0; i < 9; i++) await throttle.fail('alice', `10.0.0.${i}`); // 5 free + 4 → 16 s
  assert.deepEqual(await throttle.check('alice', 'x'), wait(16));
  clock.t += 10_500;
  assert.deepEqual(await throttle.check('alice', 'x'), wait(6));
  clock.t += 5_499;
  assert.deepEqual(await throttle.check('alice', 'x'), wait(1));
  clock.t += 1;
  assert.deepEqual(await throttle.check('alice', 'x'), OK);
});

test('P-8: a success resets the account: five free failures again', async (t) => {
  const { throttle } = await setup(t);
  for (let i = 0; i < 7; i++) await throttle.fail('alice', `10.0.0.${i}`);
  assert.equal((await throttle.check('alice', '10.0.1.1')).ok, false);
  await throttle.succeed('alice');
  assert.deepEqual(await throttle.check('alice', '10.0.1.1'), OK);
  for (let i = 0; i < 4; i++) await throttle.fail('alice', `10.0.2.${i}`);
  assert.deepEqual(await throttle.check('alice', '10.0.1.1'), OK);
  await throttle.fail('alice', '10.0.2.9');
  assert.deepEqual(await throttle.check('alice', '10.0.1.1'), wait(1));
});

test('P-8: accounts are independent, and unknown accounts are throttled like known ones', async (t) => {
  const { throttle } = await setup(t);
  for (let i = 0; i < 5; i++) await throttle.fail('no-such-user', `10.0.0.${i}`);
  assert.deepEqual(await throttle.check('no-such-user', '10.0.9.9'), wait(1));
  assert.deepEqual(await throttle.check('alice', '10.0.9.9'), OK);
  await throttle.succeed('never-seen'); // harmless
  assert.deepEqual(throttle.size(), { accounts: 1, addresses: 5 });
});

test('P-8: more than 50 failures from one address within 15 minutes → that address waits', async (t) => {
  const { clock, throttle } = await setup(t);
  // Password spraying: one guess per account, each 10 s apart.
  for (let i = 0; i < 50; i++) {
    assert.deepEqual(await throttle.check(`user${i}`, '203.0.113.5'), OK, `attempt ${i + 1}`);
    await throttle.fail(`user${i}`, '203.0.113.5');
    clock.t += 10_000;
  }
  // The first failure was 500 s ago: it leaves the window in 400 s.
  assert.deepEqual(await throttle.check('fresh-account', '203.0.113.5'), wait(400));
  assert.deepEqual(await throttle.check('fresh-account', '203.0.113.6'), OK);
  clock.t += 399_999;
  assert.equal((await throttle.check('fresh-account', '203.0.113.5')).ok, false);
  clock.t += 1;
  // One failure has left the window: one more attempt is allowed, then the next one leaves 10 s later.
  assert.deepEqual(await throttle.check('fresh-account', '203.0.113.5'), OK);
  await throttle.fail('fresh-account', '203.0.113.5');
  assert.deepEqual(await throttle.check('another', '203.0.113.5'), wait(10));
});

test('P-8: a slow client that stays under 50 failures per 15 minutes is never throttled by address', async (t) => {
  const { clock, throttle } = await setup(t);
  for (let i = 0; i < 500; i++) {
    assert.deepEqual(await throttle.check(`user${i}`, '203.0.113.5'), OK, `attempt ${i + 1}`);
    await throttle.fail(`user${i}`, '203.0.113.5');
    clock.t += 18_001; // 900 s / 50, rounded up
  }
});

test('P-8: memory stays bounded: 30,000 distinct names and addresses keep ≤ maxEntries each', async (t) => {
  const { throttle } = await setup(t, { accountFreeFailures: 1, addressMaxFailures: 1, maxEntries: 1_000 });
  for (let i = 0; i < 30_000; i++) {
    await throttle.fail(`name-${i}`, `addr-${i}`);
    const size = throttle.size();
    if (size.accounts > 1_000 || size.addresses > 1_000) assert.fail(`over the bound at ${i}: ${JSON.stringify(size)}`);
  }
  // Eviction drops the least recently failed (a tenth at a time): the newest are still tracked.
  assert.ok(throttle.size().accounts >= 900);
  assert.equal((await throttle.check('name-29999', 'elsewhere')).ok, false);
  assert.equal((await throttle.check('somebody', 'addr-29999')).ok, false);
  assert.equal((await throttle.check('name-0', 'addr-0')).ok, true);
});

test('P-8: eviction forgets the least recently failed key first', async (t) => {
  const { throttle } = await setup(t, { maxEntries: 3, accountFreeFailures: 1 });
  await throttle.fail('a', 'x');
  await throttle.fail('b', 'x');
  await throttle.fail('c', 'x');
  await throttle.fail('a', 'x'); // a is now the most recent
  await throttle.fail('d', 'x'); // evicts b
  assert.deepEqual(throttle.size(), { accounts: 3, addresses: 1 });
  assert.equal((await throttle.check('b', 'y')).ok, true);
  assert.equal((await throttle.check('a', 'y')).ok, false);
  assert.equal((await throttle.check('c', 'y')).ok, false);
  assert.equal((await throttle.check('d', 'y')).ok, false);
});

test('P-8: check() alone stores nothing', async (t) => {
  const { throttle } = await setup(t);
  for (let i = 0; i < 1000; i++) await throttle.check(`name-${i}`, `addr-${i}`);
  assert.deepEqual(throttle.size(), { accounts: 0, addresses: 0 });
});

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

test('P-8 IPv6 clients are throttled by their /64, IPv4 by the address', async (t) => {
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
  const { throttle } = await setup(t, { addressMaxFailures: 3 });
  for (let i = 0; i < 3; i++) await throttle.fail(`victim-${i}`, addressKey(`2001:db8:1:2::${i + 1}`));
  assert.equal((await throttle.check('someone-else', addressKey('2001:db8:1:2:ffff::9'))).ok, false, 'a sibling address in the /64 is throttled too');
  assert.equal((await throttle.check('someone-else', addressKey('2001:db8:1:3::1'))).ok, true);
});

test('P-8 (amended): attempts in flight hold their place in both budgets; a settled one frees it', async (t) => {
  const { ledgers } = await setup(t, { addressMaxFailures: 3 });
  const a = await ledgers.throttle.reserve('u1', '203.0.113.5');
  const b = await ledgers.throttle.reserve('u2', '203.0.113.5');
  const c = await ledgers.throttle.reserve('u3', '203.0.113.5');
  assert.ok(a.ok && b.ok && c.ok);
  assert.deepEqual(await ledgers.throttle.reserve('u4', '203.0.113.5'), { ok: false, reason: 'busy' }, 'three in flight fill a budget of three');
  assert.equal((await ledgers.throttle.reserve('u4', '203.0.113.6')).ok, true, 'another address is not affected');
  await ledgers.throttle.settle(a.id, 'u1', '203.0.113.5', 'success');
  assert.equal((await ledgers.throttle.reserve('u4', '203.0.113.5')).ok, true, 'a success gives the place back');
  await ledgers.throttle.settle(b.id, 'u2', '203.0.113.5', 'fail');
  await ledgers.throttle.settle(c.id, 'u3', '203.0.113.5', 'fail');
  const refused = await ledgers.throttle.reserve('u5', '203.0.113.5');
  assert.equal(refused.ok, false, 'two failures and one in flight');
});

test('P-8 (amended): six concurrent attempts on one account: the sixth is busy, not locked, until one settles', async (t) => {
  const { ledgers } = await setup(t);
  const held = [];
  for (let i = 0; i < 5; i++) {
    const r = await ledgers.throttle.reserve('alice', `10.0.0.${i}`);
    assert.ok(r.ok);
    held.push(r.id);
  }
  assert.deepEqual(await ledgers.throttle.reserve('alice', '10.0.0.9'), { ok: false, reason: 'busy' });
  await ledgers.throttle.settle(held[0] as string, 'alice', '10.0.0.0', 'success');
  assert.equal((await ledgers.throttle.reserve('alice', '10.0.0.9')).ok, true);
});

test('P-8: a lease of a crashed or hung attempt expires', async (t) => {
  const { ledgers, clock } = await setup(t, { addressMaxFailures: 1, leaseMs: 30_000 });
  assert.ok((await ledgers.throttle.reserve('u1', '203.0.113.5')).ok);
  assert.deepEqual(await ledgers.throttle.reserve('u2', '203.0.113.5'), { ok: false, reason: 'busy' });
  clock.t += 30_000;
  assert.ok((await ledgers.throttle.reserve('u2', '203.0.113.5')).ok);
});

test('P-8, P-10, P-12: failures, nonce counts and issuances survive a restart (a new ledger on the same file)', async (t) => {
  const { ledgers, open, clock } = await setup(t);
  for (let i = 0; i < 5; i++) await ledgers.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  assert.equal(await ledgers.nonces.claim('nonce-1', 1, clock.t + 300_000), true);
  assert.equal(await ledgers.issuance.take('alice', 3, 3_600_000), true);
  const restarted = await open();
  assert.deepEqual(await restarted.throttle.reserve('alice', '10.0.0.2'), { ok: false, reason: 'locked', retryAfterSeconds: 1 });
  assert.equal(await restarted.nonces.claim('nonce-1', 1, clock.t + 300_000), false, 'a used count is refused after a restart');
  assert.equal(await restarted.nonces.claim('nonce-1', 2, clock.t + 300_000), true);
  assert.equal(await restarted.issuance.take('alice', 1, 3_600_000), false);
  await restarted.throttle.settle('x', 'alice', 'nowhere', 'success');
  const again = await open();
  assert.equal((await again.throttle.reserve('alice', '10.0.0.2')).ok, true, 'a success is durable too');
});

test('P-10: a nonce count is claimed once; higher counts only; expired nonces are forgotten', async (t) => {
  const { ledgers, clock } = await setup(t);
  const expires = clock.t + 1_000;
  assert.equal(await ledgers.nonces.claim('n', 1, expires), true);
  assert.equal(await ledgers.nonces.claim('n', 1, expires), false);
  assert.equal(await ledgers.nonces.claim('n', 3, expires), true);
  assert.equal(await ledgers.nonces.claim('n', 2, expires), false, 'a lower count after a higher one');
  clock.t += 1_000;
  await ledgers.nonces.claim('other', 1, clock.t + 1_000);
  assert.equal(ledgers.size().nonces, 1, 'the expired nonce is gone');
});

test('P-12: at most `max` issuances per account within the window', async (t) => {
  const { ledgers, clock } = await setup(t);
  for (let i = 0; i < 3; i++) assert.equal(await ledgers.issuance.take('alice', 3, 3_600_000), true);
  assert.equal(await ledgers.issuance.take('alice', 3, 3_600_000), false);
  assert.equal(await ledgers.issuance.take('bob', 3, 3_600_000), true);
  clock.t += 3_600_000;
  assert.equal(await ledgers.issuance.take('alice', 3, 3_600_000), true);
});
