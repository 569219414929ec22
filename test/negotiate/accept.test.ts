import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_ACCEPT_ENTRIES, MAX_ACCEPT_LENGTH, parseAccept } from '../../lib/negotiate/accept.js';
import type { MediaRange } from '../../lib/negotiate/accept.js';

// Expected range, compactly: [type/subtype, q, position, params?]
type Expected = readonly [range: string, q: number, position: number, params?: Readonly<Record<string, string>>];

function simplify(ranges: readonly MediaRange[]): Expected[] {
  return ranges.map((r) => {
    const row: [string, number, number, Record<string, string>?] = [`${r.type}/${r.subtype}`, r.q, r.position];
    if (r.params.size > 0) row.push(Object.fromEntries(r.params));
    return row;
  });
}

const ANY: readonly Expected[] = [['*/*', 1, 0]];

const cases: ReadonlyArray<readonly [why: string, header: string | undefined, expected: readonly Expected[]]> = [
  // No header / no entries → */*
  ['absent header means */*', undefined, ANY],
  ['empty header means */*', '', ANY],
  ['blank header means */*', ' \t ', ANY],
  ['only empty list elements mean */*', ' , ,, ', ANY],
  // Basic shapes
  ['one type', 'application/json', [['application/json', 1, 0]]],
  ['type wildcard', 'text/*', [['text/*', 1, 0]]],
  ['full wildcard', '*/*', [['*/*', 1, 0]]],
  ['list keeps header order', 'application/xml, text/xml;q=0.5', [['application/xml', 1, 0], ['text/xml', 0.5, 1]]],
  ['types are lowercased', 'Application/JSON, TEXT/*', [['application/json', 1, 0], ['text/*', 1, 1]]],
  ['suffix and vendor types are tokens', 'application/vnd.api+json', [['application/vnd.api+json', 1, 0]]],
  // q values (RFC 9110 §12.4.2)
  ['q=0', 'application/json;q=0', [['application/json', 0, 0]]],
  ['q=1', 'application/json;q=1', [['application/json', 1, 0]]],
  ['q=1.0', 'application/json;q=1.0', [['application/json', 1, 0]]],
  ['q=1.000', 'application/json;q=1.000', [['application/json', 1, 0]]],
  ['q=0.5', 'application/json;q=0.5', [['application/json', 0.5, 0]]],
  ['q=0.001', 'application/json;q=0.001', [['application/json', 0.001, 0]]],
  ['q=0.999', 'application/json;q=0.999', [['application/json', 0.999, 0]]],
  ['q=0. (no digits) is 0', 'application/json;q=0.', [['application/json', 0, 0]]],
  ['q=1. (no digits) is 1', 'application/json;q=1.', [['application/json', 1, 0]]],
  ['legacy .5 is tolerated', 'application/json;q=.5', [['application/json', 0.5, 0]]],
  ['legacy .125', 'application/json;q=.125', [['application/json', 0.125, 0]]],
  ['upper-case Q is the weight too', 'application/json;Q=0.3', [['application/json', 0.3, 0]]],
  ['whitespace around ; and = is tolerated', 'application/json ; q = 0.3 ', [['application/json', 0.3, 0]]],
  // Invalid q → that entry is skipped, the rest count (position keeps the slot)
  ['q=1.5 is skipped', 'application/json;q=1.5, text/xml', [['text/xml', 1, 1]]],
  ['q=1.001 is skipped', 'application/json;q=1.001, text/xml', [['text/xml', 1, 1]]],
  ['q=abc is skipped', 'application/json;q=abc, text/xml', [['text/xml', 1, 1]]],
  ['q=Infinity is skipped', 'application/json;q=Infinity, text/xml', [['text/xml', 1, 1]]],
  ['q=0.0001 (four decimals) is skipped', 'application/json;q=0.0001, text/xml', [['text/xml', 1, 1]]],
  ['q=1.0000 (four decimals) is skipped', 'application/json;q=1.0000, text/xml', [['text/xml', 1, 1]]],
  ['q=-0 is skipped', 'application/json;q=-0, text/xml', [['text/xml', 1, 1]]],
  ['empty q is skipped', 'application/json;q=, text/xml', [['text/xml', 1, 1]]],
  ['q=. is skipped', 'application/json;q=., text/xml', [['text/xml', 1, 1]]],
  ['q=00.5 is skipped', 'application/json;q=00.5, text/xml', [['text/xml', 1, 1]]],
  ['q=2 is skipped', 'application/json;q=2, text/xml', [['text/xml', 1, 1]]],
  ['q=1e0 is skipped', 'application/json;q=1e0, text/xml', [['text/xml', 1, 1]]],
  ['q=0.5x is skipped', 'application/json;q=0.5x, text/xml', [['text/xml', 1, 1]]],
  ['q with a space inside is skipped', 'application/json;q=0. 5, text/xml', [['text/xml', 1, 1]]],
  ['quoted q is skipped (qvalue is not a quoted-string)', 'application/json;q="0.5", text/xml', [['text/xml', 1, 1]]],
  // Malformed ranges → skipped
  ['no slash: skipped', 'json', []],
  ['bare * (old Java clients): skipped', 'text/html, *; q=.2, */*; q=.2', [['text/html', 1, 0], ['*/*', 0.2, 2]]],
  ['*/json: skipped', '*/json, application/xml', [['application/xml', 1, 1]]],
  ['empty subtype: skipped', 'application/, text/xml', [['text/xml', 1, 1]]],
  ['empty type: skipped', '/json, text/xml', [['text/xml', 1, 1]]],
  ['two slashes: skipped', 'application/json/x, text/xml', [['text/xml', 1, 1]]],
  ['space inside the type: skipped', 'application / json, text/xml', [['text/xml', 1, 1]]],
  ['bad token character: skipped', 'appli@cation/json, text/xml', [['text/xml', 1, 1]]],
  ['non-ASCII in the type: skipped', 'applicätion/json, text/xml', [['text/xml', 1, 1]]],
  ['control character: skipped', 'application/json\u0000, text/xml', [['text/xml', 1, 1]]],
  ['parameter without value: skipped', 'application/json;level, text/xml', [['text/xml', 1, 1]]],
  ['parameter with empty value: skipped', 'application/json;level=, text/xml', [['text/xml', 1, 1]]],
  ['junk after the type: skipped', 'application/json junk, text/xml', [['text/xml', 1, 1]]],
  ['all entries invalid: accepts nothing', 'json, xml, */json', []],
  // Parameters
  ['parameter kept, name lowercased, value as sent', 'text/xml;Charset=UTF-8', [['text/xml', 1, 0, { charset: 'UTF-8' }]]],
  ['quoted value is unquoted', 'text/xml;charset="utf-8"', [['text/xml', 1, 0, { charset: 'utf-8' }]]],
  ['backslash escapes in quoted value', 'a/b;x="a\\"b\\\\c"', [['a/b', 1, 0, { x: 'a"b\\c' }]]],
  ['commas inside quotes do not split', 'a/b;x="1,2", text/xml', [['a/b', 1, 0, { x: '1,2' }], ['text/xml', 1, 1]]],
  ['semicolons inside quotes do not end the parameter', 'a/b;x="1;q=0";q=0.5', [['a/b', 0.5, 0, { x: '1;q=0' }]]],
  ['first of a repeated parameter wins', 'a/b;x=1;x=2', [['a/b', 1, 0, { x: '1' }]]],
  ['empty parameters are allowed', 'text/xml;;q=0.5;', [['text/xml', 0.5, 0]]],
  ['parameters after q are accept-ext: ignored', 'text/xml;q=0.5;charset=latin1;level=1', [['text/xml', 0.5, 0]]],
  ['accept-ext may be a bare token', 'text/xml;q=0.5;ext', [['text/xml', 0.5, 0]]],
  ['a second q is accept-ext', 'text/xml;q=0.5;q=0.9', [['text/xml', 0.5, 0]]],
  ['parameters before q are kept', 'application/signed-exchange;v=b3;q=0.7', [['application/signed-exchange', 0.7, 0, { v: 'b3' }]]],
  ['unterminated quote swallows the rest', 'text/xml, a/b;x="1, application/json', [['text/xml', 1, 0]]],
  ['control character in quotes: skipped', 'a/b;x="\u0001", text/xml', [['text/xml', 1, 1]]],
  ['quote in a broken entry is honoured when skipping', 'a/b c="x,y", text/xml', [['text/xml', 1, 1]]],
  // Whitespace and empty elements
  ['OWS and tabs around entries', '\ttext/xml\t,\t application/xml ', [['text/xml', 1, 0], ['application/xml', 1, 1]]],
  ['empty elements do not take a position', 'text/xml,,, ,application/xml', [['text/xml', 1, 0], ['application/xml', 1, 1]]],
  // Real headers
  [
    'Chrome navigation',
    'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
    [
      ['text/html', 1, 0], ['application/xhtml+xml', 1, 1], ['application/xml', 0.9, 2], ['image/avif', 1, 3], ['image/webp', 1, 4],
      ['image/apng', 1, 5], ['*/*', 0.8, 6], ['application/signed-exchange', 0.7, 7, { v: 'b3' }],
    ],
  ],
  ['jQuery json', 'application/json, text/javascript, */*; q=0.01', [['application/json', 1, 0], ['text/javascript', 1, 1], ['*/*', 0.01, 2]]],
];

