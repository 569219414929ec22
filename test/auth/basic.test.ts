import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { basicChallenge, parseBasic } from '../../lib/auth/basic.js';
import type { Credentials } from '../../lib/auth/basic.js';

const b64 = (bytes: string | Buffer): string => Buffer.from(bytes).toString('base64');

const cases: ReadonlyArray<readonly [label: string, header: string | undefined, expected: Credentials | 'malformed' | undefined]> = [
  // RFC 7617 §2 and §2.1 examples
  ['RFC 7617 §2 Aladdin', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', { name: 'Aladdin', password: 'open sesame' }],
  ['RFC 7617 §2.1 test:123£ in UTF-8', 'Basic dGVzdDoxMjPCow==', { name: 'test', password: '123£' }],
  // absent or another scheme: not ours to judge
  ['no header', undefined, undefined],
  ['empty header', '', undefined],
  ['Bearer scheme', 'Bearer abc', undefined],
  ['Digest scheme', 'Digest username="a"', undefined],
  ['scheme glued to junk', 'Basic:QWxhZGRpbjpvcGVuIHNlc2FtZQ==', undefined],
  // scheme is case-insensitive, whitespace is tolerated
  ['lower-case scheme', 'basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', { name: 'Aladdin', password: 'open sesame' }],
  ['upper-case scheme', 'BASIC QWxhZGRpbjpvcGVuIHNlc2FtZQ==', { name: 'Aladdin', password: 'open sesame' }],
  ['several spaces and trailing OWS', '  Basic    QWxhZGRpbjpvcGVuIHNlc2FtZQ==  ', { name: 'Aladdin', password: 'open sesame' }],
  // splitting at the FIRST colon
  ['colon in password', `Basic ${b64('u:p:a:ss')}`, { name: 'u', password: 'p:a:ss' }],
  ['empty password', `Basic ${b64('u:')}`, { name: 'u', password: '' }],
  ['empty name', `Basic ${b64(':pw')}`, { name: '', password: 'pw' }],
  ['BOM is kept, not stripped', `Basic ${b64('\uFEFFu:p')}`, { name: '\uFEFFu', password: 'p' }],
  ['astral characters', `Basic ${b64('😀:🔑')}`, { name: '😀', password: '🔑' }],
  // malformed
  ['scheme only', 'Basic', 'malformed'],
  ['scheme and spaces', 'Basic   ', 'malformed'],
  ['no colon', `Basic ${b64('nocolon')}`, 'malformed'],
  ['missing padding', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ', 'malformed'],
  ['too much padding', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ===', 'malformed'],
  ['padding inside', 'Basic QQ==QQ==', 'malformed'],
  ['url-safe alphabet', `Basic ${b64(Buffer.from([0xfb, 0xff, 0x3a, 0x61])).replace(/\+/g, '-').replace(/\//g, '_')}`, 'malformed'],
  ['full quantum, no padding needed', 'Basic dTpw', { name: 'u', password: 'p' }],
  ['canonical padding', 'Basic dTo=', { name: 'u', password: '' }],
  ['non-zero bits before = (not canonical)', 'Basic dTp=', 'malformed'],
  ['junk characters', 'Basic QWxh*GRpbjpvcGVuIHNlc2FtZQ==', 'malformed'],
  ['two tokens', 'Basic QWxh ZGRp', 'malformed'],
  ['auth-param form', 'Basic realm="x"', 'malformed'],
  ['Latin-1 bytes, not UTF-8 (U-4)', `Basic ${b64(Buffer.from([0x74, 0x3a, 0xa3]))}`, 'malformed'],
  ['overlong UTF-8', `Basic ${b64(Buffer.from([0x75, 0x3a, 0xc0, 0xaf]))}`, 'malformed'],
  ['encoded lone surrogate', `Basic ${b64(Buffer.from([0x75, 0x3a, 0xed, 0xa0, 0x80]))}`, 'malformed'],
  ['control character in password (RFC 7617 §2)', `Basic ${b64('u:p\n')}`, 'malformed'],
  ['NUL in name', `Basic ${b64('u\0:p')}`, 'malformed'],
  ['C1 control', `Basic ${b64('u:p\u0085')}`, 'malformed'],
  ['DEL', `Basic ${b64('u:p\u007f')}`, 'malformed'],
  ['too long', `Basic ${b64(`u:${'x'.repeat(7000)}`)}`, 'malformed'],
];

for (const [label, header, expected] of cases) {
  test(`P-2 parseBasic: ${label}`, () => {
    assert.deepEqual(parseBasic(header), expected);
  });
}

test('P-2 parseBasic: a long but reasonable password is accepted (1024 × 4-byte code points)', () => {
  const password = '😀'.repeat(1024);
  assert.deepEqual(parseBasic(`Basic ${b64(`name:${password}`)}`), { name: 'name', password });
});

test('P-2 parseBasic never throws and round-trips what curl would send', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (header) => {
      const result = parseBasic(header);
      assert.ok(result === undefined || result === 'malformed' || typeof result.name === 'string');
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(
      fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes(':') && !/\p{Cc}/u.test(s)),
      fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !/\p{Cc}/u.test(s)),
      (name, password) => {
        assert.deepEqual(parseBasic(`Basic ${b64(`${name}:${password}`)}`), { name, password });
      },
    ),
  );
});

test('P-2 basicChallenge announces UTF-8 (RFC 7617 §2.1)', () => {
  assert.equal(basicChallenge('httpskit'), 'Basic realm="httpskit", charset="UTF-8"');
});

for (const realm of ['a"b', 'a\\b', 'a\nb', 'a\u0000b', 'caf\u00e9', '']) {
  test(`P-2 basicChallenge refuses realm ${JSON.stringify(realm)}`, () => {
    assert.throws(() => basicChallenge(realm), TypeError);
  });
}
