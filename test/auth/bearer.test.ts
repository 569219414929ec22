import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { bearerChallenge, parseBearer } from '../../lib/auth/bearer.js';

const token = randomBytes(32).toString('base64url'); // the shape of a P-9 reset token

const cases: ReadonlyArray<readonly [label: string, header: string | undefined, expected: string | 'malformed' | undefined]> = [
  ['a reset token', `Bearer ${token}`, token],
  ['RFC 6750 §2.1 example', 'Bearer mF_9.B5f-4.1JqM', 'mF_9.B5f-4.1JqM'],
  ['all b64token characters and padding', 'Bearer aZ09-._~+/==', 'aZ09-._~+/=='],
  ['lower-case scheme', `bearer ${token}`, token],
  ['extra whitespace', `  Bearer   ${token} `, token],
  ['no header', undefined, undefined],
  ['empty header', '', undefined],
  ['Basic scheme', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', undefined],
  ['prefix of another scheme', 'BearerX abc', undefined],
  ['scheme only', 'Bearer', 'malformed'],
  ['scheme and spaces', 'Bearer   ', 'malformed'],
  ['two tokens', 'Bearer abc def', 'malformed'],
  ['auth-param form', 'Bearer token="abc"', 'malformed'],
  ['only padding', 'Bearer ==', 'malformed'],
  ['padding in the middle', 'Bearer ab=cd', 'malformed'],
  ['comma', 'Bearer abc,def', 'malformed'],
  ['non-ASCII', 'Bearer abcé', 'malformed'],
  ['too long', `Bearer ${'a'.repeat(5000)}`, 'malformed'],
];

for (const [label, header, expected] of cases) {
  test(`P-9 parseBearer: ${label}`, () => {
    assert.equal(parseBearer(header), expected);
  });
}

test('P-9 parseBearer never throws on arbitrary input', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (header) => {
      const result = parseBearer(header);
      assert.ok(result === undefined || typeof result === 'string');
      assert.ok(result === undefined || result === 'malformed' || header.includes(result));
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (rest) => {
      const result = parseBearer(`Bearer ${rest}`);
      assert.ok(result !== undefined);
    }),
    { numRuns: 1000 },
  );
});

test('P-2 bearerChallenge (RFC 6750 §3)', () => {
  assert.equal(bearerChallenge('httpskit'), 'Bearer realm="httpskit"');
  assert.equal(bearerChallenge('httpskit', 'invalid_token'), 'Bearer realm="httpskit", error="invalid_token"');
  assert.equal(bearerChallenge('httpskit', 'invalid_request'), 'Bearer realm="httpskit", error="invalid_request"');
});

test('P-2 bearerChallenge refuses bad realms and error codes', () => {
  assert.throws(() => bearerChallenge('a"b'), TypeError);
  assert.throws(() => bearerChallenge('a\r\nb'), TypeError);
  assert.throws(() => bearerChallenge('x', 'insufficient_scope' as 'invalid_token'), TypeError);
});
