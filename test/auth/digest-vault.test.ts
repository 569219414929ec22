import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { removeTempDir } from '../helpers/tmp.js';
import { join } from 'node:path';
import { computeHA1 } from '../../lib/auth/digest-hash.js';
import { openDigestVault } from '../../lib/auth/digest-vault.js';
import type { DigestHA1 } from '../../lib/auth/digest-vault.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-vault-'));
  // Never throws (a later hook closes what may still write here): see helpers/tmp.ts.
  t.after(() => removeTempDir(dir));
  return dir;
}

const HA1: DigestHA1 = {
  'SHA-256': computeHA1('SHA-256', 'alice', 'httpskit', 'correct horse battery staple'),
  MD5: computeHA1('MD5', 'alice', 'httpskit', 'correct horse battery staple'),
};

const posix = process.platform !== 'win32';

test('P-10 vault: creates a 32-byte key file with mode 0600 in a new directory (0700)', async (t) => {
  const dir = await tempDir(t);
  const keyPath = join(dir, 'keys', 'nested', 'digest.key');
  await openDigestVault(keyPath);
  const key = await readFile(keyPath);
  assert.equal(key.length, 32);
  if (posix) {
    assert.equal((await stat(keyPath)).mode & 0o777, 0o600);
    assert.equal((await stat(join(dir, 'keys', 'nested'))).mode & 0o777, 0o700);
  }
  assert.deepEqual(await readdir(join(dir, 'keys', 'nested')), ['digest.key'], 'no temporary file left behind');
});

test('P-10 vault: seal/open round trip, and the key is reused on the next start', async (t) => {
  const keyPath = join(await tempDir(t), 'digest.key');
  const vault = await openDigestVault(keyPath);
  const blob = vault.seal(HA1, 'alice');
  assert.deepEqual(vault.open(blob, 'alice'), HA1);
  const reopened = await openDigestVault(keyPath);
  assert.deepEqual(reopened.open(blob, 'alice'), HA1);
});

test('P-10 / E-3 vault: the blob does not contain the HA1 and differs on every seal', async (t) => {
  const vault = await openDigestVault(join(await tempDir(t), 'digest.key'));
  const one = vault.seal(HA1, 'alice');
  const two = vault.seal(HA1, 'alice');
  assert.notEqual(one, two);
  assert.match(one, /^v1\.[A-Za-z0-9_-]+$/);
  for (const blob of [one, two]) {
    assert.ok(!blob.includes(HA1['SHA-256']) && !blob.includes(HA1.MD5));
    assert.ok(!Buffer.from(blob.slice(3), 'base64url').toString('hex').includes(HA1.MD5));
  }
});

test('P-10 vault: upper-case hex is accepted and comes back lower-case', async (t) => {
  const vault = await openDigestVault(join(await tempDir(t), 'digest.key'));
  const upper = { 'SHA-256': HA1['SHA-256'].toUpperCase(), MD5: HA1.MD5.toUpperCase() };
  assert.deepEqual(vault.open(vault.seal(upper, 'alice'), 'alice'), HA1);
});

test('P-10 vault: tampering, another user, another key, junk → undefined', async (t) => {
  const dir = await tempDir(t);
  const vault = await openDigestVault(join(dir, 'a.key'));
  const other = await openDigestVault(join(dir, 'b.key'));
  const blob = vault.seal(HA1, 'alice');
  const bytes = Buffer.from(blob.slice(3), 'base64url');

  const tampered: string[] = [];
  for (const index of [0, 12, 30, 59, 60, bytes.length - 1]) {
    const copy = Buffer.from(bytes);
    copy[index] = (copy[index] ?? 0) ^ 0x01;
    tampered.push(`v1.${copy.toString('base64url')}`);
  }
  const cases: ReadonlyArray<readonly [label: string, blob: string, aad: string]> = [
    ...tampered.map((b, i) => [`bit flipped (#${i})`, b, 'alice'] as const),
    ['aad of another user', blob, 'bob'],
    ['aad differing in case', blob, 'Alice'],
    ['truncated', blob.slice(0, -2), 'alice'],
    ['extended', `${blob}AA`, 'alice'],
    ['wrong version', `v2.${blob.slice(3)}`, 'alice'],
    ['no prefix', blob.slice(3), 'alice'],
    ['empty', '', 'alice'],
    ['not base64url', 'v1.!!!!', 'alice'],
    ['padding added', `${blob}=`, 'alice'],
  ];
  for (const [label, candidate, aad] of cases) {
    assert.equal(vault.open(candidate, aad), undefined, label);
  }
  assert.equal(other.open(blob, 'alice'), undefined, 'another key');
  assert.equal(vault.open(undefined as unknown as string, 'alice'), undefined, 'not a string');
});

test('P-10 vault: seal refuses values that are not hex HA1s (programmer input)', async (t) => {
  const vault = await openDigestVault(join(await tempDir(t), 'digest.key'));
  assert.throws(() => vault.seal({ 'SHA-256': HA1.MD5, MD5: HA1.MD5 }, 'alice'), TypeError);
  assert.throws(() => vault.seal({ 'SHA-256': HA1['SHA-256'], MD5: 'zz'.repeat(16) }, 'alice'), TypeError);
  assert.throws(() => vault.seal({ 'SHA-256': 'password', MD5: HA1.MD5 }, 'alice'), TypeError);
});

test('P-10 vault: a key file readable by others is refused', { skip: !posix && 'POSIX modes only' }, async (t) => {
  const keyPath = join(await tempDir(t), 'digest.key');
  await writeFile(keyPath, Buffer.alloc(32, 1), { mode: 0o600 });
  await chmod(keyPath, 0o644);
  await assert.rejects(openDigestVault(keyPath), /chmod 600/);
});

test('P-10 vault: a key file of the wrong size is refused, never overwritten', async (t) => {
  const keyPath = join(await tempDir(t), 'digest.key');
  await writeFile(keyPath, Buffer.alloc(16, 1), { mode: 0o600 });
  await assert.rejects(openDigestVault(keyPath), { name: 'ServiceError', code: 'ERR_DIGEST_KEY', message: /32 bytes/ });
  assert.equal((await readFile(keyPath)).length, 16);
});

test('P-10 vault: a directory where the key should be is refused', async (t) => {
  const dir = await tempDir(t);
  await assert.rejects(openDigestVault(dir), { name: 'ServiceError', code: 'ERR_DIGEST_KEY', message: /not a regular file/ });
});

test('P-10 vault: concurrent openers of a new key file agree on one key', async (t) => {
  const keyPath = join(await tempDir(t), 'digest.key');
  const vaults = await Promise.all(Array.from({ length: 8 }, () => openDigestVault(keyPath)));
  const blob = vaults[0]?.seal(HA1, 'alice') ?? '';
  for (const vault of vaults) assert.deepEqual(vault.open(blob, 'alice'), HA1);
});

test('P-10 vault: an existing key is loaded, not replaced', async (t) => {
  const keyPath = join(await tempDir(t), 'digest.key');
  const key = Buffer.alloc(32, 9);
  await writeFile(keyPath, key, { mode: 0o600 });
  await openDigestVault(keyPath);
  assert.deepEqual(await readFile(keyPath), key);
});
