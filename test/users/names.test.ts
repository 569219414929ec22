import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkUserName } from '../../lib/users/names.js';
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
