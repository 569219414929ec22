// The library as embedders use it: CONTRACT A-1..A-3 (A-4 lives in tokens.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer } from 'node:http';
import { connect as http2Connect, createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as lib from '../../lib/index.js';
import { createService, type ServiceOptions, type NegotiatorOptions, negotiate, parseAccept, problem, renderProblem, toXml, HttpError, ServiceError } from '../../lib/index.js';
import { request } from '../helpers/https.js';
import { basic, FAST_SCRYPT, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';
import { parseXml } from '../helpers/xml-parse.js';

/** A service's handler on a plain node:http server of the test's own; its base URL. */
async function onPlainHttp(t: import('node:test').TestContext, resources: ServiceOptions['resources'] = {}): Promise<string> {
  const dir = await tempDir(t);
  const service = createService({ store: join(dir, 'users.json'), scrypt: FAST_SCRYPT, log: false, resources });
  const server = createHttpServer(service.handler);
  const port = await listen(server);
  t.after(async () => {
    server.close();
    await service.close();
  });
  return `http://127.0.0.1:${port}`;
}

async function listen(server: import('node:net').Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test('A-1/A-2 the handler mounted on the embedder’s own node:https server, with a resource of its own', async (t) => {
  const dir = await tempDir(t);
  const service = createService({
    store: join(dir, 'users.json'),
    scrypt: FAST_SCRYPT,
    log: false,
    resources: {
      widgets: (q) => ({ count: Number(q.get('count') ?? 2), items: ['a', 'b'], 'odd key': true, nested: { ok: null } }),
      later: async () => ({ async: 'yes' }),
    },
  });
  const { cert, key } = testCertificate();
  const server = createHttpsServer({ cert, key }, service.handler);
  const port = await listen(server);
  t.after(async () => {
    server.close();
    await service.close();
  });
  const base = `https://localhost:${port}`;
  const json = await request(`${base}/api/widgets?count=3`, { ca: cert });
  assert.equal(json.status, 200);
  assert.deepEqual(JSON.parse(json.body), { count: 3, items: ['a', 'b'], 'odd key': true, nested: { ok: null } });
  assert.equal(json.headers['vary'], 'Accept');
  const xml = await request(`${base}/api/widgets.xml?count=3`, { ca: cert });
  const doc = parseXml(xml.body);
  assert.equal(doc.name, 'widgets');
  assert.deepEqual(doc.children.map((c) => c.name), ['count', 'items', 'odd_x0020_key', 'nested']);
  assert.deepEqual(doc.children[1]?.children.map((c) => [c.name, c.text]), [['item', 'a'], ['item', 'b']]);
  assert.equal(doc.children[3]?.children[0]?.attributes['xsi:nil'], 'true');
  const later = await request(`${base}/api/later`, { ca: cert, headers: { accept: 'text/xml' } });
  assert.equal(later.headers['content-type'], 'text/xml; charset=utf-8');
  assert.equal((await request(`${base}/api/something.json?param1=z`, { ca: cert })).body, '{"param1":"z"}');
  // Password operations work through the mounted handler too, on the same store as service.users.
  await service.users.add('erin', 'birch-initial-passphrase-1');
  const put = await request(`${base}/user/erin/password`, {
    ca: cert,
    method: 'PUT',
    headers: { authorization: basic('erin', 'birch-initial-passphrase-1'), 'content-type': 'text/plain' },
    body: 'birch-second-passphrase-2',
  });
  assert.equal(put.status, 204);
  assert.equal(await service.users.verify('erin', 'birch-second-passphrase-2'), true);
});

test('A-1 on a plain node:http server the handler serves representations and refuses password operations (T-3)', async (t) => {
  const base = await onPlainHttp(t);
  assert.equal((await request(`${base}/api/something.xml`)).status, 200);
  const r = await request(`${base}/user/x/password`, { method: 'PUT', body: 'x' });
  assert.equal(r.status, 403);
  assert.equal(r.headers['strict-transport-security'], undefined);
});

test('A-2 a loader is called for every request: repeated targets get fresh values, fresh ETags and their own query', async (t) => {
  let calls = 0;
  const base = await onPlainHttp(t, {
    counter: (q) => {
      calls += 1;
      const seen = q.getAll('tag');
      // A loader may change the URLSearchParams it gets; the next request must not see that.
      q.append('tag', 'added-by-loader');
      q.delete('n');
      return { calls, seen };
    },
  });
  const url = `${base}/api/counter.json?tag=a&n=1&tag=b%20c`;
  const first = await request(url);
  const second = await request(url);
  assert.deepEqual(JSON.parse(first.body), { calls: 1, seen: ['a', 'b c'] });
  assert.deepEqual(JSON.parse(second.body), { calls: 2, seen: ['a', 'b c'] });
  assert.notEqual(first.headers['etag'], second.headers['etag']);
  // The N-13 links carry the request's own query, in its order, however often it was asked.
  assert.equal(second.headers['link'], '</api/counter.xml?tag=a&n=1&tag=b%20c>; rel="alternate"; type="application/xml"');
  const xml = await request(url.replace('.json', '.xml'));
  assert.equal(parseXml(xml.body).children.find((c) => c.name === 'calls')?.text, '3');
});

test('A-2 a loader refuses with HttpError and headers of its own, in any case: they reach the client once, lowercased', async (t) => {
  const base = await onPlainHttp(t, {
    busy: () => {
      throw new HttpError(problem(503, 'overloaded', { detail: 'Try later.' }), { 'Retry-After': '7', 'X-Shard': 'b', Vary: 'Origin' });
    },
  });
  const r = await request(`${base}/api/busy`, { headers: { accept: 'application/json' } });
  assert.equal(r.status, 503);
  assert.equal(r.headers['retry-after'], '7');
  assert.equal(r.headers['x-shard'], 'b');
  assert.equal(r.headers['vary'], 'Origin, Accept');
  assert.equal(JSON.parse(r.body).detail, 'Try later.');
});

test('A-1 on a node:http2 secure server (compat API)', async (t) => {
  const dir = await tempDir(t);
  const service = createService({ store: join(dir, 'users.json'), scrypt: FAST_SCRYPT, log: false });
  const { cert, key } = testCertificate();
  const server = createSecureServer({ cert, key }, service.handler as never);
  const port = await listen(server);
  const client = http2Connect(`https://localhost:${port}`, { ca: cert });
  t.after(async () => {
    client.close();
    server.close();
    await service.close();
  });
  const { status, headers, body } = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = client.request({ ':path': '/api/something?param1=h2', accept: 'application/xml' });
    let body = '';
    let headers: Record<string, unknown> = {};
    req.on('response', (h) => (headers = h));
    req.on('data', (d) => (body += d));
    req.on('end', () => resolve({ status: Number(headers[':status']), headers, body }));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 200);
  assert.equal(headers['content-type'], 'application/xml; charset=utf-8');
  assert.equal(parseXml(body).children[0]?.text, 'h2');
});

test('A-1 user operations on the store', async (t) => {
  const dir = await tempDir(t);
  const service = createService({ store: join(dir, 'users.json'), scrypt: FAST_SCRYPT, log: false });
  t.after(() => service.close());
  const info = await service.users.add('frank', 'aspen-initial-passphrase-1', { role: 'admin' });
  assert.equal(info.role, 'admin');
  assert.equal(await service.users.verify('frank', 'aspen-initial-passphrase-1'), true);
  assert.equal(await service.users.verify('frank', 'nope'), false);
  assert.equal(await service.users.verify('nobody', 'nope'), false);
  await assert.rejects(service.users.add('frank', 'aspen-initial-passphrase-2'), { code: 'ERR_USER_EXISTS' });
  await assert.rejects(service.users.add('bad:name', 'aspen-initial-passphrase-2'), { code: 'ERR_INVALID_NAME' });
  await assert.rejects(service.users.setPassword('frank', 'short'), (e: unknown) => e instanceof lib.PasswordPolicyError && e.violations.includes('too-short'));
  await service.users.setPassword('frank', 'aspen-second-passphrase-2');
  await assert.rejects(service.users.setPassword('ghost', 'aspen-second-passphrase-2'), { code: 'ERR_USER_NOT_FOUND' });
  assert.deepEqual((await service.users.list()).map((u) => u.name), ['frank']);
  const { token, expiresAt } = await service.users.issueResetToken('frank');
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(expiresAt.getTime() > Date.now());
  assert.equal(await service.users.remove('frank'), true);
  assert.equal(await service.users.remove('frank'), false);
});

test('A-1 options are validated once: every mistake is ERR_INVALID_OPTION', () => {
  const bad: unknown[] = [
    { prot: 8443 },
    { port: 70_000 },
    { port: 1.5 },
    { minPasswordLength: 4 },
    { resources: { 'Bad.Name': () => 1 } },
    { resources: { ok: 'not a function' } },
    { trustProxy: 'not-an-ip' },
    { cert: 'x' },
    { realm: 'a"b' },
    { realm: 'café' },
    { resetTokenTtlMs: 2 * 86_400_000 },
    { scrypt: { ln: 23, r: 8, p: 1 } },
    { hstsMaxAge: -1 },
  ];
  for (const options of bad) {
    assert.throws(() => createService(options as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', JSON.stringify(options));
  }
});

test('A-3 the negotiator, the XML serializer and the problem helpers stand alone', () => {
  assert.equal(negotiate('application/xml;q=0.9, */*;q=0.8', ['application/json', 'application/xml']), 'application/xml');
  assert.equal(parseAccept('text/html;q=0.5')[0]?.q, 0.5);
  assert.equal(toXml({ a: [1, true] }, { root: 'r' }), '<?xml version="1.0" encoding="UTF-8"?><r><a><item>1</item><item>true</item></a></r>');
  const p = problem(404, 'not-found', { detail: 'gone' });
  assert.deepEqual(JSON.parse(renderProblem(p, 'json').body), { type: '/problems/not-found', title: 'Not Found', status: 404, detail: 'gone' });
  assert.equal(parseXml(renderProblem(p, 'xml').body).ns, 'urn:ietf:rfc:7807');
  assert.ok(new HttpError(p) instanceof Error);
  assert.deepEqual(Object.keys(lib).sort(), [
    'HttpError', 'PasswordPolicyError', 'ServiceError', 'createNegotiator', 'createService', 'decodeXmlName', 'encodeXmlName',
    'negotiate', 'negotiateAll', 'parseAccept', 'problem', 'renderProblem', 'toXml',
  ]);
});

test('A-3 (amended) the exported negotiator takes any application\'s list: parameters, any case, malformed entries skipped, a ranking, charset=utf-8 as an option', () => {
  const offered = ['boom', 'application/vnd.example+json;version=1', 'Application/Vnd.Example+JSON; version="2"'];
  assert.equal(lib.negotiate('application/vnd.example+json;version=2', offered), offered[2]);
  assert.deepEqual(lib.negotiateAll('application/vnd.example+json;q=0.5, */*;version=1', offered), [offered[1], offered[2]]);
  assert.equal(lib.createNegotiator(offered)(undefined), offered[1]);
  assert.throws(() => lib.negotiate('*/*', ['application/*']), TypeError);
  assert.equal(lib.negotiate('application/json;charset=utf-8', ['application/json']), undefined);
  const options: NegotiatorOptions = { charsetUtf8: true, cacheSize: 16 };
  assert.equal(lib.createNegotiator(['application/json'], options)('application/json;charset=utf-8'), 'application/json');
});

test('A-1 library calls wait for the hashing gate instead of failing (bulk import)', async (t) => {
  const dir = await tempDir(t);
  const service = createService({ store: join(dir, 'users.json'), scrypt: FAST_SCRYPT, log: false, hashConcurrency: 1, hashQueueLimit: 0 });
  t.after(() => service.close());
  const names = Array.from({ length: 40 }, (_, i) => `bulk-user-${i}`);
  await Promise.all(names.map((name) => service.users.add(name, 'sequoia-bulk-passphrase-1')));
  assert.equal((await service.users.list()).length, 40);
});

test('P-10 a library instance or CLI command without Digest leaves a Digest server’s secrets alone', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const on = createService({ store, scrypt: FAST_SCRYPT, log: false, digest: true });
  await on.users.add('kim', 'walnut-initial-passphrase-1');
  await on.close();
  const off = createService({ store, scrypt: FAST_SCRYPT, log: false });
  assert.equal((await off.users.list()).length, 1);
  await off.users.issueResetToken('kim');
  await off.close();
  const { openStore } = await import('../../lib/users/store.js');
  const reopened = await openStore(store);
  assert.notEqual((await reopened.get('kim'))?.digest, undefined);
  await reopened.close();
});
