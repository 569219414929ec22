import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isToken68, parseAuthParams, splitCredentials } from '../../lib/auth/credentials.js';

const splits: ReadonlyArray<readonly [input: string, scheme: string, rest: string]> = [
  ['Basic abc', 'basic', 'abc'],
  ['  DIGEST   a=b, c="d"  ', 'digest', 'a=b, c="d"'],
  ['Bearer\tabc', 'bearer', 'abc'],
  ['Negotiate', 'negotiate', ''],
  ['', '', ''],
];

for (const [input, scheme, rest] of splits) {
  test(`RFC 9110 §11.4 splitCredentials ${JSON.stringify(input)}`, () => {
    assert.deepEqual(splitCredentials(input), { scheme, rest });
  });
}

const token68: ReadonlyArray<readonly [string, boolean]> = [
  ['abc', true],
  ['a-._~+/b==', true],
  ['==', false],
  ['a=b', false],
  ['', false],
  ['a b', false],
  ['a,b', false],
];

for (const [input, expected] of token68) {
  test(`RFC 9110 §11.2 isToken68 ${JSON.stringify(input)} → ${String(expected)}`, () => {
    assert.equal(isToken68(input), expected);
  });
}

type Entries = ReadonlyArray<readonly [name: string, value: string, quoted: boolean]>;

const lists: ReadonlyArray<readonly [input: string, expected: Entries | undefined]> = [
  ['', []],
  ['a=b', [['a', 'b', false]]],
  ['A=b, c="d, e"', [['a', 'b', false], ['c', 'd, e', true]]],
  ['a="x\\"y\\\\z"', [['a', 'x"y\\z', true]]],
  ['a = "" ,, b=c ,', [['a', '', true], ['b', 'c', false]]],
  ['__proto__=x', [['__proto__', 'x', false]]],
  ['a=b, A=c', undefined],
  ['a', undefined],
  ['a=', undefined],
  ['a="b', undefined],
  ['a=b c=d', undefined],
  ['a=b"', undefined],
  ['a=\u0100', undefined],
  ['a="\u0100"', undefined],
];

for (const [input, expected] of lists) {
  test(`RFC 9110 §11.2 parseAuthParams ${JSON.stringify(input)}`, () => {
    const result = parseAuthParams(input);
    if (expected === undefined) {
      assert.equal(result, undefined);
      return;
    }
    assert.ok(result !== undefined);
    assert.deepEqual([...result].map(([name, param]) => [name, param.value, param.quoted]), expected);
  });
}
