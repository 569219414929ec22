// basePath serves every route under a prefix and writes it into every Location,
// Content-Location, Link and `next`; nothing outside it is served. service.middleware is
// Connect-style and hands on what the service has no route for: tested in a real Express 5 app
// over a real socket, and on the service's own listeners over both protocols, and through fetch.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { createService, ServiceError, type Service, type ServiceOptions } from '../../lib/index.js';
import { PROTOCOLS, request, type RequestInit } from '../helpers/https.js';
import { basic, FAST_SCRYPT, startService, testCertificate } from '../helpers/service.js';

const ROOT_PASSWORD = 'a-long-admin-passphrase';

/** a collection that takes writes, its own per service. */
function books(): NonNullable<ServiceOptions['resources']> {
  const shelf = new Map<string, unknown>();
  return {
    books: {
      get: () => [...shelf.values()],
      post: (body) => {
        const id = String(shelf.size + 1);
        shelf.set(id, body);
        return { id, value: body };
      },
      item: { get: (id) => shelf.get(id), put: (id, body) => (shelf.set(id, body), body) },
    },
  };
}
const root = basic('root', ROOT_PASSWORD);

/** A request's answer, the fields these tests look at, however it travelled. */
interface Answer {
  readonly status: number;
  readonly header: (name: string) => string | undefined;
  readonly body: string;
}

type Send = (path: string, init?: { method?: string; headers?: Record<string, string>; body?: string | Buffer }) => Promise<Answer>;

function overSocket(base: string, ca: string, protocol: RequestInit['protocol'] = 'h1'): Send {
  return async (path, init = {}) => {
    const res = await request(base + path, { ca, protocol, unchecked: true, ...init });
    return { status: res.status, header: (name) => [res.headers[name]].flat()[0], body: res.body };
  };
}

function inProcess(service: Service): Send {
  return async (path, init = {}) => {
    const res = await service.fetch(path, init);
    return { status: res.status, header: (name) => res.headers.get(name) ?? undefined, body: await res.text() };
  };
}

/**
 * Every path the service writes carries /svc; nothing outside /svc is served (`alone`: the service
 * answers those 404 itself, as opposed to an app that never hands them to it).
 */
async function checkMounted(send: Send, alone = true): Promise<void> {
  const json = { accept: 'application/json' };
  const something = await send('/svc/api/something?param1=a', { headers: json });
  assert.equal(something.status, 200);
  assert.equal(something.header('content-location'), '/svc/api/something.json?param1=a');
  assert.equal(something.header('link'), '</svc/api/something.xml?param1=a>; rel="alternate"; type="application/xml"');
  for (const outside of ['/api/something', '/svcx/api/something', '/other/svc/api/something', '/openapi.json', '/healthz']) {
    const res = await send(outside);
    assert.equal(res.status, 404, outside);
    if (alone) assert.equal(JSON.parse(res.body).type, '/problems/not-found', outside);
  }
  const xmlProblem = await send('/svc/api/nothing.xml');
  assert.equal(xmlProblem.status, 404);
  if (alone) assert.equal(xmlProblem.header('content-type'), 'application/problem+xml; charset=utf-8', 'the extension chose XML under the prefix too');
  const health = await send('/svc/healthz', { headers: json });
  assert.equal(health.status, 200);
  assert.match(health.header('link') ?? '', /^<\/svc\/healthz\.xml>/);

  const created = await send('/svc/user/', {
    method: 'POST',
    headers: { authorization: root, 'content-type': 'application/json', ...json },
    body: JSON.stringify({ name: 'bob', password: 'quiet-river-stone-lamp' }),
  });
  assert.equal(created.status, 201, created.body);
  assert.equal(created.header('location'), '/svc/user/bob');
  assert.equal(created.header('content-location'), '/svc/user/bob.json');
  const user = await send('/svc/user/bob', { headers: { authorization: root, ...json } });
  assert.equal(user.status, 200);
  assert.match(user.header('link') ?? '', /^<\/svc\/user\/bob\.xml>/);
  assert.equal(user.header('content-location'), '/svc/user/bob.json');
  const page = await send('/svc/user/?limit=1', { headers: { authorization: root, ...json } });
  assert.equal(page.status, 200);
  assert.equal(JSON.parse(page.body).next, '/svc/user/?after=bob&limit=1');
  assert.equal(page.header('link'), '</svc/user/?after=bob&limit=1>; rel="next"');
  const xmlPage = await send('/svc/user/?limit=1&return_type=xml', { headers: { authorization: root } });
  assert.match(xmlPage.body, /<next>\/svc\/user\/\?after=bob&amp;limit=1<\/next>/);
  // A resource that takes writes: its Location and its items' links carry the prefix too.
  const posted = await send('/svc/api/books', { method: 'POST', headers: { 'content-type': 'application/json', ...json }, body: '{"title":"Emma"}' });
  assert.equal(posted.status, 201, posted.body);
  assert.equal(posted.header('location'), '/svc/api/books/1');
  const item = await send('/svc/api/books/1', { headers: json });
  assert.equal(item.status, 200);
  assert.equal(item.header('content-location'), '/svc/api/books/1.json');
  assert.match(item.header('link') ?? '', /^<\/svc\/api\/books\/1\.xml>/);
  const put = await send('/svc/api/books/2', { method: 'PUT', headers: { 'content-type': 'application/json', ...json }, body: '{"title":"Persuasion"}' });
  assert.equal(put.status, 201, put.body);
  assert.equal(put.header('location'), '/svc/api/books/2');
  const openapi = await send('/svc/openapi.json');
  assert.equal(openapi.status, 200);
  assert.deepEqual(JSON.parse(openapi.body).servers, [{ url: '/svc' }]);
  const removed = await send('/svc/user/bob', { method: 'DELETE', headers: { authorization: root } });
  assert.equal(removed.status, 204);
}

