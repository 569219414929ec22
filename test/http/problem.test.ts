// E-1 (amended) and E-2: renderProblem's labels, and the 412 slug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { problem, renderProblem, ServiceError } from '../../lib/index.js';
import { parseXml } from '../helpers/xml-parse.js';

/** a wrong argument is a ServiceError ERR_INVALID_ARGUMENT, not a TypeError. */
const INVALID_ARGUMENT = (error: unknown) => error instanceof ServiceError && error.code === 'ERR_INVALID_ARGUMENT';

const p = problem(412, 'precondition-failed', { detail: 'If-Match does not hold.' });

test('E-2 precondition-failed is a problem type with its title', () => {
  assert.deepEqual(p, { type: '/problems/precondition-failed', title: 'Precondition Failed', status: 412, detail: 'If-Match does not hold.' });
});

const cases = [
  ['json', 'application/problem+json', 'json'],
  ['xml', 'application/problem+xml', 'xml'],
  ['application/problem+json', 'application/problem+json', 'json'],
  ['application/json', 'application/json', 'json'],
  ['application/problem+xml', 'application/problem+xml', 'xml'],
  ['application/xml', 'application/xml', 'xml'],
  ['text/xml', 'text/xml', 'xml'],
] as const;

for (const [as, label, format] of cases) {
  test(`E-1 renderProblem(p, ${as}) → ${label}, a ${format} body`, () => {
    const { contentType, body } = renderProblem(p, as);
    assert.equal(contentType, `${label}; charset=utf-8`);
    if (format === 'json') assert.deepEqual(JSON.parse(body), p);
    else assert.equal(parseXml(body).ns, 'urn:ietf:rfc:7807');
  });
}

test('E-1 renderProblem refuses a label that is not a problem media type (programmer error)', () => {
  for (const bad of ['text/html', 'application/problem+yaml', 'JSON', '']) {
    assert.throws(() => renderProblem(p, bad as 'json'), INVALID_ARGUMENT, bad);
  }
});

// E-2 amended (2026-11-27): new slugs, embedders' own slugs, a known slug keeps its status.
const KNOWN_STATUS = [
  ['not-found', 404], ['method-not-allowed', 405], ['not-acceptable', 406], ['bad-request', 400], ['https-required', 403],
  ['unauthorized', 401], ['forbidden', 403], ['invalid-credentials', 403], ['unsupported-media-type', 415],
  ['payload-too-large', 413], ['password-policy', 422], ['too-many-requests', 429], ['overloaded', 503], ['internal', 500],
  ['uri-too-long', 414], ['conflict', 409], ['precondition-failed', 412], ['unprocessable', 422], ['precondition-required', 428],
] as const;

test('E-2 every slug of the contract is known with its status and a title', () => {
  for (const [slug, status] of KNOWN_STATUS) {
    const p = problem(status, slug);
    assert.equal(p.type, `/problems/${slug}`);
    assert.equal(p.status, status);
    assert.ok(typeof p.title === 'string' && p.title.length > 0, slug);
  }
  assert.equal(problem(422, 'unprocessable').title, 'Unprocessable Content');
  assert.equal(problem(428, 'precondition-required').title, 'Precondition Required');
});

test('E-2 a known slug with another status than its own is ERR_INVALID_ARGUMENT', () => {
  for (const [slug, status] of KNOWN_STATUS) {
    const other = status === 404 ? 410 : 404;
    assert.throws(() => problem(other, slug), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_ARGUMENT' && e.message.includes(slug));
  }
});

test("E-2 an embedder's own slug takes any 4xx/5xx status with its title", () => {
  const p = problem(409, 'out-of-stock', { title: 'Out of Stock', detail: 'No copies left.', sku: 'B-42' });
  assert.deepEqual(p, { type: '/problems/out-of-stock', title: 'Out of Stock', status: 409, detail: 'No copies left.', sku: 'B-42' });
  for (const status of [400, 418, 451, 499, 500, 502, 599]) assert.equal(problem(status, 'mine', { title: 'Mine' }).status, status);
});

const refused: ReadonlyArray<readonly [string, () => unknown]> = [
  // @ts-expect-error an embedder's own slug needs a title: the types say so too
  ['an unknown slug without a title', () => problem(409, 'out-of-stock')],
  ['an unknown slug with an empty title', () => problem(409, 'out-of-stock', { title: '' })],
  ['a title that is not a string', () => problem(409, 'out-of-stock', { title: 42 } as never)],
  ['a detail that is not a string', () => problem(404, 'not-found', { detail: { a: 1 } } as never)],
  ['a status below 400', () => problem(302, 'moved', { title: 'Moved' })],
  ['a status above 599', () => problem(600, 'odd', { title: 'Odd' })],
  ['a status that is not an integer', () => problem(404.5, 'odd', { title: 'Odd' })],
  ['a status that is a string', () => problem('404' as never, 'not-found')],
  ['a slug with a slash', () => problem(400, 'a/b', { title: 'A' })],
  ['a slug with a space', () => problem(400, 'a b', { title: 'A' })],
  ['the slug ..', () => problem(400, '..', { title: 'A' })],
  ['an empty slug', () => problem(400, '', { title: 'A' })],
  ['a slug that is not a string', () => problem(400, 7 as never, { title: 'A' })],
  ['extra that is not an object', () => problem(404, 'not-found', 'gone' as never)],
  ['extra that sets status', () => problem(404, 'not-found', { status: 500 })],
  ['extra that sets type', () => problem(404, 'not-found', { type: '/problems/internal' })],
  ['a slug inherited from Object.prototype', () => problem(400, 'constructor' as never)],
];

for (const [what, call] of refused) {
  test(`E-2 problem() refuses ${what} with ERR_INVALID_ARGUMENT`, () => {
    assert.throws(call, (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_ARGUMENT');
  });
}

test('E-1 a 422 problem with errors: one <i> per entry in XML, the array as it is in JSON', () => {
  const errors = [
    { pointer: '/title', detail: 'must be a string' },
    { pointer: '/tags/0', detail: 'must be at most 3 characters <&>' },
  ];
  const p = problem(422, 'unprocessable', { detail: 'The body does not match the schema.', errors });
  assert.deepEqual(JSON.parse(renderProblem(p, 'json').body).errors, errors);
  const root = parseXml(renderProblem(p, 'xml').body);
  const list = root.children.find((c) => c.name === 'errors');
  assert.ok(list !== undefined);
  assert.deepEqual(
    list.children.map((i) => [i.name, i.children.map((c) => [c.name, c.text])]),
    [
      ['i', [['pointer', '/title'], ['detail', 'must be a string']]],
      ['i', [['pointer', '/tags/0'], ['detail', 'must be at most 3 characters <&>']]],
    ],
  );
});
