import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_COST,
  createDummyHash,
  hashPassword,
  needsRehash,
  verifyPassword,
} from '../../lib/users/password-hash.js';
import type { ScryptCost } from '../../lib/users/password-hash.js';

// Low cost keeps the suite fast; one test below runs the real default.
const LOW: ScryptCost = { ln: 10, r: 8, p: 1 };
const PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]{22})\$([A-Za-z0-9+/]{43})$/;
const b64 = (bytes: Buffer): string => bytes.toString('base64').replace(/=+$/, '');

test('U-3: hashPassword writes $scrypt$ln=…,r=…,p=…$<16-byte salt>$<32-byte key>, B64 without padding', async () => {
  const phc = await hashPassword('correct horse battery staple', LOW);
  const m = PHC.exec(phc);
  assert.ok(m, phc);
  assert.deepEqual(m.slice(1, 4), ['10', '8', '1']);
  assert.equal(Buffer.from(m[4] ?? '', 'base64').length, 16);
  assert.equal(Buffer.from(m[5] ?? '', 'base64').length, 32);
});

test('U-3: each hash has its own random salt', async () => {
  const [a, b] = await Promise.all([hashPassword('same password here', LOW), hashPassword('same password here', LOW)]);
  assert.notEqual(a, b);
});

const verifications: ReadonlyArray<readonly [label: string, stored: string, attempt: string, expected: boolean]> = [
  ['the right password', 'correct horse battery staple', 'correct horse battery staple', true],
  ['a wrong password', 'correct horse battery staple', 'correct horse battery stapler', false],
  ['a different case', 'correct horse battery staple', 'Correct horse battery staple', false],
  ['the empty string', 'correct horse battery staple', '', false],
  ['no truncation: a 200-character password differing in its last character', 'x'.repeat(199) + 'a', 'x'.repeat(199) + 'b', false],
  ['U-4: NFD stored, NFC given', 'caf' + 'e\u0301 au lait, s\u0301il vous pla\u0131t', 'caf\u00e9 au lait, s\u0301il vous pla\u0131t', true],
  ['U-4: NFC stored, NFD given', 'r\u00e9sum\u00e9 of a long password', 're\u0301sume\u0301 of a long password', true],
  ['U-4: U+00A0 stored, space given', 'four\u00a0word\u00a0pass\u00a0phrase', 'four word pass phrase', true],
  ['U-4: ideographic space given, space stored', 'four word pass phrase', 'four\u3000word pass phrase', true],
  ['U-4: fullwidth letters are not folded (no NFKC)', 'ABCdef passphrase', '\uff21\uff22\uff23def passphrase', false],
  ['a password with a NUL byte', 'before\u0000after', 'before\u0000after', true],
];

for (const [label, stored, attempt, expected] of verifications) {
  test(`U-3: verifyPassword, ${label}`, async () => {
    const phc = await hashPassword(stored, LOW);
    assert.equal(await verifyPassword(attempt, phc), expected);
  });
}

test('U-4: a lone surrogate never verifies, even against a stored U+FFFD', async () => {
  const phc = await hashPassword('\ufffd'.repeat(16), LOW);
  assert.equal(await verifyPassword('\ufffd'.repeat(16), phc), true);
  assert.equal(await verifyPassword('\ud800'.repeat(16), phc), false);
  await assert.rejects(hashPassword('\ud800'.repeat(16), LOW), TypeError);
});

test('U-3: verifyPassword reads an independent scrypt vector (RFC 7914 §12, N=16384, r=8, p=1)', async () => {
  const key = Buffer.from(
    '7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2' +
      'd5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887',
    'hex',
  );
  const phc = `$scrypt$ln=14,r=8,p=1$${b64(Buffer.from('SodiumChloride'))}$${b64(key)}`;
  assert.equal(await verifyPassword('pleaseletmein', phc), true);
  assert.equal(await verifyPassword('pleaseletmeout', phc), false);
  // Parameters may come in any order (PHC string format).
  assert.equal(await verifyPassword('pleaseletmein', phc.replace('ln=14,r=8,p=1', 'p=1,ln=14,r=8')), true);
});

