// One conformance suite for every Store implementation (U-6, S-7: the file, PostgreSQL and memory
// stores; one suite, several implementations, as Hono runs one router suite against each router).
// Every observable behaviour of U, P-8/P-9/P-10/P-12 and S-2 that a store decides is here, in real
// time (PostgreSQL takes its times from the database's clock, which a test cannot move). A test file per store
// calls storeConformance() with a factory; the factory's `open` may be called several times for
// one backing store, to race two store instances (two processes, two servers) against each other.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ThrottlePolicy } from '../../lib/store/ledgers.js';
import type { Store, UserRecord } from '../../lib/store/open.js';
import { consumeResetToken, hasLiveResetToken, issueResetToken } from '../../lib/users/reset-tokens.js';

export interface StoreBacking {
  /** Opens one more store instance on the same backing store; closed by the suite. */
  open(options?: { readonly throttle?: Partial<ThrottlePolicy> }): Promise<Store>;
}

/** A fresh, empty backing store for one test. */
export type StoreFactory = (t: TestContext) => Promise<StoreBacking>;

function user(name: string, extra: Partial<UserRecord> = {}): UserRecord {
  return { name, role: 'user', hash: '$scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA', createdAt: 1_700_000_000_000, passwordChangedAt: 1_700_000_000_000, ...extra };
}

async function opened(t: TestContext, backing: StoreBacking, options?: { readonly throttle?: Partial<ThrottlePolicy> }): Promise<Store> {
  const store = await backing.open(options);
  t.after(() => store.close());
  return store;
}

async function put(store: Store, record: UserRecord): Promise<void> {
  await store.update(record.name, () => ({ next: record, result: undefined }));
}

// UTF-16 code unit order: U+10000 (surrogates D800..) sorts before U+E000..U+FFFF, though
// its UTF-8 bytes (F0..) sort after theirs (EE..EF).
const NAMES = ['b', 'a', 'Z', 'é', '\u{10000}x', '\uE000', '\uFFFD', 'aa', '\u{1F600}'];
const SORTED = [...NAMES].sort();

export interface ConformanceOptions {
  readonly skip?: string | false;
}

