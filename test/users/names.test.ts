import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkNewUserName, checkUserName } from '../../lib/users/names.js';
import type { NameCheck } from '../../lib/users/names.js';

const ok = (name: string): NameCheck => ({ ok: true, name });
const no = (violation: Extract<NameCheck, { ok: false }>['violation']): NameCheck => ({ ok: false, violation });

const cases: ReadonlyArray<readonly [label: string, input: string, expected: NameCheck]> = [
  ['plain ASCII', 'alice', ok('alice')],
  ['case is kept (names are case-sensitive)', 'Alice', ok('Alice')],
  ['inner space', 'alice smith', ok('alice smith')],
  ['non-Latin', '名前', ok('名前')],
  ['a literal percent sign', '%2F', ok('%2F')],
  ['NFD is normalised to NFC', 'e\u0301mile', ok('\u00e9mile')],
  ['one character', 'a', ok('a')],
  ['64 characters', 'a'.repeat(64), ok('a'.repeat(64))],
  ['64 NFD characters count as 64 after NFC', 'e\u0301'.repeat(64), ok('\u00e9'.repeat(64))],
  ['64 astral code points (128 UTF-16 units)', '🦊'.repeat(64), ok('🦊'.repeat(64))],
  ['empty', '', no('empty')],
  ['65 characters', 'a'.repeat(65), no('too-long')],
  ['line feed', 'a\nb', no('control-character')],
  ['NUL', 'a\u0000', no('control-character')],
  ['DEL', 'a\u007f', no('control-character')],
  ['C1 NEL', 'a\u0085', no('control-character')],
  ['tab', 'a\tb', no('control-character')],
  ['line separator U+2028', 'a\u2028b', no('control-character')],
  ['zero-width space (Cf)', 'a\u200bb', no('format-character')],
  ['right-to-left override (Cf)', '\u202eevil', no('format-character')],
  ['byte order mark (Cf)', '\ufeffbob', no('format-character')],
  ['slash', 'a/b', no('forbidden-character')],
  ['colon (RFC 7617 user-id)', 'a:b', no('forbidden-character')],
  ['leading space', ' alice', no('surrounding-space')],
  ['trailing no-break space', 'alice\u00a0', no('surrounding-space')],
  ['lone high surrogate', 'a\ud800', no('ill-formed')],
  ['lone low surrogate', '\udc00b', no('ill-formed')],
];

for (const [label, input, expected] of cases) {
  test(`U-2: user name, ${label}`, () => {
    assert.deepEqual(checkUserName(input), expected);
  });
}

// U-2 amendment (2026-11-22): a new name may not end in .json or .xml, any case (R-1 reads
// /user/{name}.json as a format); an existing one keeps passing checkUserName.
const creation: ReadonlyArray<readonly [label: string, input: string, expected: NameCheck]> = [
  ['ends in .json', 'a.json', no('representation-suffix')],
  ['ends in .xml', 'a.xml', no('representation-suffix')],
  ['ends in .JSON (any case)', 'a.JSON', no('representation-suffix')],
  ['ends in .Xml (any case)', 'bob.Xml', no('representation-suffix')],
  ['is just ".json"', '.json', no('representation-suffix')],
  ['other rules come first', 'a/b.json', no('forbidden-character')],
  ['.json inside the name', 'a.json.bak', ok('a.json.bak')],
  ['"json" without the dot', 'ajson', ok('ajson')],
  ['.jsonl', 'a.jsonl', ok('a.jsonl')],
  ['.yaml (not a representation)', 'a.yaml', ok('a.yaml')],
  ['a dot elsewhere', 'j.doe', ok('j.doe')],
  // U-2 amendment (2026-11-27): RFC 3986 removes these path segments.
  ['is "."', '.', no('dot-segment')],
  ['is ".."', '..', no('dot-segment')],
  ['is "..."', '...', ok('...')],
  ['is ". ." (not a dot segment)', '. .', ok('. .')],
  ['NFD input is normalised first', 'e\u0301.txt', ok('\u00e9.txt')],
  // Invisible characters that are not Cf (those are refused for every name, above): a new name
  // could otherwise look exactly like another user's.
  ['with a Hangul filler U+3164 ("alice" to the eye)', 'alice\u3164', no('invisible-character')],
  ['with a Hangul choseong filler U+115F', '\u115fbob', no('invisible-character')],
  ['with a halfwidth Hangul filler U+FFA0', 'bo\uffa0b', no('invisible-character')],
  ['with a combining grapheme joiner U+034F', 'al\u034fice', no('invisible-character')],
  ['with a variation selector U+FE0F', 'bob\ufe0f', no('invisible-character')],
  ['Hangul letters are fine', '한글', ok('한글')],
];

for (const [label, input, expected] of creation) {
  test(`U-2: a new user name ${label}`, () => {
    assert.deepEqual(checkNewUserName(input), expected);
  });
}

test('U-2: an existing name ending in .json, or holding an invisible character, still passes the general check (lookups, logins)', () => {
  assert.deepEqual(checkUserName('a.json'), ok('a.json'));
  assert.deepEqual(checkUserName('a.XML'), ok('a.XML'));
  assert.deepEqual(checkUserName('alice\u3164'), ok('alice\u3164'));
});
