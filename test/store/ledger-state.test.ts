// The ledgers' state (lib/store/ledger-state.ts), which the file and memory stores decide on: the
// long windows of P-8 with a fake clock, and the bounds on memory. (What every store must do,
// PostgreSQL included, is in the conformance suite: conformance.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ThrottlePolicy } from '../../lib/store/ledgers.js';
import { LedgerState } from '../../lib/store/ledger-state.js';
import { resolveThrottlePolicy } from '../../lib/store/throttle-policy.js';

function setup(options: Partial<ThrottlePolicy> & { readonly maxEntries?: number } = {}) {
  const { maxEntries, ...policy } = options;
  const state = new LedgerState(resolveThrottlePolicy(policy), maxEntries);
  const clock = { t: 1_000_000 };
  return {
    clock,
    state,
    fail: (account: string, address: string) => state.applyFailure(account, address, clock.t),
    /** The decision for one more attempt, taking no lease. */
    check(account: string, address: string): 'ok' | number {
      const r = state.reserve(account, address, clock.t);
      assert.ok(r.ok || r.reason === 'locked', 'nothing is in flight in these tests');
      return r.ok ? 'ok' : r.reason === 'locked' ? r.retryAfterSeconds : 0;
    },
  };
}

test('P-8: more than 50 failures from one address within 15 minutes → that address waits', () => {
  const { clock, fail, check } = setup();
  // Password spraying: one guess per account, each 10 s apart.
  for (let i = 0; i < 50; i++) {
    assert.equal(check(`user${i}`, '203.0.113.5'), 'ok', `attempt ${i + 1}`);
    fail(`user${i}`, '203.0.113.5');
    clock.t += 10_000;
  }
  // The first failure was 500 s ago: it leaves the window in 400 s.
  assert.equal(check('fresh-account', '203.0.113.5'), 400);
  assert.equal(check('fresh-account', '203.0.113.6'), 'ok');
  clock.t += 399_999;
  assert.equal(check('fresh-account', '203.0.113.5'), 1);
  clock.t += 1;
  // One failure has left the window: one more attempt is allowed, then the next one leaves 10 s later.
  assert.equal(check('fresh-account', '203.0.113.5'), 'ok');
  fail('fresh-account', '203.0.113.5');
  assert.equal(check('another', '203.0.113.5'), 10);
});

test('P-8: a slow client that stays under 50 failures per 15 minutes is never throttled by address', () => {
  const { clock, fail, check } = setup();
  for (let i = 0; i < 500; i++) {
    assert.equal(check(`user${i}`, '203.0.113.5'), 'ok', `attempt ${i + 1}`);
    fail(`user${i}`, '203.0.113.5');
    clock.t += 18_001; // 900 s / 50, rounded up
  }
});

test('P-8: the wait reaches 15 minutes and stays there; Retry-After counts down to 1, never 0', () => {
  const { clock, fail, check } = setup();
  const seen: Array<'ok' | number> = [];
  for (let i = 0; i < 18; i++) {
    fail('alice', `10.0.1.${i}`);
    seen.push(check('alice', '10.0.2.1'));
    if (i >= 4) clock.t += 900_000; // sit out the longest possible wait
  }
  assert.deepEqual(seen.slice(4), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900]);
  fail('alice', 'x');
  clock.t += 899_001;
  assert.equal(check('alice', 'x'), 1);
  clock.t += 999;
  assert.equal(check('alice', 'x'), 'ok');
});

test('P-8: memory stays bounded: 30,000 distinct names and addresses keep ≤ maxEntries each', () => {
  const { state, fail, check } = setup({ accountFreeFailures: 1, addressMaxFailures: 1, maxEntries: 1_000 });
  for (let i = 0; i < 30_000; i++) {
    fail(`name-${i}`, `addr-${i}`);
    if (state.accounts.size > 1_000 || state.addresses.size > 1_000) assert.fail(`over the bound at ${i}`);
  }
  // Eviction drops the least recently failed (a tenth at a time): the newest are still tracked.
  assert.ok(state.accounts.size >= 900);
  assert.notEqual(check('name-29999', 'elsewhere'), 'ok');
  assert.notEqual(check('somebody', 'addr-29999'), 'ok');
  assert.equal(check('name-0', 'addr-0'), 'ok');
});

test('P-8: eviction forgets the least recently failed key first', () => {
  const { state, fail, check } = setup({ maxEntries: 3, accountFreeFailures: 1 });
  fail('a', 'x');
  fail('b', 'x');
  fail('c', 'x');
  fail('a', 'x'); // a is now the most recent
  fail('d', 'x'); // evicts b
  assert.deepEqual([state.accounts.size, state.addresses.size], [3, 1]);
  assert.equal(check('b', 'y'), 'ok');
  assert.notEqual(check('a', 'y'), 'ok');
  assert.notEqual(check('c', 'y'), 'ok');
  assert.notEqual(check('d', 'y'), 'ok');
});

test('P-8: a decision without a lease stores nothing', () => {
  const { state, check } = setup();
  for (let i = 0; i < 1000; i++) check(`name-${i}`, `addr-${i}`);
  assert.deepEqual([state.accounts.size, state.addresses.size, state.leases.size], [0, 0, 0]);
});

test('P-10: expired nonces are forgotten when the next one is claimed', () => {
  const { clock, state } = setup();
  assert.equal(state.claimNonce('n', 1, clock.t + 1_000, clock.t), true);
  clock.t += 1_000;
  assert.equal(state.claimNonce('other', 1, clock.t + 1_000, clock.t), true);
  assert.equal(state.nonces.size, 1, 'the expired nonce is gone');
});

test('P-12: issuances of accounts whose window has passed are forgotten; the window is counted in the caller\'s milliseconds', () => {
  const { clock, state } = setup();
  for (let i = 0; i < 3; i++) assert.equal(state.takeIssuance('alice', 3, 3_600_000, clock.t), true);
  assert.equal(state.takeIssuance('alice', 3, 3_600_000, clock.t), false);
  clock.t += 3_600_000;
  assert.equal(state.takeIssuance('bob', 3, 3_600_000, clock.t), true);
  assert.equal(state.issued.has('alice'), false);
  assert.equal(state.takeIssuance('alice', 3, 3_600_000, clock.t), true);
});