export function storeConformance(label: string, factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe(`Store conformance: ${label}`, { skip: options.skip ?? false }, () => {
    test('S-2: a user written through one instance is read fresh by another (get, count, frozen copy)', async (t) => {
      const backing = await factory(t);
      const [a, b] = [await opened(t, backing), await opened(t, backing)];
      assert.equal(await b.get('alice'), undefined);
      assert.equal(await b.count(), 0);
      const record = user('alice', { role: 'admin', digest: 'sealed', resetTokens: [{ hash: 'h1', expiresAt: 1_700_000_900_000.5 }] });
      await put(a, record);
      const read = await b.get('alice');
      assert.deepEqual(read, record);
      assert.ok(Object.isFrozen(read));
      assert.equal(await b.count(), 1);
      await a.update('alice', () => ({ next: null, result: undefined }));
      assert.equal(await b.get('alice'), undefined);
      assert.equal(await b.count(), 0);
    });

    test('R-3: list() and page() sort by UTF-16 code units; page() is exclusive of after and says whether more follow', async (t) => {
      const store = await opened(t, await factory(t));
      for (const name of NAMES) await put(store, user(name));
      assert.deepEqual((await store.list()).map((u) => u.name), SORTED);
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.page({ after, limit: 4 });
        seen.push(...page.users.map((u) => u.name));
        assert.ok(page.users.length <= 4);
        if (!page.more) break;
        after = page.users.at(-1)?.name;
      }
      assert.deepEqual(seen, SORTED);
      const tail = await store.page({ after: '\u{10000}x', limit: 100 });
      assert.deepEqual(tail.users.map((u) => u.name), SORTED.slice(SORTED.indexOf('\u{10000}x') + 1));
      assert.equal(tail.more, false);
      assert.deepEqual(await store.page({ after: '\uFFFF', limit: 5 }), { users: [], more: false });
    });

    test('S-3: update() runs fn once, on the committed state; undefined writes nothing; its result comes back', async (t) => {
      const store = await opened(t, await factory(t));
      let calls = 0;
      const result = await store.update('bob', (current) => {
        calls++;
        assert.equal(current, undefined);
        return { next: undefined, result: 'nothing' };
      });
      assert.equal(result, 'nothing');
      assert.equal(calls, 1);
      assert.equal(await store.get('bob'), undefined);
      await put(store, user('bob'));
      const seen = await store.update('bob', (current) => ({ next: current === undefined ? undefined : { ...current, role: 'admin' }, result: current?.role }));
      assert.equal(seen, 'user');
      assert.equal((await store.get('bob'))?.role, 'admin');
    });

    test('S-3: an update function that throws writes nothing and its error reaches the caller unchanged', async (t) => {
      const store = await opened(t, await factory(t));
      await put(store, user('carol'));
      const mine = new Error('mine');
      await assert.rejects(
        store.update('carol', () => {
          throw mine;
        }),
        (error) => error === mine,
      );
      assert.deepEqual(await store.get('carol'), user('carol'));
    });

    test('U-2: a record with a bad name or a different name is refused and nothing is written', async (t) => {
      const store = await opened(t, await factory(t));
      await assert.rejects(store.update('a/b', () => ({ next: user('a/b'), result: undefined })), { code: 'ERR_INVALID_NAME' });
      await assert.rejects(store.update('x', () => ({ next: user('y'), result: undefined })), { code: 'ERR_INVALID_OPTION' });
      assert.equal(await store.count(), 0);
    });

    test('S-3: concurrent read-modify-writes from two instances lose nothing and run fn once per call', async (t) => {
      const backing = await factory(t);
      const [a, b] = [await opened(t, backing), await opened(t, backing)];
      await put(a, user('counter', { passwordChangedAt: 0 }));
      let calls = 0;
      const bump = (store: Store) =>
        store.update('counter', (current) => {
          calls++;
          assert.ok(current);
          return { next: { ...current, passwordChangedAt: current.passwordChangedAt + 1 }, result: undefined };
        });
      await Promise.all(Array.from({ length: 40 }, (_, i) => bump(i % 2 === 0 ? a : b)));
      assert.equal(calls, 40);
      assert.equal((await b.get('counter'))?.passwordChangedAt, 40);
    });

    test('S-3: two instances creating one name at once: exactly one creates, the other sees it', async (t) => {
      const backing = await factory(t);
      const [a, b] = [await opened(t, backing), await opened(t, backing)];
      let calls = 0;
      const create = (store: Store, role: 'user' | 'admin') =>
        store.update('dave', (current) => {
          calls++;
          return current === undefined ? { next: user('dave', { role }), result: 'created' } : { next: undefined, result: 'exists' };
        });
      const results = await Promise.all([create(a, 'user'), create(b, 'admin'), create(a, 'user'), create(b, 'admin')]);
      assert.equal(calls, 4);
      assert.deepEqual(results.filter((r) => r === 'created').length, 1);
    });

    test('R-5/R-6: countAdmins sees the admins of the same atomic moment; two instances cannot demote the last two admins at once', async (t) => {
      const backing = await factory(t);
      const [a, b] = [await opened(t, backing), await opened(t, backing)];
      await put(a, user('root1', { role: 'admin' }));
      await put(a, user('root2', { role: 'admin' }));
      await put(a, user('plain'));
      const demote = (store: Store, name: string) =>
        store.update(
          name,
          (current, view) => {
            if (current === undefined) return { next: undefined, result: 'not-found' };
            if (current.role === 'admin' && view.admins <= 1) return { next: undefined, result: 'last-admin' };
            return { next: { ...current, role: 'user' as const }, result: 'ok' };
          },
          { countAdmins: true },
        );
      const results = await Promise.all([demote(a, 'root1'), demote(b, 'root2')]);
      assert.deepEqual([...results].sort(), ['last-admin', 'ok']);
      assert.equal((await a.list()).filter((u) => u.role === 'admin').length, 1);
      const view = await a.update('plain', (_current, v) => ({ next: undefined, result: v.admins }), { countAdmins: true });
      assert.equal(view, 1);
    });

    test('P-10: findByUserhash finds the user whose H(name ":" realm) matches, per algorithm', async (t) => {
      const store = await opened(t, await factory(t));
      for (const name of ['erin', 'frank', '\u{1F600}']) await put(store, user(name));
      for (const [algorithm, hashName] of [
        ['SHA-256', 'sha256'],
        ['MD5', 'md5'],
      ] as const) {
        for (const name of ['frank', '\u{1F600}']) {
          const hex = createHash(hashName).update(`${name}:realm ü`, 'utf8').digest('hex');
          assert.equal(await store.findByUserhash(algorithm, 'realm ü', hex), name);
          assert.equal(await store.findByUserhash(algorithm, 'other', hex), undefined);
        }
      }
      assert.equal(await store.findByUserhash('SHA-256', 'realm ü', '0'.repeat(64)), undefined);
    });

    test('H-3: ping() resolves on a store that answers', async (t) => {
      const store = await opened(t, await factory(t));
      await store.ping();
    });

    describe('reset tokens (P-9), through the store', () => {
      test('P-9: a token is single use across two instances, and two concurrent consumes let exactly one through', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing), await opened(t, backing)];
        await put(a, user('tess'));
        const { token } = await issueResetToken(a, 'tess');
        assert.deepEqual((await Promise.all([consumeResetToken(a, 'tess', token), consumeResetToken(b, 'tess', token)])).sort(), [false, true]);
        assert.equal(await consumeResetToken(b, 'tess', token), false);
        assert.deepEqual((await b.get('tess'))?.resetTokens, []);
      });

      test('P-9: a token expires at expiresAt (the caller\'s clock), expired tokens are pruned when touched, and the others live on', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing), await opened(t, backing)];
        await put(a, user('ugo'));
        let now = 1_700_000_000_000;
        const clock = { now: () => now };
        const { token, expiresAt } = await issueResetToken(a, 'ugo', { ...clock, ttlMs: 600_000 });
        const unused = await issueResetToken(a, 'ugo', clock);
        const seen = await b.get('ugo');
        assert.ok(seen !== undefined && hasLiveResetToken(seen, token, expiresAt - 1));
        now = expiresAt;
        assert.equal(hasLiveResetToken(seen, token, now), false, 'dead from expiresAt on');
        assert.equal(await consumeResetToken(b, 'ugo', token, clock), false);
        assert.deepEqual((await a.get('ugo'))?.resetTokens?.map((r) => r.expiresAt), [unused.expiresAt], 'the expired one is gone');
        assert.equal(await consumeResetToken(a, 'ugo', unused.token, clock), true);
      });
    });

    describe('throttle ledger (P-8)', () => {
      test('P-8: 5 failures are free, then the account is locked with a Retry-After; a success forgets them', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { baseDelayMs: 60_000, maxDelayMs: 120_000 } });
        const fail = async (account: string) => {
          const r = await store.throttle.reserve(account, '192.0.2.1');
          assert.ok(r.ok, `reserve for ${account}: ${JSON.stringify(r)}`);
          await store.throttle.settle(r.id, account, '192.0.2.1', 'fail');
        };
        for (let i = 0; i < 4; i++) await fail('gina');
        const r = await store.throttle.reserve('gina', '192.0.2.1');
        assert.ok(r.ok);
        await store.throttle.settle(r.id, 'gina', '192.0.2.1', 'success');
        for (let i = 0; i < 5; i++) await fail('gina');
        const locked = await store.throttle.reserve('gina', '192.0.2.1');
        assert.equal(locked.ok, false);
        assert.ok(!locked.ok && locked.reason === 'locked' && locked.retryAfterSeconds > 50 && locked.retryAfterSeconds <= 60, JSON.stringify(locked));
        // Another account from the same address is not locked by gina's failures.
        assert.equal((await store.throttle.reserve('hank', '192.0.2.1')).ok, true);
      });

      for (const instances of [1, 2]) {
        test(`P-8 amended: attempts in flight count; of 12 concurrent reservations on ${instances} instance(s) exactly 5 pass, the rest are busy`, async (t) => {
          const backing = await factory(t);
          const stores = [await opened(t, backing), ...(instances === 2 ? [await opened(t, backing)] : [])];
          const pick = (i: number) => stores[i % stores.length] as Store;
          const results = await Promise.all(Array.from({ length: 12 }, (_, i) => pick(i).throttle.reserve('ivan', `198.51.100.${i}`)));
          assert.equal(results.filter((r) => r.ok).length, 5);
          assert.ok(results.every((r) => r.ok || r.reason === 'busy'));
          // 'none' only drops the lease: a place frees up, and no failure was recorded.
          const first = results.findIndex((r) => r.ok);
          const lease = results[first];
          assert.ok(lease?.ok);
          await pick(first).throttle.settle(lease.id, 'ivan', `198.51.100.${first}`, 'none');
          assert.equal((await pick(first + 1).throttle.reserve('ivan', '198.51.100.99')).ok, true);
        });
      }

      test('issue 20: reserveAndGet() reserves as reserve() does and reads the user only when admitted (fresh, from another instance too)', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing, { throttle: { baseDelayMs: 60_000, maxDelayMs: 120_000 } }), await opened(t, backing)];
        const lena = user('lena');
        await put(b, lena);
        const found = await a.reserveAndGet('lena', '192.0.2.40');
        assert.ok(found.reservation.ok);
        assert.deepEqual(found.record, lena);
        const unknown = await a.reserveAndGet('nobody-here', '192.0.2.40');
        assert.ok(unknown.reservation.ok);
        assert.equal(unknown.record, undefined);
        // The reservations are in flight like reserve()'s: with three more, lena's five places are taken.
        const held = await Promise.all(Array.from({ length: 4 }, () => a.throttle.reserve('lena', '192.0.2.41')));
        assert.equal(held.filter((r) => r.ok).length, 4);
        assert.deepEqual(await b.reserveAndGet('lena', '192.0.2.42'), { reservation: { ok: false, reason: 'busy' } });
        await a.throttle.settle(found.reservation.id, 'lena', '192.0.2.40', 'fail');
        for (const r of held) if (r.ok) await a.throttle.settle(r.id, 'lena', '192.0.2.41', 'fail');
        await a.throttle.settle(unknown.reservation.id, 'nobody-here', '192.0.2.40', 'none');
        // Five failures settled: locked, with the Retry-After reserve() gives, and nothing read.
        const locked = await a.reserveAndGet('lena', '192.0.2.40');
        assert.ok(!locked.reservation.ok && locked.reservation.reason === 'locked' && locked.reservation.retryAfterSeconds > 50, JSON.stringify(locked));
        assert.equal(locked.record, undefined);
        const plain = await a.throttle.reserve('lena', '192.0.2.40');
        assert.ok(!plain.ok && plain.reason === 'locked');
      });

      test('P-8: a reservation of a crashed instance (never settled) expires after the lease', async (t) => {
        const backing = await factory(t);
        const store = await opened(t, backing, { throttle: { accountFreeFailures: 1, leaseMs: 1_500 } });
        const held = await store.throttle.reserve('judy', '192.0.2.9');
        assert.equal(held.ok, true);
        assert.deepEqual(await store.throttle.reserve('judy', '192.0.2.9'), { ok: false, reason: 'busy' });
        await sleep(1_800);
        assert.equal((await store.throttle.reserve('judy', '192.0.2.9')).ok, true);
      });

      test('P-8: an address past its failure budget in the window is locked for every account, then free once the window passes', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { addressMaxFailures: 3, addressWindowMs: 2_000 } });
        for (let i = 0; i < 3; i++) {
          const r = await store.throttle.reserve(`spray${i}`, '203.0.113.7');
          assert.ok(r.ok);
          await store.throttle.settle(r.id, `spray${i}`, '203.0.113.7', 'fail');
        }
        const locked = await store.throttle.reserve('someone-else', '203.0.113.7');
        assert.ok(!locked.ok && locked.reason === 'locked' && locked.retryAfterSeconds >= 1 && locked.retryAfterSeconds <= 2, JSON.stringify(locked));
        assert.equal((await store.throttle.reserve(undefined, '203.0.113.8')).ok, true);
        await sleep(2_300);
        assert.equal((await store.throttle.reserve('someone-else', '203.0.113.7')).ok, true);
      });

      test('P-8: address-only reservations (account undefined) count against the address budget, in flight too', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { addressMaxFailures: 2 } });
        const results = await Promise.all(Array.from({ length: 4 }, () => store.throttle.reserve(undefined, '203.0.113.20')));
        assert.equal(results.filter((r) => r.ok).length, 2);
        for (const r of results) if (r.ok) await store.throttle.settle(r.id, undefined, '203.0.113.20', 'fail');
        const after = await store.throttle.reserve(undefined, '203.0.113.20');
        assert.equal(after.ok ? 'ok' : after.reason, 'locked');
      });

      test('P-8: settling an unknown id still records the outcome', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { accountFreeFailures: 1, baseDelayMs: 60_000, maxDelayMs: 60_000 } });
        await store.throttle.settle('not-a-lease', 'kate', '192.0.2.30', 'fail');
        const r = await store.throttle.reserve('kate', '192.0.2.30');
        assert.equal(r.ok ? 'ok' : r.reason, 'locked');
      });
    });

    describe('throttle ledger (P-8): the schedule, in real time on every store', () => {
      /** Records one finished failure (settle needs no reservation: an unknown id still counts). */
      const fail = (store: Store, account: string | undefined, address: string) => store.throttle.settle('no-lease', account, address, 'fail');
      /** The decision for one more attempt, its reservation let go at once. */
      async function check(store: Store, account: string | undefined, address: string): Promise<number | 'ok' | 'busy'> {
        const r = await store.throttle.reserve(account, address);
        if (!r.ok) return r.reason === 'locked' ? r.retryAfterSeconds : 'busy';
        await store.throttle.settle(r.id, account, address, 'none');
        return 'ok';
      }

      test('P-8: five failures are free; the wait then starts at the base and doubles per failure up to the maximum, from any address', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { baseDelayMs: 1_000, maxDelayMs: 16_000 } });
        for (let i = 0; i < 5; i++) {
          assert.equal(await check(store, 'olga', '192.0.2.50'), 'ok', `before failure ${i + 1}`);
          await fail(store, 'olga', `192.0.2.${60 + i}`);
        }
        const seen: Array<number | 'ok' | 'busy'> = [await check(store, 'olga', '192.0.2.50')];
        // The lock is the account's, not the client's.
        assert.equal(await check(store, 'olga', '198.51.100.77'), seen[0]);
        for (let i = 0; i < 5; i++) {
          await fail(store, 'olga', '192.0.2.70');
          seen.push(await check(store, 'olga', '192.0.2.50'));
        }
        assert.deepEqual(seen, [1, 2, 4, 8, 16, 16]);
        // Accounts are independent, and a name nobody has is throttled like one that exists.
        assert.equal(await check(store, 'pablo', '192.0.2.50'), 'ok');
      });

      test('P-8: Retry-After counts down with the clock, is never below 1, and the account is free when the wait is over', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { baseDelayMs: 2_000, maxDelayMs: 2_000 } });
        for (let i = 0; i < 5; i++) await fail(store, 'quinn', '192.0.2.80');
        assert.equal(await check(store, 'quinn', '192.0.2.80'), 2);
        await sleep(1_100);
        assert.equal(await check(store, 'quinn', '192.0.2.80'), 1);
        await sleep(1_000);
        assert.equal(await check(store, 'quinn', '192.0.2.80'), 'ok');
      });

      test('P-8: a success resets the account: five free failures again', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { baseDelayMs: 60_000, maxDelayMs: 60_000 } });
        for (let i = 0; i < 7; i++) await fail(store, 'rosa', `10.0.0.${i}`);
        assert.equal(typeof (await check(store, 'rosa', '10.0.1.1')), 'number');
        await store.throttle.settle('no-lease', 'rosa', '10.0.1.1', 'success');
        assert.equal(await check(store, 'rosa', '10.0.1.1'), 'ok');
        for (let i = 0; i < 4; i++) await fail(store, 'rosa', `10.0.2.${i}`);
        assert.equal(await check(store, 'rosa', '10.0.1.1'), 'ok');
        await fail(store, 'rosa', '10.0.2.9');
        assert.equal(await check(store, 'rosa', '10.0.1.1'), 60);
      });

      test('P-8 (amended): attempts in flight hold their place in both budgets; a settled one frees it', async (t) => {
        const store = await opened(t, await factory(t), { throttle: { addressMaxFailures: 3 } });
        const held = await Promise.all(['u1', 'u2', 'u3'].map((account) => store.throttle.reserve(account, '203.0.113.5')));
        const [a, b, c] = held;
        assert.ok(a?.ok && b?.ok && c?.ok);
        assert.equal(await check(store, 'u4', '203.0.113.5'), 'busy', 'three in flight fill a budget of three');
        assert.equal(await check(store, 'u4', '203.0.113.6'), 'ok', 'another address is not affected');
        await store.throttle.settle(a.id, 'u1', '203.0.113.5', 'success');
        assert.equal((await store.throttle.reserve('u4', '203.0.113.5')).ok, true, 'a success gives the place back (u4 stays in flight)');
        await store.throttle.settle(b.id, 'u2', '203.0.113.5', 'fail');
        await store.throttle.settle(c.id, 'u3', '203.0.113.5', 'fail');
        assert.equal(await check(store, 'u5', '203.0.113.5'), 'busy', 'two failures and one in flight');
        // Six at once on one account: the sixth is busy (not locked) until one settles.
        const five = await Promise.all(Array.from({ length: 5 }, (_, i) => store.throttle.reserve('sven', `10.9.0.${i}`)));
        assert.ok(five.every((r) => r.ok));
        assert.equal(await check(store, 'sven', '10.9.0.9'), 'busy');
        const first = five[0];
        assert.ok(first?.ok);
        await store.throttle.settle(first.id, 'sven', '10.9.0.0', 'success');
        assert.equal(await check(store, 'sven', '10.9.0.9'), 'ok');
      });
    });

    describe('nonce ledger (P-10)', () => {
      test('P-10: each nonce count is accepted once, higher counts later, across two instances', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing), await opened(t, backing)];
        const expires = Date.now() + 300_000;
        assert.equal(await a.nonces.claim('n1', 1, expires), true);
        assert.equal(await b.nonces.claim('n1', 1, expires), false);
        assert.equal(await b.nonces.claim('n1', 3, expires), true);
        assert.equal(await a.nonces.claim('n1', 2, expires), false);
        assert.equal(await a.nonces.claim('n2', 1, expires), true);
        const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).nonces.claim('n3', 1, expires)));
        assert.equal(racing.filter(Boolean).length, 1);
      });
    });

    describe('nonce ledger (P-10): expiry', () => {
      test('P-10: a count of an expired nonce is refused, and a nonce that expired after its claims never takes another', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing), await opened(t, backing)];
        assert.equal(await a.nonces.claim('gone', 1, Date.now() - 1), false);
        const expires = Date.now() + 700;
        assert.equal(await a.nonces.claim('brief', 1, expires), true);
        await sleep(900);
        assert.equal(await b.nonces.claim('brief', 2, expires), false);
        assert.equal(await b.nonces.claim('fresh', 1, Date.now() + 60_000), true);
      });
    });

    describe('issuance ledger (P-12)', () => {
      test('P-12: at most max tokens per account within the window, the first ones, across two instances', async (t) => {
        const backing = await factory(t);
        const [a, b] = [await opened(t, backing), await opened(t, backing)];
        const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).issuance.take('liam', 3, 1_500)));
        assert.equal(racing.filter(Boolean).length, 3);
        assert.equal(await a.issuance.take('mia', 3, 1_500), true, 'each account has its own count');
        await sleep(1_800);
        assert.equal(await b.issuance.take('liam', 3, 1_500), true);
      });
    });
  });
}
