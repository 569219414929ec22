import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allowList, createRouter, routeLabel } from '../../lib/http/router.js';

const router = createRouter<string>({
  '/api/:resource': { GET: 'representation' },
  '/user/:name/password': { PUT: 'put' },
  '/user/:name/resetpassword': { POST: 'post' },
  '/:resource(healthz)': { GET: 'health' },
});

const cases: ReadonlyArray<readonly [method: string, path: string, expected: string]> = [
  ['GET', '/api/something', 'found representation {"resource":"something"}'],
  ['HEAD', '/api/something.xml', 'found representation {"resource":"something.xml"}'],
  ['GET', '/api/something/', 'found representation {"resource":"something"}'],
  ['GET', '/api/something//', 'not-found'],
  ['GET', '/api/', 'not-found'],
  ['GET', '/api', 'not-found'],
  ['GET', '/api/a/b', 'not-found'],
  ['POST', '/api/something', 'method-not-allowed GET, HEAD, OPTIONS'],
  ['OPTIONS', '/api/something', 'method-not-allowed GET, HEAD, OPTIONS'],
  ['PUT', '/user/alice/password', 'found put {"name":"alice"}'],
  ['GET', '/user/alice/password', 'method-not-allowed PUT, OPTIONS'],
  ['POST', '/user/alice/resetpassword/', 'found post {"name":"alice"}'],
  ['POST', '/user//resetpassword', 'not-found'],
  ['PUT', '/user/alice/Password', 'not-found'],
  ['GET', '/', 'not-found'],
  ['GET', '', 'not-found'],
  ['GET', 'api/something', 'not-found'],
  ['GET', '//api/something', 'not-found'],
  ['GET', '/api/something/x/', 'not-found'],
  ['GET', '/apix/something', 'not-found'],
  ['GET', '/ap/something', 'not-found'],
  ['GET', '/api/a%2Fb', 'found representation {"resource":"a%2Fb"}'],
  ['PUT', '/user/alice/password/', 'found put {"name":"alice"}'],
  ['PUT', '/user/alice/password//', 'not-found'],
  ['PUT', '/user/alice/passwordx', 'not-found'],
  ['PUT', '/user/alice', 'not-found'],
  ['PUT', '/user/alice/', 'not-found'],
  ['GET', '/healthz', 'found health {"resource":"healthz"}'],
  ['GET', '/healthz.xml', 'found health {"resource":"healthz.xml"}'],
  ['GET', '/healthz.', 'found health {"resource":"healthz."}'],
  ['GET', '/healthz/', 'found health {"resource":"healthz"}'],
  ['GET', '/healthzx', 'not-found'],
  ['GET', '/health', 'not-found'],
  ['GET', '/healthz/x', 'not-found'],
  ['POST', '/healthz.json', 'method-not-allowed GET, HEAD, OPTIONS'],
];

for (const [method, path, expected] of cases) {
  test(`N-8 router: ${method} ${JSON.stringify(path)} → ${expected}`, () => {
    const m = router.match(method, path);
    const actual =
      m.kind === 'found'
        ? `found ${m.handler} ${JSON.stringify(m.params)}`
        : m.kind === 'method-not-allowed'
          ? `method-not-allowed ${m.allow.join(', ')}`
          : 'not-found';
    assert.equal(actual, expected);
  });
}

test('router: patterns are checked when the table is built', () => {
  assert.throws(() => createRouter({ 'api/x': { GET: 1 } }), TypeError);
  assert.throws(() => createRouter({ '/api/:bad-name': { GET: 1 } }), TypeError);
  assert.throws(() => createRouter({ '/api/x y': { GET: 1 } }), TypeError);
  assert.throws(() => createRouter({ '/:x(a.b)': { GET: 1 } }), TypeError);
});

test('H-5 router: a match names its route pattern, never the raw path', () => {
  const labels = (['/api/something.xml', '/user/alice/password', '/healthz.json'] as const).map((path) => {
    const m = router.match('GET', path);
    return m.kind === 'not-found' ? 'not-found' : m.route;
  });
  assert.deepEqual(labels, ['/api/{resource}', '/user/{name}/password', '/healthz']);
});

test('A-12 router: a stem matches its percent-encoded unreserved spelling (RFC 3986 §6.2.2.2), the handler gets the raw segment', () => {
  const r = createRouter<string>({ '/api/:resource(books)': { GET: 'books' }, '/api/books/:id': { PUT: 'item' } });
  const found = (method: string, path: string) => {
    const m = r.match(method, path);
    return m.kind === 'found' ? `${m.handler} ${JSON.stringify(m.params)}` : m.kind;
  };
  assert.equal(found('GET', '/api/bo%6Fks.json'), 'books {"resource":"bo%6Fks.json"}');
  assert.equal(found('GET', '/api/books%2Ejson'), 'books {"resource":"books%2Ejson"}');
  assert.equal(found('GET', '/api/bookshelf'), 'not-found');
  assert.equal(found('GET', '/api/bo%2Fks'), 'not-found', 'an encoded "/" is reserved: not the stem');
  assert.equal(found('PUT', '/api/books/42'), 'item {"id":"42"}');
  assert.equal(found('GET', '/api/books/42'), 'method-not-allowed');
});

test('A-12 allowList and routeLabel: what OPTIONS, 405 and the OpenAPI document say of a route', () => {
  assert.deepEqual(allowList(['GET', 'POST']), ['GET', 'POST', 'HEAD', 'OPTIONS']);
  assert.deepEqual(allowList(['PUT']), ['PUT', 'OPTIONS']);
  assert.deepEqual(allowList(['GET', 'HEAD', 'OPTIONS']), ['GET', 'HEAD', 'OPTIONS']);
  assert.equal(routeLabel('/api/:resource(books)'), '/api/books');
  assert.equal(routeLabel('/api/books/:id'), '/api/books/{id}');
  const r = createRouter<string>({ '/api/books/:id': { GET: 'g', PUT: 'p', DELETE: 'd' } });
  const m = r.match('POST', '/api/books/1');
  assert.equal(m.kind, 'method-not-allowed');
  if (m.kind === 'method-not-allowed') assert.deepEqual(m.allow, allowList(['GET', 'PUT', 'DELETE']));
});
