// A-3 (amended): what an application may offer — parameters, any case, malformed entries — seen
// through the public functions. RFC 9110 §12.5.1 (parameters on ranges), §5.6.6 (parameter values).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNegotiator, negotiate, negotiateAll } from '../../lib/negotiate/negotiate.js';

const V1 = 'application/vnd.example+json;version=1';
const V2 = 'application/vnd.example+json; version="2"';
const PLAIN = 'application/vnd.example+json';
const VERSIONED = [V1, V2] as const;

/** [why, Accept, offered, the answer (undefined: none), charsetUtf8 option] */
const cases: ReadonlyArray<readonly [why: string, accept: string | undefined, offered: readonly string[], expected: string | undefined, charsetUtf8?: boolean]> = [
  // Versioned types, as APIs offer them
  ['a version asked for is chosen', `${PLAIN};version=2`, VERSIONED, V2],
  ['quoted and token values are equal (§5.6.6), both ways', `${PLAIN};version="1"`, VERSIONED, V1],
  ['a range without parameters covers every version: server order', PLAIN, VERSIONED, V1],
  ['a version nobody offers: nothing', `${PLAIN};version=3`, VERSIONED, undefined],
  ['parameter names are case-insensitive', `${PLAIN};VERSION=2`, VERSIONED, V2],
  ['parameter values are case-sensitive (other than charset)', `${PLAIN};version=V2`, ['application/vnd.example+json;version=v2'], undefined],
  ['the range with the parameter is more specific than the one without', `${PLAIN};version=1;q=0.2, ${PLAIN};q=0.5`, VERSIONED, V2],
  ['q=0 on a version refuses just that version', `${PLAIN};version=1;q=0, */*`, VERSIONED, V2],
  ['more parameters are more specific still', 'text/html;level=1;foo=bar;q=0, text/html;level=1', ['text/html;level=1;foo=bar', 'text/html;level=1'], 'text/html;level=1'],
  ['a wildcard range with a parameter needs it on the type', '*/*;version=2', VERSIONED, V2],
  ['a type wildcard with a parameter', 'application/*;version=1', VERSIONED, V1],
  ['an escaped quote in a value', 'text/plain;x="a\\"b"', ['text/plain;x=a', 'text/plain;x="a\\"b"'], 'text/plain;x="a\\"b"'],
  ['a comma inside a quoted offered value', 'text/plain;x="a,b"', ['text/plain;x="a,b"'], 'text/plain;x="a,b"'],
  ['spaces around the semicolon', 'text/html;level=1', ['text/html ; level=1'], 'text/html ; level=1'],
  ['an offered type in another case, answered as given', 'text/html', ['Text/HTML'], 'Text/HTML'],
  ['a range in another case against an offered type in another case', 'TEXT/html', ['text/HTML;Level=1'], 'text/HTML;Level=1'],
  // charset: case-insensitive values (RFC 9110 §8.3.2), and the N-2 option
  ['charset values compare without case', 'text/plain;charset=UTF-8', ['text/plain;charset=utf-8'], 'text/plain;charset=utf-8'],
  ['without the option, a charset on the range needs it on the type', 'text/plain;charset=utf-8', ['text/plain'], undefined],
  ['with the option, an offered type without a charset is UTF-8', 'text/plain;charset=utf-8', ['text/plain'], 'text/plain', true],
  ['with the option, utf8 names UTF-8 too', 'text/plain;charset=utf8', ['text/plain;charset=UTF-8'], 'text/plain;charset=UTF-8', true],
  ['with the option, an offered charset still has to match', 'text/plain;charset=utf-8', ['text/plain;charset=iso-8859-1'], undefined, true],
  ['with the option, alongside other parameters', `${PLAIN};version=2;charset=utf-8`, VERSIONED, V2, true],
  ['without it, the charset makes that range match nothing', `${PLAIN};version=2;charset=utf-8`, VERSIONED, undefined],
  // Malformed offered types are skipped
  ['a bare word is skipped', 'application/json', ['boom', 'application/json'], 'application/json'],
  ['a parameter without a value is skipped', '*/*', ['text/html;level', 'text/plain'], 'text/plain'],
  ['a q parameter is skipped (no media type may have one, §12.5.1)', '*/*', ['text/html;q=0.5', 'text/plain'], 'text/plain'],
  ['two types in one string are skipped', '*/*', ['text/html, text/plain', 'image/png'], 'image/png'],
  ['surrounding blanks are skipped', '*/*', [' text/html', 'text/html ', '', 'text/plain'], 'text/plain'],
  ['an unterminated quoted value is skipped', '*/*', ['text/html;x="a', 'text/plain'], 'text/plain'],
  ['a blank inside the type is skipped', '*/*', ['text/ html', 'text /html', 'text/plain'], 'text/plain'],
  ['an empty list, or one with no valid entry, accepts nothing', '*/*', ['boom', 'json'], undefined],
  ['… even without an Accept header', undefined, ['boom', 'json'], undefined],
  ['without a header the first valid entry is chosen', undefined, ['boom', 'text/html;level=1', 'text/plain'], 'text/html;level=1'],
];

for (const [why, accept, offered, expected, charsetUtf8 = false] of cases) {
  test(`A-3 offered types: ${why}: ${JSON.stringify(accept)} × ${JSON.stringify(offered)} → ${expected ?? 'none'}`, () => {
    assert.equal(negotiate(accept, offered, { charsetUtf8 }), expected);
    assert.equal(createNegotiator(offered, { charsetUtf8 })(accept), expected, 'createNegotiator');
    assert.equal(negotiateAll(accept, offered, { charsetUtf8 })[0], expected, 'negotiateAll starts with it');
  });
}

test('A-3 offered types: a very long offered type (over 8 KiB) is skipped like a malformed one', () => {
  const long = `text/html;x="${'y'.repeat(9000)}"`;
  assert.equal(negotiate('*/*', [long, 'text/plain']), 'text/plain');
});

test('A-3 negotiateAll: every acceptable offered type, best first, the answer strings as given', () => {
  const chrome = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
  const service = ['application/json', 'application/xml', 'text/xml'];
  assert.deepEqual(negotiateAll(chrome, service), ['application/xml', 'application/json', 'text/xml']);
  assert.deepEqual(negotiateAll('text/xml, application/*;q=0.5, application/json;q=0', service), ['text/xml', 'application/xml']);
  assert.deepEqual(negotiateAll('image/png', service), []);
  assert.deepEqual(negotiateAll(undefined, ['boom', ...VERSIONED]), [...VERSIONED], 'no header: every valid entry in server order');
  assert.deepEqual(negotiateAll('', []), []);
  const offered = ['Text/HTML;Level=1'];
  assert.equal(negotiateAll('text/html', offered)[0], offered[0]);
});

test('A-3 createNegotiator reads its list once: later changes to the array do not matter', () => {
  const offered = [V1, V2];
  const choose = createNegotiator(offered);
  offered[1] = 'text/plain';
  assert.equal(choose(`${PLAIN};version=2`), V2);
});
