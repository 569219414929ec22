// E-4: RFC 9110 §13 preconditions as a pure function, one case per line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluatePreconditions, parseEntityTags, requirePreconditions, type ConditionalHeaders, type ResourceState } from '../../lib/http/preconditions.js';
import { HttpError } from '../../lib/http/problem.js';

const NOW = Date.UTC(2026, 10, 23, 12);
const CHANGED = Date.UTC(2026, 10, 22, 10, 0, 0, 500); // 10:00:00.500
const AT_CHANGE = 'Sun, 22 Nov 2026 10:00:00 GMT'; // the same second: not "modified since"
const BEFORE = 'Sun, 22 Nov 2026 09:59:59 GMT';
const AFTER = 'Mon, 23 Nov 2026 00:00:00 GMT';

// A negotiated resource: one ETag per representation, the JSON one selected for this response.
const NEGOTIATED: ResourceState = { exists: true, etags: ['"json"', '"xml"', '"text-xml"'], selected: '"json"' };
// A password: exists, no representation, a modification date.
const PASSWORD: ResourceState = { exists: true, etags: [], lastModified: CHANGED };
const MISSING: ResourceState = { exists: false, etags: [] };
const DATED: ResourceState = { exists: true, etags: ['"v1"'], lastModified: new Date(CHANGED) };

type Case = readonly [method: string, headers: ConditionalHeaders, state: ResourceState, expected: 'ok' | 'not-modified' | 'failed', why: string];

const cases: readonly Case[] = [
  ['GET', {}, NEGOTIATED, 'ok', 'no conditions'],
  // If-Match (§13.1.1), strong comparison, any representation (E-4).
  ['GET', { 'if-match': '"nope"' }, NEGOTIATED, 'failed', 'If-Match names no current tag'],
  ['GET', { 'if-match': '"json"' }, NEGOTIATED, 'ok', 'If-Match names the selected representation'],
  ['GET', { 'if-match': '"text-xml"' }, NEGOTIATED, 'ok', 'If-Match names another representation of the same state'],
  ['PUT', { 'if-match': '"nope", "xml"' }, NEGOTIATED, 'ok', 'one member of the list matches'],
  ['PUT', { 'if-match': ', "nope" ,, "xml",' }, NEGOTIATED, 'ok', 'empty list members are allowed (§5.6.1)'],
  ['GET', { 'if-match': 'W/"json"' }, NEGOTIATED, 'failed', 'a weak tag never matches If-Match'],
  ['GET', { 'if-match': '"JSON"' }, NEGOTIATED, 'failed', 'opaque-tags are case-sensitive'],
  ['GET', { 'if-match': '*' }, NEGOTIATED, 'ok', '* holds for an existing resource'],
  ['PUT', { 'if-match': ' * ' }, PASSWORD, 'ok', '* with spaces around'],
  ['PUT', { 'if-match': '*' }, MISSING, 'failed', '* is false when nothing exists'],
  ['PUT', { 'if-match': '"x"' }, PASSWORD, 'failed', 'no representation: every tag list is false'],
  ['PUT', { 'if-match': '' }, PASSWORD, 'failed', 'an empty list names nothing'],
  // Unparsable If-Match: false, whatever the method.
  ['GET', { 'if-match': 'json' }, NEGOTIATED, 'failed', 'unquoted tag'],
  ['PUT', { 'if-match': '"json' }, NEGOTIATED, 'failed', 'unterminated tag'],
  ['PUT', { 'if-match': '*, "json"' }, NEGOTIATED, 'failed', '* mixed with tags'],
  ['PUT', { 'if-match': '"json" "xml"' }, NEGOTIATED, 'failed', 'members without a comma'],
  ['PUT', { 'if-match': 'w/"json"' }, NEGOTIATED, 'failed', 'a lowercase w/ is not the weak prefix'],
  ['PUT', { 'if-match': '"js on"' }, NEGOTIATED, 'failed', 'a space is not an etagc'],
  // If-Unmodified-Since (§13.1.4): only without If-Match; invalid dates and undated resources ignore it.
  ['PUT', { 'if-unmodified-since': BEFORE }, PASSWORD, 'failed', 'changed after the date given'],
  ['PUT', { 'if-unmodified-since': AT_CHANGE }, PASSWORD, 'ok', 'the date of the change itself (second resolution)'],
  ['PUT', { 'if-unmodified-since': AFTER }, PASSWORD, 'ok', 'not changed since'],
  ['PUT', { 'if-unmodified-since': 'yesterday' }, PASSWORD, 'ok', 'not an HTTP-date: ignored'],
  ['PUT', { 'if-unmodified-since': '2026-11-22T09:00:00Z' }, PASSWORD, 'ok', 'ISO 8601 is not an HTTP-date: ignored'],
  ['PUT', { 'if-unmodified-since': 'Sunday, 22-Nov-26 09:59:59 GMT' }, PASSWORD, 'failed', 'rfc850 form'],
  ['PUT', { 'if-unmodified-since': 'Sun Nov 22 09:59:59 2026' }, PASSWORD, 'failed', 'asctime form'],
  ['GET', { 'if-unmodified-since': BEFORE }, NEGOTIATED, 'ok', 'no modification date: ignored'],
  ['GET', { 'if-unmodified-since': BEFORE }, DATED, 'failed', 'a Date works as lastModified'],
  ['PUT', { 'if-match': '*', 'if-unmodified-since': BEFORE }, PASSWORD, 'ok', 'If-Match present: If-Unmodified-Since is not evaluated'],
  ['PUT', { 'if-match': '"nope"', 'if-unmodified-since': AFTER }, PASSWORD, 'failed', 'a true date does not rescue a false If-Match'],
  // If-None-Match (§13.1.2): weak comparison against the selected representation.
  ['GET', { 'if-none-match': '"json"' }, NEGOTIATED, 'not-modified', 'the selected tag'],
  ['HEAD', { 'if-none-match': 'W/"json"' }, NEGOTIATED, 'not-modified', 'weak comparison'],
  ['GET', { 'if-none-match': '"xml"' }, NEGOTIATED, 'ok', 'another representation is not the one this response carries'],
  ['GET', { 'if-none-match': '"v1"' }, DATED, 'not-modified', 'without `selected`, any of etags'],
  ['GET', { 'if-none-match': '*' }, NEGOTIATED, 'not-modified', '* on an existing resource'],
  ['PUT', { 'if-none-match': '*' }, PASSWORD, 'failed', '* on an existing resource, unsafe method: 412'],
  ['PUT', { 'if-none-match': '*' }, MISSING, 'ok', '* when nothing exists (create-only)'],
  ['PUT', { 'if-none-match': '"x"' }, PASSWORD, 'ok', 'no tag matches'],
  ['GET', { 'if-none-match': 'garbage' }, NEGOTIATED, 'ok', 'unparsable on a read: ignored'],
  ['PUT', { 'if-none-match': 'garbage' }, PASSWORD, 'failed', 'unparsable on a write: false'],
  // Order (§13.2.2): If-Match before If-None-Match.
  ['GET', { 'if-match': '"nope"', 'if-none-match': '"json"' }, NEGOTIATED, 'failed', 'a false If-Match wins over a matching If-None-Match'],
  ['GET', { 'if-match': '"xml"', 'if-none-match': '"json"' }, NEGOTIATED, 'not-modified', 'If-Match true, then If-None-Match'],
  ['GET', { 'if-unmodified-since': BEFORE, 'if-none-match': '"v1"' }, DATED, 'failed', 'a false If-Unmodified-Since wins over If-None-Match'],
  // If-Modified-Since (§13.1.3): GET/HEAD only, only without If-None-Match.
  ['GET', { 'if-modified-since': AT_CHANGE }, DATED, 'not-modified', 'not modified since'],
  ['GET', { 'if-modified-since': BEFORE }, DATED, 'ok', 'modified since'],
  ['GET', { 'if-modified-since': 'nonsense' }, DATED, 'ok', 'invalid date ignored'],
  ['PUT', { 'if-modified-since': AFTER }, PASSWORD, 'ok', 'ignored on a write'],
  ['GET', { 'if-modified-since': AFTER, 'if-none-match': '"other"' }, DATED, 'ok', 'ignored when If-None-Match is present'],
  ['GET', { 'if-modified-since': AFTER }, NEGOTIATED, 'ok', 'no modification date: ignored'],
];

