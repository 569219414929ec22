// E-1 (amended) and E-2: renderProblem's labels, and the 412 slug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { problem, renderProblem } from '../../lib/index.js';
import { parseXml } from '../helpers/xml-parse.js';

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
    assert.throws(() => renderProblem(p, bad as 'json'), TypeError, bad);
  }
});
