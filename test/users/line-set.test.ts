import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { lineSet } from '../../lib/users/line-set.js';

test('P-6 lineSet: the distinct non-empty lines, whatever ends them; nothing else', () => {
  const set = lineSet('alpha\r\nbeta\n\nalpha\ngamma\r\n\r\n\n\u00e9t\u00e9\n\u{1f600}\u{1f600}\nlast');
  assert.equal(set.size, 6);
  for (const word of ['alpha', 'beta', 'gamma', '\u00e9t\u00e9', '\u{1f600}\u{1f600}', 'last']) assert.equal(set.has(word), true, word);
  for (const word of ['', 'alph', 'alphaa', 'alpha\r', 'beta\n', '\r', 'gam', 'Alpha', 'las', '\u{1f600}', 'x']) assert.equal(set.has(word), false, JSON.stringify(word));
  assert.equal(lineSet('').size, 0);
  assert.equal(lineSet('\n\r\n').has(''), false);
});

test('P-6 lineSet: the longest line in code points, as Array.from counts them (a pair once, a lone half once)', () => {
  assert.equal(lineSet('abc\n\u{1f600}\u{1f600}\u{1f600}\u{1f600}\nabcd').longest, 4);
  assert.equal(lineSet('\u{1f600}\u{1f600}\u{1f600}\nab').longest, 3);
  assert.equal(lineSet('\udc00\ud800\ud800\udc00x\nab').longest, Array.from('\udc00\ud800\ud800\udc00x').length);
});

test('P-6 lineSet holds the bundled list as a Set of its lines would: every word, and none of its near misses', () => {
  const text = readFileSync(new URL('../../assets/common-passwords.txt', import.meta.url), 'utf8');
  const words = text.split('\n').filter((line) => line !== '');
  const set = lineSet(text);
  const reference = new Set(words);
  assert.equal(set.size, reference.size);
  assert.equal(set.longest, Math.max(...words.map((word) => Array.from(word).length)));
  for (const word of words) {
    assert.equal(set.has(word), true, word);
    for (const near of [`${word}x`, word.slice(1), word.slice(0, -1), word.toUpperCase()]) assert.equal(set.has(near), reference.has(near), near);
  }
});