for (const [why, header, expected] of cases) {
  test(`N-2 parseAccept: ${why}: ${JSON.stringify(header)}`, () => {
    assert.deepEqual(simplify(parseAccept(header)), expected);
  });
}

test('N-2 parseAccept: q values are exact thousandths', () => {
  assert.equal(parseAccept('a/b;q=0.9')[0]?.q, 0.9);
  assert.equal(parseAccept('a/b;q=0.1')[0]?.q, 0.1);
  assert.equal(parseAccept('a/b;q=.7')[0]?.q, 0.7);
});

test('N-2 parseAccept: returns a fresh list each time (callers may keep or change it)', () => {
  const a = parseAccept(undefined);
  const b = parseAccept(undefined);
  assert.notEqual(a, b);
  assert.notEqual(a[0]?.params, b[0]?.params);
});

// The caps: work per header is bounded, entries past them are ignored (never an error).
test(`N-2 parseAccept: at most ${MAX_ACCEPT_ENTRIES} non-empty entries are read`, () => {
  const header = Array.from({ length: 100 }, (_, i) => `a/t${i}`).join(', ');
  const ranges = parseAccept(header);
  assert.equal(ranges.length, MAX_ACCEPT_ENTRIES);
  assert.equal(ranges.at(-1)?.subtype, `t${MAX_ACCEPT_ENTRIES - 1}`);
});

