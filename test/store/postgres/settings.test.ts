// S-4: settings recorded at first start, compared at every start, changed only explicitly;
// and the indexed userhash lookup under the recorded realm follows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { openPostgresStore } from '../../../lib/store/postgres/postgres-store.js';
import type { SharedSettings } from '../../../lib/store/store.js';
import { admin, testPostgres } from '../../helpers/postgres.js';

const db = await testPostgres();
const skip = db.skip;

const SETTINGS: SharedSettings = { realm: 'httpskit', digest: true, digestKeyFingerprint: 'fp-1', minPasswordLength: 15 };

test('S-4: the first start records the settings; equal ones agree; any difference is refused, named, and changes nothing', { skip }, async (t) => {
  const url = await db.database();
  const first = await openPostgresStore(url);
  t.after(() => first.close());
  assert.equal(await first.settings.read(), undefined);
  assert.equal(await first.settings.agree(SETTINGS), 'recorded');
  const second = await openPostgresStore(url);
  t.after(() => second.close());
  assert.equal(await second.settings.agree({ ...SETTINGS }), 'agreed');
  const cases: [Partial<SharedSettings>, RegExp][] = [
    [{ realm: 'other' }, /realm/],
    [{ digest: false, digestKeyFingerprint: null }, /Digest on or off.*fingerprint/],
    [{ digestKeyFingerprint: 'fp-2' }, /fingerprint/],
    [{ minPasswordLength: 8 }, /minimum password length/],
  ];
  for (const [change, named] of cases) {
    await assert.rejects(second.settings.agree({ ...SETTINGS, ...change }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'ERR_STORE_SETTINGS');
      assert.match(error.message, named);
      return true;
    });
  }
  assert.deepEqual(await first.settings.read(), SETTINGS);
  await second.settings.replace({ ...SETTINGS, realm: 'new realm' });
  assert.equal((await first.settings.read())?.realm, 'new realm');
});

test('S-4/P-10: userhash lookups under the recorded realm use the stored column, which follows a realm change', { skip }, async (t) => {
  const url = await db.database();
  const store = await openPostgresStore(url);
  t.after(() => store.close());
  const record = { name: 'zoë', role: 'user' as const, hash: '$scrypt$x', createdAt: 1, passwordChangedAt: 1 };
  await store.update('zoë', () => ({ next: record, result: undefined }));
  await store.settings.agree(SETTINGS);
  const sha = (realm: string) => createHash('sha256').update(`zoë:${realm}`).digest('hex');
  const stored = await admin(url, 'SELECT userhash_sha256, userhash_md5 FROM httpskit.users');
  assert.equal(stored.rows[0].userhash_sha256, sha('httpskit'));
  assert.equal(stored.rows[0].userhash_md5, createHash('md5').update('zoë:httpskit').digest('hex'));
  assert.equal(await store.findByUserhash('SHA-256', 'httpskit', sha('httpskit')), 'zoë');
  // A user written after the realm was recorded gets its column at write time.
  await store.update('yann', () => ({ next: { ...record, name: 'yann' }, result: undefined }));
  const yann = createHash('sha256').update('yann:httpskit').digest('hex');
  assert.equal((await admin(url, "SELECT userhash_sha256 FROM httpskit.users WHERE name = 'yann'")).rows[0].userhash_sha256, yann);
  await store.settings.replace({ ...SETTINGS, realm: 'elsewhere' });
  assert.equal((await admin(url, "SELECT userhash_sha256 FROM httpskit.users WHERE name = 'zoë'")).rows[0].userhash_sha256, sha('elsewhere'));
  assert.equal(await store.findByUserhash('SHA-256', 'elsewhere', sha('elsewhere')), 'zoë');
  assert.equal(await store.findByUserhash('SHA-256', 'httpskit', sha('httpskit')), 'zoë');
});

test('S-2: clean-up deletes expired leases, old address windows, used nonces long past expiry and issuance past its window', { skip }, async (t) => {
  const url = await db.database();
  const store = await openPostgresStore(url, { cleanupIntervalMs: 0, throttle: { leaseMs: 1, addressWindowMs: 1 } });
  t.after(() => store.close());
  const lease = await store.throttle.reserve('nina', '192.0.2.44');
  assert.ok(lease.ok);
  await store.throttle.settle(lease.id, undefined, '192.0.2.44', 'fail');
  await store.throttle.reserve('nina', '192.0.2.45'); // left in flight: a crashed instance
  await store.nonces.claim('old', 1, Date.now() - 2 * 3_600_000);
  await store.nonces.claim('fresh', 1, Date.now() + 300_000);
  await store.issuance.take('nina', 3, 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const deleted = await store.cleanUp();
  assert.ok(deleted >= 5, `deleted ${deleted}`);
  const left = await admin(
    url,
    `SELECT (SELECT count(*) FROM httpskit.throttle_lease)::int AS leases, (SELECT count(*) FROM httpskit.throttle_address)::int AS addresses,
            (SELECT count(*) FROM httpskit.throttle_account)::int AS accounts, (SELECT array_agg(nonce) FROM httpskit.digest_nonce) AS nonces,
            (SELECT count(*) FROM httpskit.token_issuance)::int AS issuance`,
  );
  assert.deepEqual(left.rows[0], { leases: 0, addresses: 0, accounts: 0, nonces: ['fresh'], issuance: 0 });
  // A replay of a nonce still within its life keeps being refused after the clean-up.
  assert.equal(await store.nonces.claim('fresh', 1, Date.now() + 300_000), false);
});