const SALT = b64(Buffer.alloc(16, 1));
const KEY = b64(Buffer.alloc(32, 2));
const garbage: ReadonlyArray<readonly [label: string, phc: string]> = [
  ['empty', ''],
  ['not PHC', 'hunter2'],
  ['only the id', '$scrypt$'],
  ['another algorithm', `$argon2id$v=19$m=65536,t=3,p=4$${SALT}$${KEY}`],
  ['no leading $', `scrypt$ln=10,r=8,p=1$${SALT}$${KEY}`],
  ['a parameter missing', `$scrypt$ln=10,r=8$${SALT}$${KEY}`],
  ['a parameter twice', `$scrypt$ln=10,r=8,p=1,p=1$${SALT}$${KEY}`],
  ['an unknown parameter', `$scrypt$ln=10,r=8,p=1,x=1$${SALT}$${KEY}`],
  ['ln=0', `$scrypt$ln=0,r=8,p=1$${SALT}$${KEY}`],
  ['ln=25 (too costly)', `$scrypt$ln=25,r=8,p=1$${SALT}$${KEY}`],
  ['ln=20,r=64 (64 GiB)', `$scrypt$ln=20,r=64,p=1$${SALT}$${KEY}`],
  ['a leading zero', `$scrypt$ln=010,r=8,p=1$${SALT}$${KEY}`],
  ['a sign', `$scrypt$ln=+10,r=8,p=1$${SALT}$${KEY}`],
  ['r=0', `$scrypt$ln=10,r=0,p=1$${SALT}$${KEY}`],
  ['p=17', `$scrypt$ln=10,r=8,p=17$${SALT}$${KEY}`],
  ['a huge number', `$scrypt$ln=99999999999999999999,r=8,p=1$${SALT}$${KEY}`],
  ['no hash', `$scrypt$ln=10,r=8,p=1$${SALT}`],
  ['an extra field', `$scrypt$ln=10,r=8,p=1$${SALT}$${KEY}$x`],
  ['empty salt', `$scrypt$ln=10,r=8,p=1$$${KEY}`],
  ['salt with a bad character', `$scrypt$ln=10,r=8,p=1$${SALT.slice(1)}!$${KEY}`],
  ['padded base64', `$scrypt$ln=10,r=8,p=1$${SALT}==$${KEY}`],
  ['base64url alphabet', `$scrypt$ln=10,r=8,p=1$${SALT}$${KEY.slice(1)}_`],
  ['non-canonical base64 (trailing bits set)', `$scrypt$ln=10,r=8,p=1$${SALT.slice(0, -1)}B$${KEY}`],
  ['a 4-byte salt', `$scrypt$ln=10,r=8,p=1$${b64(Buffer.alloc(4))}$${KEY}`],
  ['an 8-byte key', `$scrypt$ln=10,r=8,p=1$${SALT}$${b64(Buffer.alloc(8))}`],
  ['a 1 MB string', '$scrypt$ln=10,r=8,p=1$' + 'A'.repeat(1_000_000)],
];

for (const [label, phc] of garbage) {
  test(`U-3: unparseable PHC (${label}) verifies as false, needs a rehash, never throws`, async () => {
    assert.equal(await verifyPassword('any password at all', phc), false);
    assert.equal(needsRehash(phc, LOW), true);
  });
}

const rehash: ReadonlyArray<readonly [label: string, stored: ScryptCost, configured: ScryptCost, expected: boolean]> = [
  ['same cost', LOW, LOW, false],
  ['ln below', LOW, { ...LOW, ln: 11 }, true],
  ['r below', LOW, { ...LOW, r: 16 }, true],
  ['p below', LOW, { ...LOW, p: 2 }, true],
  ['stored above the configured cost is kept (no downgrade)', { ln: 11, r: 16, p: 2 }, LOW, false],
  ['ln above but r below', { ...LOW, ln: 11 }, { ...LOW, r: 9 }, true],
];

for (const [label, stored, configured, expected] of rehash) {
  test(`U-3: needsRehash, ${label}`, async () => {
    const phc = await hashPassword('correct horse battery staple', stored);
    assert.equal(needsRehash(phc, configured), expected);
  });
}

test('U-3: needsRehash flags short salts and keys written by older code', () => {
  const shortSalt = `$scrypt$ln=10,r=8,p=1$${b64(Buffer.alloc(8, 1))}$${KEY}`;
  const shortKey = `$scrypt$ln=10,r=8,p=1$${SALT}$${b64(Buffer.alloc(16, 2))}`;
  assert.equal(needsRehash(shortSalt, LOW), true);
  assert.equal(needsRehash(shortKey, LOW), true);
  assert.equal(needsRehash(`$scrypt$ln=10,r=8,p=1$${SALT}$${KEY}`, LOW), false);
});

test('U-3: createDummyHash gives a well-formed hash at the given cost that no password matches', async () => {
  const dummy = await createDummyHash(LOW);
  assert.match(dummy, PHC);
  assert.ok(dummy.startsWith('$scrypt$ln=10,r=8,p=1$'));
  assert.equal(needsRehash(dummy, LOW), false);
  assert.equal(await verifyPassword('', dummy), false);
  assert.equal(await verifyPassword('correct horse battery staple', dummy), false);
  assert.notEqual(await createDummyHash(LOW), dummy);
});

const badCosts: ReadonlyArray<readonly [label: string, cost: ScryptCost]> = [
  ['ln=0', { ln: 0, r: 8, p: 1 }],
  ['ln=1.5', { ln: 1.5, r: 8, p: 1 }],
  ['ln=25', { ln: 25, r: 8, p: 1 }],
  ['r=0', { ln: 10, r: 0, p: 1 }],
  ['p=0', { ln: 10, r: 8, p: 0 }],
  ['p=17', { ln: 10, r: 8, p: 17 }],
  ['over 1 GiB (ln=21, r=8)', { ln: 21, r: 8, p: 1 }],
  ['NaN', { ln: Number.NaN, r: 8, p: 1 }],
];

for (const [label, cost] of badCosts) {
  test(`U-3: hashPassword refuses a bad cost (${label}) loudly`, async () => {
    await assert.rejects(hashPassword('correct horse battery staple', cost), RangeError);
  });
}

test('U-3: the default cost works end to end (N=2^17, r=8, p=1; maxmem set)', async () => {
  assert.deepEqual(DEFAULT_COST, { ln: 17, r: 8, p: 1 });
  const phc = await hashPassword('correct horse battery staple');
  assert.ok(phc.startsWith('$scrypt$ln=17,r=8,p=1$'), phc);
  assert.equal(await verifyPassword('correct horse battery staple', phc), true);
  assert.equal(needsRehash(phc, DEFAULT_COST), false);
});
