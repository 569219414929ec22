// E-2 amended (2026-11-27), end to end three ways: an embedder's resource refuses with a problem of
// its own (its slug, any 4xx/5xx status, its title) or with one of the service's; either is sent as
// E-1 says, in JSON or XML. A known slug with another status is a programming error: 500, logged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError, problem } from '../../lib/index.js';
import { serve, WAYS } from '../helpers/ways.js';
import { parseXml } from '../helpers/xml-parse.js';

const shop = {
  get: () => [],
  item: {
    get: (id: string) => {
      if (id === 'sold') throw new HttpError(problem(409, 'out-of-stock', { title: 'Out of Stock', detail: 'No copies left.', sku: 'B-42' }));
      if (id === 'teapot') throw new HttpError(problem(418, 'teapot', { title: "I'm a teapot" }));
      if (id === 'hidden') throw new HttpError(problem(403, 'forbidden', { detail: 'Not yours.' }));
      if (id === 'wrong') return problem(404, 'forbidden');
      return { id };
    },
  },
};

for (const way of WAYS) {
  test(`E-2 an embedder's own problem type is sent with its status, title and members, in JSON and XML (${way})`, async (t) => {
    const s = await serve(t, { resources: { shop } }, way);
    const json = await s.fetch('/api/shop/sold');
    assert.equal(json.status, 409, json.body);
    assert.equal(json.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.deepEqual(JSON.parse(json.body), { type: '/problems/out-of-stock', title: 'Out of Stock', status: 409, detail: 'No copies left.', sku: 'B-42' });
    const xml = await s.fetch('/api/shop/sold.xml');
    assert.equal(xml.status, 409, xml.body);
    const root = parseXml(xml.body);
    assert.deepEqual(
      root.children.map((c) => [c.name, c.text]),
      [['type', '/problems/out-of-stock'], ['title', 'Out of Stock'], ['status', '409'], ['detail', 'No copies left.'], ['sku', 'B-42']],
    );
    const teapot = await s.fetch('/api/shop/teapot');
    assert.equal(teapot.status, 418);
    assert.equal(JSON.parse(teapot.body).title, "I'm a teapot");
    const hidden = await s.fetch('/api/shop/hidden');
    assert.equal(hidden.status, 403);
    assert.deepEqual(JSON.parse(hidden.body), { type: '/problems/forbidden', title: 'Forbidden', status: 403, detail: 'Not yours.' });
  });

  test(`E-2 a known slug with another status is refused where it is built: a 500, never that problem (${way})`, async (t) => {
    const s = await serve(t, { resources: { shop } }, way);
    const r = await s.fetch('/api/shop/wrong');
    assert.equal(r.status, 500, r.body);
    assert.equal(JSON.parse(r.body).type, '/problems/internal');
  });
}
