// docs/reference/errors.md lists every ServiceError code and every problem type the service
// sends, and nothing else; kept in step with the code both ways (as Fastify's docs test does for
// its FST_ERR_* list).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES } from '../../lib/errors.js';
import { PROBLEM_TYPES } from '../../lib/http/problem.js';

const doc = readFileSync(new URL('../../docs/reference/errors.md', import.meta.url), 'utf8');

/** The table rows of the section under `heading`: their cells, trimmed, the header and rule left out. */
function rows(heading: string): string[][] {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `errors.md has a "## ${heading}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.slice(1, -1).split(' | ').map((cell) => cell.trim()));
}

const unquote = (cell: string | undefined): string => /^`([^`]+)`$/.exec(cell ?? '')?.[1] ?? `(not a code: ${cell})`;

test('A-11 errors.md lists every ServiceError code, each once, with what it means, when, and what to do', () => {
  const listed = rows('ServiceError codes');
  const codes = listed.map((cells) => unquote(cells[0]));
  assert.deepEqual([...codes].sort(), [...ERROR_CODES].sort(), 'the documented codes are exactly ErrorCode');
  assert.equal(new Set(codes).size, codes.length, 'no code twice');
  for (const cells of listed) {
    assert.equal(cells.length, 4, `${cells[0]}: code, meaning, when, what to do`);
    for (const cell of cells) assert.ok(cell.length > 3, `${cells[0]}: no empty cell`);
  }
});

test('A-11 errors.md lists every problem type the service sends with its status and title, and no other', () => {
  const listed = rows('Problem types');
  const documented = new Map(listed.map((cells) => [unquote(cells[0]), { status: Number(cells[1]), title: cells[2] }]));
  assert.equal(documented.size, listed.length, 'no slug twice');
  assert.deepEqual([...documented.keys()].sort(), [...PROBLEM_TYPES.keys()].sort(), 'the documented slugs are exactly the known ones');
  for (const [slug, known] of PROBLEM_TYPES) assert.deepEqual(documented.get(slug), { status: known.status, title: known.title }, slug);
  for (const cells of listed) assert.ok((cells[3] ?? '').length > 10, `${cells[0]}: says when it is sent`);
});

test('A-11 the check can fail: a code missing from the list is noticed', () => {
  // The tests above would pass on an empty ERROR_CODES and an empty table: they are not empty.
  assert.ok(ERROR_CODES.length >= 19 && rows('ServiceError codes').length === ERROR_CODES.length);
  assert.ok(!rows('ServiceError codes').some((cells) => cells[0] === '`ERR_NOT_A_CODE`'));
});