for (const protocol of PROTOCOLS) {
  test(`A-9 basePath on the service's own listener (${protocol})`, async (t) => {
    const started = await startService(t, { store: ':memory:', basePath: '/svc', resources: books() }, protocol);
    await started.service.users.add('root', ROOT_PASSWORD, { role: 'admin' });
    await checkMounted(overSocket(started.url, started.ca, protocol));
  });
}

test('A-9 basePath through service.fetch', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc/', resources: books() });
  t.after(() => service.close());
  assert.equal(service.config.basePath, '/svc', 'a trailing slash is dropped');
  await service.users.add('root', ROOT_PASSWORD, { role: 'admin' });
  await checkMounted(inProcess(service));
});

test('A-9 basePath is checked: a path of plain segments', () => {
  for (const basePath of ['svc', '/svc?x', '/a/../b', '/a//b', '/%2e', '/sp ace', 42]) {
    assert.throws(() => createService({ basePath: basePath as string }), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', String(basePath));
  }
  for (const basePath of ['', '/', '/svc', '/a/b-c/d_e.f~']) assert.doesNotThrow(() => createService({ basePath }));
});

async function listen(t: TestContext, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('A-9 service.middleware in a real Express 5 app (app.use("/svc", …)): its routes before and after still answer', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc', resources: books() });
  t.after(() => service.close());
  await service.users.add('root', ROOT_PASSWORD, { role: 'admin' });
  const app = express();
  app.get('/before', (_req, res) => void res.send('before'));
  app.use('/svc', service.middleware);
  app.get('/after', (_req, res) => void res.send('after'));
  // Under the prefix, but no route of the service's: the middleware hands it on.
  app.get('/svc/extra', (_req, res) => void res.send('extra from express'));
  const { cert, key } = testCertificate();
  const base = await listen(t, createServer({ cert, key }, app));
  const send = overSocket(base, cert);
  await checkMounted(send, false);
  assert.equal((await send('/before')).body, 'before');
  assert.equal((await send('/after')).body, 'after');
  assert.equal((await send('/svc/extra')).body, 'extra from express');
  const unknown = await send('/nowhere');
  assert.equal(unknown.status, 404);
  assert.match(unknown.header('content-type') ?? '', /^text\/html/, "Express's own 404");
});

test('A-9 service.middleware behind body parsers (express.json() and express.urlencoded() first, as most apps have them): what they parsed is taken as the body', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc', resources: books() });
  t.after(() => service.close());
  await service.users.add('ann', 'velvet-harbor-lantern-42');
  const app = express();
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.use('/svc', (req, _res, next) => {
    // A middleware of the app's that drops what express.json() read.
    if (req.headers['x-weird'] !== undefined) delete (req as unknown as { body?: unknown }).body;
    next();
  });
  app.use('/svc', service.middleware);
  const { cert, key } = testCertificate();
  const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
  const json = { 'content-type': 'application/json' };
  const post = await send('/svc/api/books', { method: 'POST', headers: json, body: '{"title":"Emma"}' });
  assert.equal(post.status, 201, post.body);
  assert.deepEqual(JSON.parse(post.body), { title: 'Emma' });
  // express.json() decodes a content coding: what it parsed is plain, and taken.
  const gzipped = await send('/svc/api/books', { method: 'POST', headers: { ...json, 'content-encoding': 'gzip' }, body: gzipSync('{"title":"Mansfield Park"}') });
  assert.equal(gzipped.status, 201, gzipped.body);
  assert.deepEqual(JSON.parse(gzipped.body), { title: 'Mansfield Park' });
  const etag = post.header('etag') ?? '';
  const stale = await send('/svc/api/books/1', { method: 'PUT', headers: { ...json, 'if-match': '"stale"' }, body: '{"title":"Persuasion"}' });
  assert.equal(stale.status, 412, 'conditions as ever');
  const put = await send('/svc/api/books/1', { method: 'PUT', headers: { ...json, 'if-match': etag }, body: '{"title":"Persuasion"}' });
  assert.equal(put.status, 200, put.body);
  const refused = await send('/svc/api/books/1', { method: 'PUT', headers: json, body: '[1,2]' });
  assert.equal(refused.status, 200, 'the value express.json() parsed, whatever it is, as the service would have read it');
  // The password change by the old one (P-5), its JSON parsed by express.json().
  const form = await send('/svc/user/ann/resetpassword', { method: 'POST', headers: json, body: '{"oldpasswd":"velvet-harbor-lantern-42","newpasswd":"copper-meadow-violin-77"}' });
  assert.equal(form.status, 204, form.body);
  assert.equal(await service.users.verify('ann', 'copper-meadow-violin-77'), true);
  // A body the parsers left alone, and a request without a body, are served as ever.
  const text = await send('/svc/api/books', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
  assert.equal(text.status, 415);
  // A form, which express.urlencoded() read: 415 as any form is (no route here takes one).
  const formFields = await send('/svc/api/books', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'title=Emma' });
  assert.equal(formFields.status, 415, formFields.body);
  const list = await send('/svc/api/books.json');
  assert.equal(list.body, '[[1,2],{"title":"Mansfield Park"}]');
  // Read elsewhere and left in no form the service takes: the mount's fault, said so.
  const weird = await send('/svc/api/books', { method: 'POST', headers: { ...json, 'x-weird': '1' }, body: '{}' });
  assert.equal(weird.status, 500);
  assert.match(JSON.parse(weird.body).detail, /read before this service saw it, and left in no form it takes: mount service\.middleware before that body parser/);
});

