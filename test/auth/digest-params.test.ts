import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDigest } from '../../lib/auth/digest-params.js';
import type { DigestParams } from '../../lib/auth/digest-params.js';

// RFC 7616 §3.9.1, SHA-256 flavour, exactly as printed (folded onto one line).
const RFC_SHA256 =
  'Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=SHA-256, ' +
  'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, ' +
  'cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, ' +
  'response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", ' +
  'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"';

const RFC_SHA256_PARAMS: DigestParams = {
  username: 'Mufasa',
  realm: 'http-auth@example.org',
  uri: '/dir/index.html',
  algorithm: 'SHA-256',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  nc: '00000001',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  qop: 'auth',
  response: '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
  opaque: 'FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS',
  userhash: false,
};

// RFC 7616 §3.9.2 (username* form), with the algorithm switched to one we support.
const RFC_EXT_USERNAME =
  "Digest username*=UTF-8''J%C3%A4s%C3%B8n%20Doe, realm=\"api@example.org\", uri=\"/doe.json\", " +
  'algorithm=SHA-256, nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", nc=00000001, ' +
  'cnonce="NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v", qop=auth, ' +
  'response="3798d4131c277846293534c3edc11bd8a5e4cdcbff78b05db9d95eeb1cec68a5", ' +
  'opaque="HRPCssKJSGjCrkzDg8OhwpzCiGPChXYjwrI2QmXDnsOS", userhash=false';

const MD5_RESPONSE = '8ca523f5e9506fed4657c9700eebdbec';

/** A valid MD5 header with some parameters replaced (null removes one). */
function header(overrides: Readonly<Record<string, string | null>> = {}): string {
  const base: Record<string, string> = {
    username: '"Mufasa"',
    realm: '"http-auth@example.org"',
    uri: '"/dir/index.html"',
    algorithm: 'MD5',
    nonce: '"n1"',
    nc: '00000001',
    cnonce: '"c1"',
    qop: 'auth',
    response: `"${MD5_RESPONSE}"`,
  };
  const merged: Record<string, string | null> = { ...base, ...overrides };
  const parts = Object.entries(merged)
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .map(([name, value]) => `${name}=${value}`);
  return `Digest ${parts.join(', ')}`;
}

const MD5_PARAMS: DigestParams = {
  username: 'Mufasa',
  realm: 'http-auth@example.org',
  uri: '/dir/index.html',
  algorithm: 'MD5',
  nonce: 'n1',
  nc: '00000001',
  cnonce: 'c1',
  qop: 'auth',
  response: MD5_RESPONSE,
  userhash: false,
};

type Expected = Partial<DigestParams> | 'malformed' | undefined;

