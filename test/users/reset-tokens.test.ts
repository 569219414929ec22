// lib/users/reset-tokens.ts on a file store. Single use across instances and expiry are the
// conformance suite's (test/store/conformance.ts), on every store.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consumeResetToken, issueResetToken } from '../../lib/users/reset-tokens.js';
import { openStore, type Store, type UserRecord } from '../../lib/store/open.js';

const MINUTE = 60_000;

async function storeWith(t: TestContext, ...names: string[]): Promise<{ store: Store; path: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tokens-'));
  const path = join(dir, 'users.json');
  const store = await openStore(path);
  t.after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  for (const name of names) await store.update(name, () => ({ next: user(name), result: undefined }));
  return { store, path };
}

function user(name: string): UserRecord {
  return { name, role: 'user', hash: `$scrypt$ln=17,r=8,p=1$c2FsdA$${name}`, createdAt: 0, passwordChangedAt: 0 };
}

test('P-9: a token is 32 random bytes in base64url, and only its SHA-256 is stored', async (t) => {
  const { store, path } = await storeWith(t, 'alice');
  const { token, expiresAt } = await issueResetToken(store, 'alice', { now: () => 1_000 });
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(token, 'base64url').length, 32);
  assert.equal(expiresAt, 1_000 + 15 * MINUTE, 'expires after 15 minutes by default');
  assert.deepEqual((await store.get('alice'))?.resetTokens, [{ hash: createHash('sha256').update(token).digest('base64url'), expiresAt }]);
  const onDisk = (await readFile(path, 'utf8')) + (await readFile(`${path}.journal`, 'utf8'));
  assert.ok(!onDisk.includes(token), 'the token itself never reaches the disk');
  const other = await issueResetToken(store, 'alice');
  assert.notEqual(other.token, token);
});

test('P-9: issuing for an unknown user is ERR_USER_NOT_FOUND and writes nothing', async (t) => {
  const { store, path } = await storeWith(t, 'alice');
  const before = await readFile(`${path}.journal`);
  await assert.rejects(issueResetToken(store, 'bob'), { code: 'ERR_USER_NOT_FOUND' });
  assert.deepEqual(await readFile(`${path}.journal`), before);
});

test('P-9: a token works for its own user only', async (t) => {
  const { store } = await storeWith(t, 'alice', 'bob');
  const { token } = await issueResetToken(store, 'alice');
  assert.equal(await consumeResetToken(store, 'bob', token), false);
  assert.equal(await consumeResetToken(store, 'nobody', token), false);
  assert.equal(await consumeResetToken(store, 'alice', token), true);
});

const notTokens: ReadonlyArray<readonly [label: string, make: (token: string) => string]> = [
  ['empty', () => ''],
  ['too short', (token) => token.slice(0, 42)],
  ['with padding', (token) => `${token}=`],
  ['standard base64 alphabet', (token) => `${token.slice(0, 42)}+`],
  ['a different valid-looking token', () => 'A'.repeat(43)],
  ['with surrounding space', (token) => ` ${token}`],
  ['non-ASCII', (token) => `${token.slice(0, 42)}é`],
];

for (const [label, make] of notTokens) {
  test(`P-9: a presented token that is ${label} is refused and the real one survives`, async (t) => {
    const { store } = await storeWith(t, 'alice');
    const { token } = await issueResetToken(store, 'alice');
    assert.equal(await consumeResetToken(store, 'alice', make(token)), false);
    assert.equal(await consumeResetToken(store, 'alice', token), true);
  });
}

test('P-12: at most maxPerUser live tokens; one more is refused (ERR_RESET_TOKEN_LIMIT) and every earlier one stays good; once one is used or expired another is issued', async (t) => {
  const { store } = await storeWith(t, 'alice');
  let now = Date.now();
  const clock = { now: () => now };
  const tokens: string[] = [];
  for (let i = 0; i < 3; i++) tokens.push((await issueResetToken(store, 'alice', { maxPerUser: 3, ttlMs: 10 * MINUTE - i * MINUTE, ...clock })).token);
  await assert.rejects(issueResetToken(store, 'alice', { maxPerUser: 3, ...clock }), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'ERR_RESET_TOKEN_LIMIT');
    // The first to expire is the third (8 minutes).
    assert.match(error.message, new RegExp(`"alice" already holds 3 live reset tokens.*${new Date(now + 8 * MINUTE).toISOString()}`));
    return true;
  });
  assert.equal((await store.get('alice'))?.resetTokens?.length, 3);
  // Used: room for one more.
  assert.equal(await consumeResetToken(store, 'alice', tokens[0]!, clock), true);
  tokens.push((await issueResetToken(store, 'alice', { maxPerUser: 3, ...clock })).token);
  await assert.rejects(issueResetToken(store, 'alice', { maxPerUser: 3, ...clock }), { code: 'ERR_RESET_TOKEN_LIMIT' });
  // Expired: room again, and the expired one is gone.
  now += 8 * MINUTE;
  tokens.push((await issueResetToken(store, 'alice', { maxPerUser: 3, ...clock })).token);
  assert.equal(await consumeResetToken(store, 'alice', tokens[2]!, clock), false, 'expired');
  for (const token of [tokens[1]!, tokens[3]!, tokens[4]!]) assert.equal(await consumeResetToken(store, 'alice', token, clock), true);
});

test('P-12: by default a user holds at most 5 live tokens', async (t) => {
  const { store } = await storeWith(t, 'alice');
  const tokens: string[] = [];
  for (let i = 0; i < 5; i++) tokens.push((await issueResetToken(store, 'alice')).token);
  await assert.rejects(issueResetToken(store, 'alice'), { code: 'ERR_RESET_TOKEN_LIMIT' });
  for (const token of tokens) assert.equal(await consumeResetToken(store, 'alice', token), true);
});

test('P-7: clearing resetTokens in the password-change update kills every outstanding token', async (t) => {
  const { store } = await storeWith(t, 'alice');
  const { token } = await issueResetToken(store, 'alice');
  await store.update('alice', (current) => ({ next: { ...current!, hash: 'new', resetTokens: [] }, result: undefined }));
  assert.equal(await consumeResetToken(store, 'alice', token), false);
});

const badOptions: ReadonlyArray<readonly [label: string, options: Record<string, unknown>]> = [
  ['ttlMs 0', { ttlMs: 0 }],
  ['ttlMs over 24 hours', { ttlMs: 24 * 60 * MINUTE + 1 }],
  ['ttlMs fractional', { ttlMs: 1.5 }],
  ['maxPerUser 0', { maxPerUser: 0 }],
  ['now not a function', { now: 5 }],
];

for (const [label, options] of badOptions) {
  test(`P-9: issueResetToken refuses ${label} (ERR_INVALID_OPTION)`, async (t) => {
    const { store } = await storeWith(t, 'alice');
    await assert.rejects(issueResetToken(store, 'alice', options), { code: 'ERR_INVALID_OPTION' });
  });
}