test('A-9 service.middleware mounted under a prefix its basePath does not start with (app.use("/svc", …) without basePath) hands Express an error that says so, not a silent 404', async (t) => {
  const caught: unknown[] = [];
  const { cert, key } = testCertificate();
  for (const basePath of [undefined, '/other']) {
    const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, resources: books(), ...(basePath === undefined ? {} : { basePath }) });
    t.after(() => service.close());
    const app = express();
    app.use('/svc', service.middleware);
    app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      caught.push(error);
      res.status(500).send(error instanceof Error ? error.message : String(error));
    });
    const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
    const answer = await send('/svc/api/books', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(answer.status, 500, String(basePath));
    assert.match(answer.body, new RegExp(`mounted at "/svc" but the service's basePath is "${basePath ?? ''}": give createService\\(\\{ basePath: '/svc' \\}\\)`), String(basePath));
  }
  assert.ok(caught.every((e) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION'));
  // A basePath under the mount path is served as it should be.
  const deeper = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc/v1', resources: books() });
  t.after(() => deeper.close());
  const app = express();
  app.use('/svc', deeper.middleware);
  const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
  assert.equal((await send('/svc/v1/api/books', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 201);
  assert.equal((await send('/svc/nothing')).status, 404, 'a path outside it is handed on');
});

test('A-9 service.middleware: a request whose prefix differs in case (Express matches mounts ignoring it) is handed on, not a 500; the app\'s own routes answer', async (t) => {
  const { cert, key } = testCertificate();
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc', resources: books() });
  t.after(() => service.close());
  const errors: unknown[] = [];
  const app = express();
  app.use('/svc', service.middleware);
  app.get('/svc/status', (_req, res) => void res.send('still Express'));
  app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    errors.push(error);
    res.status(500).send('error');
  });
  const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
  assert.equal((await send('/SVC/api/books.json')).status, 404, 'not the service\'s path (its routes are case-sensitive): Express\'s 404');
  const status = await send('/Svc/status');
  assert.equal(status.status, 200);
  assert.equal(status.body, 'still Express');
  assert.equal((await send('/svc/api/books.json')).status, 200);
  assert.deepEqual(errors, []);
});

test('A-9 service.middleware at the root of an Express app, without basePath; next() for what it does not serve', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT });
  t.after(() => service.close());
  const app = express();
  app.use(service.middleware);
  app.get('/mine', (_req, res) => void res.send('mine'));
  app.get('/api/something/deeper', (_req, res) => void res.send('deeper'));
  const { cert, key } = testCertificate();
  const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
  const json = await send('/api/something.json');
  assert.equal(json.status, 200);
  assert.equal(json.header('link'), '</api/something.xml>; rel="alternate"; type="application/xml"');
  assert.equal((await send('/mine')).body, 'mine');
  assert.equal((await send('/api/something/deeper')).body, 'deeper');
  // A route of the service's with another method is the service's answer (405), not handed on.
  const post = await send('/api/something', { method: 'POST' });
  assert.equal(post.status, 405);
});

test('A-9 the service.handler in Express (app.use("/svc", handler)): the path is read from req.originalUrl', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, basePath: '/svc' });
  t.after(() => service.close());
  const app = express();
  app.use('/svc', service.handler);
  const { cert, key } = testCertificate();
  const send = overSocket(await listen(t, createServer({ cert, key }, app)), cert);
  const res = await send('/svc/api/something.xml');
  assert.equal(res.status, 200);
  assert.match(res.header('link') ?? '', /^<\/svc\/api\/something\.json>/);
  const missing = await send('/svc/nothing');
  assert.equal(missing.status, 404, 'the handler answers 404 itself');
  assert.equal(JSON.parse(missing.body).type, '/problems/not-found');
});