for (const [method, headers, state, expected, why] of cases) {
  test(`E-4 ${method} ${JSON.stringify(headers)} → ${expected} (${why})`, () => {
    assert.equal(evaluatePreconditions(method, headers, state, NOW), expected);
  });
}

test('E-4 entity-tag lists parse as RFC 9110 §8.8.3 says', () => {
  assert.equal(parseEntityTags('*'), '*');
  assert.deepEqual(parseEntityTags('"a", W/"b",  "" ,"\x80\xff"'), [
    { weak: false, tag: '"a"' },
    { weak: true, tag: '"b"' },
    { weak: false, tag: '""' },
    { weak: false, tag: '"\x80\xff"' },
  ]);
  assert.deepEqual(parseEntityTags(''), []);
  assert.deepEqual(parseEntityTags(' , ,'), []);
  for (const bad of ['a', '"a', 'W/a', '"a"b', '"a" "b"', '**', '*,*', '"a\x7f"', '"a\u0100"', 'W /"a"', '"a"\t;']) {
    assert.equal(parseEntityTags(bad), undefined, JSON.stringify(bad));
  }
});

test('E-4 a long list is parsed in linear time', () => {
  const list = Array.from({ length: 5000 }, (_, i) => `"tag-${i}"`).join(', ');
  const tags = parseEntityTags(list);
  assert.ok(Array.isArray(tags) && tags.length === 5000);
  assert.equal(evaluatePreconditions('PUT', { 'if-match': `${list}, "xml"` }, NEGOTIATED), 'ok');
});

test('E-4 requirePreconditions throws the 412 precondition-failed problem, and passes the rest through', () => {
  assert.throws(
    () => requirePreconditions('PUT', { 'if-match': '"nope"' }, PASSWORD),
    (error: unknown) => error instanceof HttpError && error.problem.status === 412 && error.problem.type === '/problems/precondition-failed',
  );
  assert.equal(requirePreconditions('GET', { 'if-none-match': '"json"' }, NEGOTIATED), 'not-modified');
  assert.equal(requirePreconditions('PUT', { 'if-match': '*' }, PASSWORD), 'ok');
});
