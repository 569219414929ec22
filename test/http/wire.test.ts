// Table tests for the small wire parsers of lib/http: query strings, If-None-Match, Content-Type,
// trusted proxies. Each is lenient with the wire (undefined, never a throw).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseContentType } from '../../lib/http/body.js';
import { parseQuery } from '../../lib/http/query.js';
import { ifNoneMatchHits } from '../../lib/http/reply.js';
import { clientAddress, parseTrustProxy } from '../../lib/http/trust-proxy.js';

const queries: ReadonlyArray<readonly [raw: string, expected: Record<string, string[]> | undefined]> = [
  ['', {}],
  ['param1=a', { param1: ['a'] }],
  ['param1=a+b&param1=%2B', { param1: ['a b', '+'] }],
  ['a&b=', { a: [''], b: [''] }],
  ['&&x=1&', { x: ['1'] }],
  ['k=%E2%82%AC', { k: ['€'] }],
  ['k=%', undefined],
  ['k=%G1', undefined],
  ['k=%FF', undefined],
  ['k=%ED%A0%80', undefined], // an encoded lone surrogate is not UTF-8
  ['%=1', undefined],
];
for (const [raw, expected] of queries) {
  test(`N-8 parseQuery(${JSON.stringify(raw)})`, () => {
    const q = parseQuery(raw);
    assert.deepEqual(q === undefined ? undefined : Object.fromEntries(q), expected);
  });
}

const etag = '"abc"';
const inm: ReadonlyArray<readonly [header: string | undefined, hit: boolean]> = [
  [undefined, false],
  ['"abc"', true],
  ['W/"abc"', true],
  ['"x", "abc"', true],
  [' "x" ,W/"abc" ', true],
  ['*', true],
  ['"abcd"', false],
  ['abc', false],
  ['"abc', false],
  ['', false],
];
for (const [header, hit] of inm) {
  test(`N-7 If-None-Match ${JSON.stringify(header)} vs ${etag} → ${hit}`, () => assert.equal(ifNoneMatchHits(header, etag), hit));
}

const types: ReadonlyArray<readonly [header: string | undefined, expected: { type: string; charset: string | undefined } | undefined]> = [
  [undefined, undefined],
  ['text/plain', { type: 'text/plain', charset: undefined }],
  ['Text/Plain; Charset="UTF-8"', { type: 'text/plain', charset: 'utf-8' }],
  ['application/json;charset=utf-8; foo=bar', { type: 'application/json', charset: 'utf-8' }],
  ['text/plain;', { type: 'text/plain', charset: undefined }],
  ['text', undefined],
  ['text/plain; junk', undefined],
  ['te xt/plain', undefined],
];
for (const [header, expected] of types) {
  test(`P-4 parseContentType(${JSON.stringify(header)})`, () => assert.deepEqual(parseContentType(header), expected));
}

test('T-5 trusted proxies: addresses and CIDR ranges, IPv4-mapped peers, nearest untrusted hop', () => {
  const trust = parseTrustProxy('10.0.0.0/8, 192.0.2.1, ::1');
  assert.equal(trust.isTrusted('10.1.2.3'), true);
  assert.equal(trust.isTrusted('::ffff:10.1.2.3'), true);
  assert.equal(trust.isTrusted('192.0.2.1'), true);
  assert.equal(trust.isTrusted('192.0.2.2'), false);
  assert.equal(trust.isTrusted('::1'), true);
  assert.equal(trust.isTrusted('garbage'), false);
  assert.equal(clientAddress('10.0.0.1', '203.0.113.9, 10.0.0.2', trust), '203.0.113.9');
  assert.equal(clientAddress('10.0.0.1', 'junk, 10.0.0.2', trust), '10.0.0.2');
  assert.equal(clientAddress('203.0.113.5', '1.2.3.4', trust), '203.0.113.5', 'an untrusted peer cannot name the client');
  assert.equal(parseTrustProxy('').isTrusted('127.0.0.1'), false);
  for (const bad of ['nope', '10.0.0.0/33', '::1/129', '10.0.0.0/x']) assert.throws(() => parseTrustProxy(bad), TypeError, bad);
});
