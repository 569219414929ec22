// A-6: the position of a JSON syntax error (for the 400's detail) and the nesting depth.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { findJsonSyntaxError, nestingTooDeep } from '../../lib/http/json-syntax.js';

const errors: ReadonlyArray<readonly [text: string, offset: number, expected: string]> = [
  ['', 0, 'a value'],
  ['   ', 3, 'a value'],
  ['{"a":}', 5, 'a value'],
  ['{"a" 1}', 5, "':'"],
  ['{"a":1', 6, "',' or '}'"],
  ['{"a":1,}', 7, 'a member name (a string)'],
  ['{a:1}', 1, 'a member name (a string)'],
  ["{'a':1}", 1, 'a member name (a string)'],
  ['[1,]', 3, 'a value'],
  ['[1 2]', 3, "',' or ']'"],
  ['[1}', 2, "',' or ']'"],
  ['{"a":1]', 6, "',' or '}'"],
  ['{"a":1}x', 7, 'the end of the body'],
  ['1 2', 2, 'the end of the body'],
  ['nul', 3, "'null'"],
  ['nulL', 3, "'null'"],
  ['True', 0, 'a value'],
  ['tru e', 3, "'true'"],
  ['01', 1, 'the end of the body'],
  ['-', 1, 'a digit'],
  ['-a', 1, 'a digit'],
  ['1.', 2, 'a digit'],
  ['1.e5', 2, 'a digit'],
  ['1e', 2, 'a digit'],
  ['1e+', 3, 'a digit'],
  ['+1', 0, 'a value'],
  ['.5', 0, 'a value'],
  ['NaN', 0, 'a value'],
  ['"abc', 4, "a closing '\"'"],
  ['"a\nb"', 2, 'a control character to be escaped (\\n, \\t, \\u0000 …)'],
  ['"\\x"', 2, 'an escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)'],
  ['"\\u12G4"', 5, 'a hexadecimal digit'],
  ['"\\u12', 5, 'a hexadecimal digit'],
  ['\uFEFF{}', 0, 'a value'],
  ['\u00A0{}', 0, 'a value'],
  ['{"a":[1,{"b":[true,false,null,-0.5e-3,"\\u00e9\\n"]}],"c":{}}', -1, ''],
];

for (const [text, offset, expected] of errors) {
  test(`A-6 ${JSON.stringify(text)}: ${offset < 0 ? 'valid JSON' : `error at ${offset}, expected ${expected}`}`, () => {
    assert.deepEqual(findJsonSyntaxError(text), offset < 0 ? undefined : { offset, expected });
    assert.equal(offset < 0, parses(text), 'JSON.parse agrees');
  });
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

test('A-6 findJsonSyntaxError agrees with JSON.parse on generated texts, valid and broken', () => {
  const token = fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '"a"', '\\', '\\u00', 'e', 'E', '.', '-', '+', '0', '1', '9', 'true', 'fals', 'null', ' ', '\n', '\t', '\r', '\u0001', 'é', 'x', '\uFEFF');
  const broken = fc.array(token, { maxLength: 12 }).map((parts) => parts.join(''));
  // Real JSON, then one character removed, inserted or replaced.
  const mutated = fc.tuple(fc.json({ maxDepth: 3 }), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', ' ', '0', '\\')).map(([text, at, insert]) => {
    const k = text.length === 0 ? 0 : at % text.length;
    return text.slice(0, k) + insert + text.slice(k + (at % 2));
  });
  fc.assert(
    fc.property(fc.oneof(broken, mutated, fc.json({ maxDepth: 4 })), (text) => {
      const error = findJsonSyntaxError(text);
      assert.equal(error === undefined, parses(text), text);
      if (error !== undefined) {
        assert.ok(error.offset >= 0 && error.offset <= text.length);
        // Nothing before the offset is wrong: the text cut there is JSON, or breaks only at its end.
        const prefix = findJsonSyntaxError(text.slice(0, error.offset));
        assert.ok(prefix === undefined || prefix.offset === error.offset, `${JSON.stringify(text)}: ${JSON.stringify(prefix)}`);
      }
    }),
    { numRuns: 3000 },
  );
});

test('A-6 a very deep body is scanned without overflowing the stack', () => {
  const deep = '['.repeat(200_000) + ']'.repeat(200_000);
  assert.equal(findJsonSyntaxError(deep), undefined);
  assert.deepEqual(findJsonSyntaxError('['.repeat(200_000)), { offset: 200_000, expected: 'a value' });
  assert.equal(nestingTooDeep(deep, 256), 256);
});

const depths: ReadonlyArray<readonly [text: string, max: number, offset: number]> = [
  ['1', 1, -1],
  ['[]', 1, -1],
  ['[[]]', 1, 1],
  ['[[]]', 2, -1],
  ['{"a":{"b":[1]}}', 2, 10],
  ['{"a":{"b":[1]}}', 3, -1],
  ['["[[[[", "\\"[[[", {"{{{":"}}}"}]', 2, -1],
  ['[[],[],[],[]]', 2, -1],
  ['[[],[],[],[[]]]', 2, 11],
];

for (const [text, max, offset] of depths) {
  test(`A-6 nestingTooDeep(${text}, ${max}) → ${offset}`, () => {
    assert.equal(nestingTooDeep(text, max), offset);
  });
}
