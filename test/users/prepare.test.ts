import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeUtf8Strict, hasLoneSurrogate, preparePassword } from '../../lib/users/prepare.js';

// RFC 8265 §4.2.2: Zs → U+0020, then NFC; no width or case mapping, nothing removed.
const prepared: ReadonlyArray<readonly [label: string, input: string, expected: string]> = [
  ['NFD e + combining acute becomes é', 'caf' + 'e\u0301', 'caf\u00e9'],
  ['NFC input is unchanged', 'caf\u00e9', 'caf\u00e9'],
  ['no-break space U+00A0 becomes space', 'a\u00a0b', 'a b'],
  ['ideographic space U+3000 becomes space', 'a\u3000b', 'a b'],
  ['Ogham space mark U+1680 (RFC 8265 §4.3 example) becomes space', 'foo\u1680bar', 'foo bar'],
  ['en quad U+2000 becomes space', 'a\u2000b', 'a b'],
  ['ASCII spaces are kept, leading and trailing too', ' a b ', ' a b '],
  ['fullwidth A is NOT folded (no width mapping)', '\uff21', '\uff21'],
  ['case is kept', 'Correct Horse', 'Correct Horse'],
  ['controls are kept for the policy to refuse', 'pw\n', 'pw\n'],
  ['zero-width space is not Zs and is kept', 'a\u200bb', 'a\u200bb'],
  ['Hangul jamo compose under NFC', '\u1100\u1161', '\uac00'],
  ['empty stays empty', '', ''],
];

for (const [label, input, expected] of prepared) {
  test(`U-4: preparePassword, ${label}`, () => {
    assert.equal(preparePassword(input), expected);
    assert.equal(preparePassword(preparePassword(input)), expected, 'idempotent');
  });
}

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

const decoded: ReadonlyArray<readonly [label: string, input: Uint8Array, expected: string | undefined]> = [
  ['ASCII', bytes(0x61, 0x62), 'ab'],
  ['two-byte £', bytes(0x31, 0xc2, 0xa3), '1£'],
  ['three-byte €', bytes(0xe2, 0x82, 0xac), '€'],
  ['four-byte emoji', bytes(0xf0, 0x9f, 0x98, 0x80), '\u{1f600}'],
  ['empty', bytes(), ''],
  ['a leading BOM is kept, not swallowed', bytes(0xef, 0xbb, 0xbf, 0x61), '\ufeffa'],
  ['overlong "/" (C0 AF)', bytes(0xc0, 0xaf), undefined],
  ['overlong NUL (C0 80)', bytes(0xc0, 0x80), undefined],
  ['overlong three-byte "/" (E0 80 AF)', bytes(0xe0, 0x80, 0xaf), undefined],
  ['overlong four-byte "/" (F0 80 80 AF)', bytes(0xf0, 0x80, 0x80, 0xaf), undefined],
  ['encoded high surrogate U+D800 (ED A0 80)', bytes(0xed, 0xa0, 0x80), undefined],
  ['encoded low surrogate U+DFFF (ED BF BF)', bytes(0xed, 0xbf, 0xbf), undefined],
  ['encoded surrogate pair (CESU-8)', bytes(0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80), undefined],
  ['truncated three-byte sequence', bytes(0xe2, 0x82), undefined],
  ['truncated four-byte sequence', bytes(0xf0, 0x9f, 0x98), undefined],
  ['lead byte at the end', bytes(0x61, 0xc3), undefined],
  ['lone continuation byte', bytes(0x80), undefined],
  ['byte FF', bytes(0x61, 0xff), undefined],
  ['byte FE', bytes(0xfe), undefined],
  ['above U+10FFFF (F4 90 80 80)', bytes(0xf4, 0x90, 0x80, 0x80), undefined],
  ['lead byte F5', bytes(0xf5, 0x80, 0x80, 0x80), undefined],
  ['Latin-1 é (E9) is not guessed', bytes(0x63, 0x61, 0x66, 0xe9), undefined],
];

for (const [label, input, expected] of decoded) {
  test(`U-4: decodeUtf8Strict, ${label}`, () => {
    assert.equal(decodeUtf8Strict(input), expected);
  });
}

const surrogates: ReadonlyArray<readonly [label: string, input: string, expected: boolean]> = [
  ['empty', '', false],
  ['ASCII', 'abc', false],
  ['a valid pair', '\ud83d\ude00', false],
  ['pairs and BMP mixed', 'a\ud83d\ude00b\u00e9', false],
  ['lone high surrogate (JSON "\\ud800")', '\ud800', true],
  ['high surrogate at the end', 'abc\ud83d', true],
  ['lone low surrogate', 'a\udc00', true],
  ['pair in the wrong order', '\ude00\ud83d', true],
  ['two high surrogates', '\ud83d\ud83d\ude00', true],
];

for (const [label, input, expected] of surrogates) {
  test(`U-4: hasLoneSurrogate, ${label}`, () => {
    assert.equal(hasLoneSurrogate(input), expected);
  });
}