const cases: ReadonlyArray<readonly [label: string, input: string | undefined, expected: Expected]> = [
  ['RFC 7616 §3.9.1 SHA-256 example', RFC_SHA256, RFC_SHA256_PARAMS],
  ['RFC 7616 §3.9.2 username* (RFC 8187) decodes to UTF-8', RFC_EXT_USERNAME, { username: 'Jäsøn Doe', userhash: false }],
  ['RFC 7616 §3.9.2 as printed uses SHA-512-256, which we do not offer', RFC_EXT_USERNAME.replace('SHA-256', 'SHA-512-256'), 'malformed'],
  ['baseline MD5', header(), MD5_PARAMS],
  // absent / other schemes
  ['no header', undefined, undefined],
  ['empty header', '', undefined],
  ['Basic scheme', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', undefined],
  ['DigestX scheme', 'DigestX username="a"', undefined],
  ['huge header of another scheme', `Bearer ${'a'.repeat(100_000)}`, undefined],
  // scheme and names are case-insensitive; whitespace is tolerated
  ['lower-case scheme', header().replace('Digest', 'digest'), MD5_PARAMS],
  ['upper-case parameter names', header().replace('username=', 'USERNAME=').replace('nc=', 'NC='), MD5_PARAMS],
  ['BWS around =', header().replace('realm=', 'realm =  ').replace('qop=', 'qop\t=\t'), MD5_PARAMS],
  ['no space after commas', header().replace(/, /g, ','), MD5_PARAMS],
  ['empty list elements', header().replace('Digest ', 'Digest , ,').replace(', nc', ',, , nc') + ' ,', MD5_PARAMS],
  ['tab after scheme', header().replace('Digest ', 'Digest\t'), MD5_PARAMS],
  ['unknown parameters are ignored', header({ foo: 'bar', 'x-y': '"z"' }), MD5_PARAMS],
  // quoted strings
  ['escapes in quoted-string', header({ username: '"Mu\\"fa\\\\sa"' }), { username: 'Mu"fa\\sa' }],
  ['escaped ordinary char', header({ cnonce: '"\\c1"' }), { cnonce: 'c1' }],
  ['commas and = inside quotes', header({ cnonce: '"a, b=c,"' }), { cnonce: 'a, b=c,' }],
  ['token forms where quotes are usual', header({ username: 'Mufasa', nonce: 'n1', cnonce: 'c1' }), MD5_PARAMS],
  ['quoted forms where tokens are usual', header({ algorithm: '"MD5"', qop: '"auth"', nc: '"00000001"' }), MD5_PARAMS],
  ['raw UTF-8 octets in username (Latin-1 view)', header({ username: '"J\u00c3\u00a4s\u00c3\u00b8n Doe"' }), { username: 'Jäsøn Doe' }],
  ['username with a colon or space is just text', header({ username: '"a: b"' }), { username: 'a: b' }],
  // algorithm
  ['algorithm absent means MD5 (RFC 7616 §3.3)', header({ algorithm: null }), MD5_PARAMS],
  ['algorithm is case-insensitive', header({ algorithm: 'md5' }), MD5_PARAMS],
  ['SHA-256 in lower case', RFC_SHA256.replace('SHA-256', 'sha-256'), RFC_SHA256_PARAMS],
  ['MD5-sess is refused', header({ algorithm: 'MD5-sess' }), 'malformed'],
  ['SHA-256-sess is refused', RFC_SHA256.replace('SHA-256', 'SHA-256-sess'), 'malformed'],
  ['unknown algorithm', header({ algorithm: 'SHA-1' }), 'malformed'],
  ['empty algorithm', header({ algorithm: '""' }), 'malformed'],
  ['response length must fit the algorithm', header({ algorithm: 'SHA-256' }), 'malformed'],
  // qop
  ['qop missing', header({ qop: null }), 'malformed'],
  ['qop auth-int', header({ qop: 'auth-int' }), 'malformed'],
  ['qop list', header({ qop: '"auth,auth-int"' }), 'malformed'],
  ['qop in upper case (it is hashed as sent)', header({ qop: 'AUTH' }), 'malformed'],
  // nc, response, userhash
  ['nc upper-case hex is fine', header({ nc: '0000000A' }), { nc: '0000000A' }],
  ['nc too short', header({ nc: '0000001' }), 'malformed'],
  ['nc too long', header({ nc: '000000001' }), 'malformed'],
  ['nc not hex', header({ nc: '0000000g' }), 'malformed'],
  ['response upper-case is lower-cased', header({ response: `"${MD5_RESPONSE.toUpperCase()}"` }), { response: MD5_RESPONSE }],
  ['response not hex', header({ response: `"${'z'.repeat(32)}"` }), 'malformed'],
  ['userhash=true', header({ userhash: 'true' }), { userhash: true }],
  ['userhash="TRUE"', header({ userhash: '"TRUE"' }), { userhash: true }],
  ['userhash=false', header({ userhash: 'false' }), { userhash: false }],
  ['userhash=yes', header({ userhash: 'yes' }), 'malformed'],
  ['opaque kept', header({ opaque: '"op"' }), { opaque: 'op' }],
  // missing fields
  ['no parameters', 'Digest', 'malformed'],
  ['only spaces', 'Digest    ', 'malformed'],
  ['username missing', header({ username: null }), 'malformed'],
  ['username empty', header({ username: '""' }), 'malformed'],
  ['realm missing', header({ realm: null }), 'malformed'],
  ['realm empty is allowed (and will not match ours)', header({ realm: '""' }), { realm: '' }],
  ['nonce missing', header({ nonce: null }), 'malformed'],
  ['nonce empty', header({ nonce: '""' }), 'malformed'],
  ['uri missing', header({ uri: null }), 'malformed'],
  ['response missing', header({ response: null }), 'malformed'],
  ['nc missing', header({ nc: null }), 'malformed'],
  ['cnonce missing', header({ cnonce: null }), 'malformed'],
  // username*
  ['username and username* together', header({ 'username*': "UTF-8''x" }), 'malformed'],
  ['username* with userhash=true', header({ username: null, 'username*': "UTF-8''x", userhash: 'true' }), 'malformed'],
  ['username* charset is case-insensitive, language allowed', header({ username: null, 'username*': "utf-8'en'%41b" }), { username: 'Ab' }],
  ['username* quoted is not an ext-value', header({ username: null, 'username*': '"UTF-8\'\'x"' }), 'malformed'],
  ['username* in ISO-8859-1 is refused', header({ username: null, 'username*': "ISO-8859-1''%E4" }), 'malformed'],
  ['username* with bad percent-encoding', header({ username: null, 'username*': "UTF-8''%G1" }), 'malformed'],
  ['username* with truncated percent-encoding', header({ username: null, 'username*': "UTF-8''ab%4" }), 'malformed'],
  ['username* that is not UTF-8', header({ username: null, 'username*': "UTF-8''%C3" }), 'malformed'],
  ['username* without quotes around language', header({ username: null, 'username*': 'UTF-8x' }), 'malformed'],
  ['username* empty', header({ username: null, 'username*': "UTF-8''" }), 'malformed'],
  // duplicates and junk
  ['duplicate parameter', header({ realm: '"a", realm="a"' }), 'malformed'],
  ['duplicate parameter differing in case', header({ realm: '"a", REALM="a"' }), 'malformed'],
  ['username not UTF-8 (U-4)', header({ username: '"\u00a3"' }), 'malformed'],
  ['character above U+00FF cannot come off the wire', header({ username: '"\u20ac"' }), 'malformed'],
  ['unterminated quoted-string', header().replace(/"c1"/, '"c1'), 'malformed'],
  ['backslash at the very end', `${header()}, x="\\`, 'malformed'],
  ['control character in quoted-string', header({ cnonce: '"c\u00011"' }), 'malformed'],
  ['escaped control character', header({ cnonce: '"c\\\n1"' }), 'malformed'],
  ['DEL in quoted-string', header({ cnonce: '"c\u007f"' }), 'malformed'],
  ['token68 instead of params', 'Digest QWxhZGRpbjpvcGVuIHNlc2FtZQ==', 'malformed'],
  ['bare token', `${header()}, flag`, 'malformed'],
  ['missing comma', header().replace(', nc=', ' nc='), 'malformed'],
  ['empty value', header({ opaque: '' }), 'malformed'],
  ['value with garbage after quotes', header({ cnonce: '"c1"x' }), 'malformed'],
  ['name with a separator', `${header()}, a/b=c`, 'malformed'],
  ['leading = without name', `${header()}, =x`, 'malformed'],
  ['huge header', header({ cnonce: `"${'a'.repeat(20_000)}"` }), 'malformed'],
];

for (const [label, input, expected] of cases) {
  test(`P-10 parseDigest: ${label}`, () => {
    const result = parseDigest(input);
    if (expected === undefined || expected === 'malformed') {
      assert.equal(result, expected);
      return;
    }
    assert.ok(result !== undefined && result !== 'malformed', `expected params, got ${String(result)}`);
    assert.deepEqual(pick(result, Object.keys(expected)), expected);
  });
}

function pick(params: DigestParams, keys: readonly string[]): Record<string, unknown> {
  const record: Record<string, unknown> = { ...params };
  return Object.fromEntries(keys.map((key) => [key, record[key]]));
}

test('P-10 parseDigest omits opaque when absent (exactOptionalPropertyTypes)', () => {
  const result = parseDigest(header());
  assert.ok(typeof result === 'object');
  assert.equal('opaque' in result, false);
});

test('P-10 parseDigest is linear on pathological input', () => {
  // Each of these would make a backtracking parser crawl; they must just be answered.
  assert.equal(parseDigest(`Digest ${'a=b,'.repeat(3000)}`), 'malformed');
  assert.equal(parseDigest(`Digest x="${'\\"'.repeat(7000)}`), 'malformed');
  assert.equal(parseDigest(`Digest ${','.repeat(16_000)}`), 'malformed');
  assert.equal(parseDigest(`Digest ${' '.repeat(16_000)}x`), 'malformed');
});

test('P-10 parseDigest never throws on arbitrary strings', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), (input) => {
      const result = parseDigest(input);
      assert.ok(result === undefined || result === 'malformed' || typeof result === 'object');
    }),
    { numRuns: 3000 },
  );
  // Biased towards the grammar's own characters, so the scanner's branches are all reached.
  const alphabet = fc.constantFrom('a', 'Z', '0', '=', ',', '"', '\\', ' ', '\t', '*', "'", '%', '\u00e4', '\u0001');
  fc.assert(
    fc.property(fc.array(alphabet, { maxLength: 200 }), (chars) => {
      const result = parseDigest(`Digest ${chars.join('')}`);
      assert.ok(result !== undefined);
    }),
    { numRuns: 3000 },
  );
});

test('P-10 parseDigest reads back any quotable value that is quoted and escaped', () => {
  // qdtext and quoted-pair allow HTAB, SP, VCHAR and obs-text (RFC 9110 §5.6.4).
  const quotable = fc
    .array(fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f && (c < 0x80 || c > 0x9f)), { minLength: 1, maxLength: 40 })
    .map((codes) => String.fromCharCode(...codes));
  const quote = (value: string): string => `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  fc.assert(
    fc.property(quotable, quotable, quotable, (nonce, cnonce, uri) => {
      const result = parseDigest(header({ nonce: quote(nonce), cnonce: quote(cnonce), uri: quote(uri) }));
      assert.ok(typeof result === 'object');
      assert.equal(result.nonce, nonce);
      assert.equal(result.cnonce, cnonce);
      assert.equal(result.uri, uri);
    }),
  );
});