test('N-2 parseAccept: invalid entries count toward the entry cap', () => {
  const header = `${Array.from({ length: MAX_ACCEPT_ENTRIES }, () => 'junk').join(',')},text/xml`;
  assert.deepEqual(parseAccept(header), []);
});

test('N-2 parseAccept: empty elements do not count toward the entry cap', () => {
  const header = `${','.repeat(1000)}text/xml`;
  assert.deepEqual(simplify(parseAccept(header)), [['text/xml', 1, 0]]);
});

test(`N-2 parseAccept: only the first ${MAX_ACCEPT_LENGTH} characters are read`, () => {
  const header = `text/xml,${' '.repeat(MAX_ACCEPT_LENGTH)},application/json`;
  assert.deepEqual(simplify(parseAccept(header)), [['text/xml', 1, 0]]);
});

test('N-2 parseAccept: an entry cut by the length cap is dropped, not read without its tail', () => {
  // The cap falls right after "application/json", before ";q=0.1": reading the cut entry would give q=1.
  const prefix = 'text/xml;q=0.5,';
  const entry = 'application/json';
  const header = `${prefix}${' '.repeat(MAX_ACCEPT_LENGTH - prefix.length - entry.length)}${entry};q=0.1`;
  assert.equal(header.slice(0, MAX_ACCEPT_LENGTH).endsWith(entry), true);
  assert.deepEqual(simplify(parseAccept(header)), [['text/xml', 0.5, 0]]);
});

test('N-2 parseAccept: an entry ending exactly at the length cap with a comma after it is kept', () => {
  const entry = 'application/json';
  const header = `${' '.repeat(MAX_ACCEPT_LENGTH - entry.length)}${entry},text/xml`;
  assert.deepEqual(simplify(parseAccept(header)), [['application/json', 1, 0]]);
});

test('N-2 parseAccept: a header that is one huge entry accepts nothing', () => {
  assert.deepEqual(parseAccept(`a/b;x="${'y'.repeat(100_000)}"`), []);
});

test('N-2 parseAccept: hostile shapes of 1 MB return without throwing', () => {
  const shapes = [';'.repeat(1 << 20), '"'.repeat(1 << 20), 'a/b;x="\\'.repeat(1 << 18), 'a/'.repeat(1 << 19), `a/b${';q=0'.repeat(1 << 18)}`, '*/*;'.repeat(1 << 18)];
  for (const header of shapes) assert.ok(Array.isArray(parseAccept(header)));
});

// Property: any string parses without throwing into well-formed ranges.
const headerChars = fc.constantFrom(...'ab*/,;=q. "\\\t0123456789xX-+\u0000\u00e9\u2028'.split(''));
const anyHeader = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: headerChars, maxLength: 300 }),
  fc.string({ unit: headerChars, minLength: 8000, maxLength: 9000 }),
);

test('N-2 parseAccept property: never throws; ranges are well-formed and bounded', () => {
  fc.assert(
    fc.property(anyHeader, (header) => {
      const ranges = parseAccept(header);
      assert.ok(ranges.length <= MAX_ACCEPT_ENTRIES);
      let previous = -1;
      for (const r of ranges) {
        assert.match(r.type, /^[!#$%&'*+\-.^_`|~0-9a-z]+$/);
        assert.match(r.subtype, /^[!#$%&'*+\-.^_`|~0-9a-z]+$/);
        assert.ok(r.type !== '*' || r.subtype === '*');
        assert.ok(r.q >= 0 && r.q <= 1 && Number.isInteger(Math.round(r.q * 1000)) && Math.abs(r.q * 1000 - Math.round(r.q * 1000)) < 1e-9);
        assert.ok(r.position > previous && r.position < MAX_ACCEPT_ENTRIES);
        previous = r.position;
      }
    }),
    { numRuns: 500 },
  );
});
