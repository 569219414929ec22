// The library as embedders use it: CONTRACT A-1..A-3 (A-4 lives in tokens.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer } from 'node:http';
import { connect as http2Connect, createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as lib from '../../lib/index.js';
import { createService, type RequestHandler, type ServiceOptions, type NegotiatorOptions, negotiate, parseAccept, problem, renderProblem, toXml, HttpError, ServiceError } from '../../lib/index.js';
import { request, type RequestInit } from '../helpers/https.js';
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

/**
 * The embedders' TLS servers (A-1, H-1): node:https, and node:http2's secure server (compat API)
 * reached over h2 and, with allowHTTP1, over HTTP/1.1 as well. The handler needs no cast for any.
 */
const EMBEDDINGS = [
  { server: 'node:https', protocol: 'h1', create: (tls: { cert: string; key: string }, handler: RequestHandler) => createHttpsServer(tls, handler) },
  { server: 'node:http2 allowHTTP1', protocol: 'h1', create: (tls: { cert: string; key: string }, handler: RequestHandler) => createSecureServer({ ...tls, allowHTTP1: true }, handler) },
  { server: 'node:http2', protocol: 'h2', create: (tls: { cert: string; key: string }, handler: RequestHandler) => createSecureServer(tls, handler) },
] as const;

/** A service's handler on the embedder's own TLS server; requests go over `protocol`. */
async function mounted(t: import('node:test').TestContext, embedding: (typeof EMBEDDINGS)[number], resources: ServiceOptions['resources'] = {}) {
  const dir = await tempDir(t);
  const service = createService({ store: join(dir, 'users.json'), scrypt: FAST_SCRYPT, log: false, resources });
  const tls = testCertificate();
  const server = embedding.create(tls, service.handler);
  const port = await listen(server);
  t.after(async () => {
    // An HTTP/2 server's close() waits for its sessions; the helper's clients close theirs.
    server.close();
    await service.close();
  });
  const base = `https://localhost:${port}`;
  return { service, base, fetch: (path: string, init: RequestInit = {}) => request(base + path, { ca: tls.cert, protocol: embedding.protocol, openapi: service.openapi(), ...init }) };
}

for (const embedding of EMBEDDINGS) test(`A-1/A-2 the handler mounted on the embedder’s own ${embedding.server} server, with a resource of its own (${embedding.protocol})`, async (t) => {
  const { service, fetch } = await mounted(t, embedding, {
    widgets: (q) => ({ count: Number(q.get('count') ?? 2), items: ['a', 'b'], 'odd key': true, nested: { ok: null } }),
    later: async () => ({ async: 'yes' }),
  });
  const json = await fetch('/api/widgets?count=3');
  assert.equal(json.status, 200);
  assert.equal(json.httpVersion, embedding.protocol === 'h2' ? '2.0' : '1.1');
  assert.deepEqual(JSON.parse(json.body), { count: 3, items: ['a', 'b'], 'odd key': true, nested: { ok: null } });
  assert.equal(json.headers['vary'], 'Accept');
  const xml = await fetch('/api/widgets.xml?count=3');
  const doc = parseXml(xml.body);
  assert.equal(doc.name, 'widgets');
  assert.deepEqual(doc.children.map((c) => c.name), ['count', 'items', 'odd_x0020_key', 'nested']);
  assert.deepEqual(doc.children[1]?.children.map((c) => [c.name, c.text]), [['item', 'a'], ['item', 'b']]);
  assert.equal(doc.children[3]?.children[0]?.attributes['xsi:nil'], 'true');
  const later = await fetch('/api/later', { headers: { accept: 'text/xml' } });
  assert.equal(later.headers['content-type'], 'text/xml; charset=utf-8');
  assert.equal((await fetch('/api/something.json?param1=z')).body, '{"param1":"z"}');
  const something = await fetch('/api/something?param1=h2', { headers: { accept: 'application/xml' } });
  assert.equal(something.headers['content-type'], 'application/xml; charset=utf-8');
  assert.equal(parseXml(something.body).children[0]?.text, 'h2');
  // Password operations work through the mounted handler too, on the same store as service.users.
  await service.users.add('erin', 'birch-initial-passphrase-1');
  const put = await fetch('/user/erin/password', {
    method: 'PUT',
    headers: { authorization: basic('erin', 'birch-initial-passphrase-1'), 'content-type': 'text/plain' },
    body: 'birch-second-passphrase-2',
  });
  assert.equal(put.status, 204);
  assert.equal(await service.users.verify('erin', 'birch-second-passphrase-2'), true);
});

test('H-1 on the embedder\'s node:http2 server (compat API) a :path with raw octets above ASCII is a 400 problem, as on the service\'s own listener', async (t) => {
  const embedding = EMBEDDINGS.find((e) => e.server === 'node:http2') as (typeof EMBEDDINGS)[number];
  const { base } = await mounted(t, embedding);
  const client = http2Connect(base, { rejectUnauthorized: false }); // the test's own certificate: what is checked here is the answer
  t.after(() => client.close());
  // The UTF-8 octets of 'é', as node:http2 writes a string's characters: one octet each.
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const stream = client.request({ ':path': '/api/something.json?param1=\u00c3\u00a9' });
    let status = 0;
    let body = '';
    stream.on('response', (headers) => (status = Number(headers[':status'])));
    stream.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
    stream.end();
  });
  assert.equal(answer.status, 400, answer.body);
  assert.equal(JSON.parse(answer.body).type, '/problems/bad-request');
});

// Plain HTTP is HTTP/1.1 here: HTTP/2 is offered over TLS only (H-1).
test('A-1 on a plain node:http server the handler serves representations and refuses password operations (T-3)', async (t) => {
  const base = await onPlainHttp(t);
  assert.equal((await request(`${base}/api/something.xml`)).status, 200);
  const r = await request(`${base}/user/x/password`, { method: 'PUT', body: 'x' });
  assert.equal(r.status, 403);
  assert.equal(r.headers['strict-transport-security'], undefined);
});

// The loaders' contract holds on either protocol: the h1 run mounts on node:https, the h2 run on node:http2.
const LOADER_EMBEDDINGS = EMBEDDINGS.filter((e) => e.server !== 'node:http2 allowHTTP1');

for (const embedding of LOADER_EMBEDDINGS) test(`A-2 a loader is called for every request: repeated targets get fresh values, fresh ETags and their own query (${embedding.protocol})`, async (t) => {
  let calls = 0;
  const { fetch } = await mounted(t, embedding, {
    counter: (q) => {
      calls += 1;
      const seen = q.getAll('tag');
      // A loader may change the URLSearchParams it gets; the next request must not see that.
      q.append('tag', 'added-by-loader');
      q.delete('n');
      return { calls, seen };
    },
  });
  const path = '/api/counter.json?tag=a&n=1&tag=b%20c';
  const first = await fetch(path);
  const second = await fetch(path);
  assert.deepEqual(JSON.parse(first.body), { calls: 1, seen: ['a', 'b c'] });
  assert.deepEqual(JSON.parse(second.body), { calls: 2, seen: ['a', 'b c'] });
  assert.notEqual(first.headers['etag'], second.headers['etag']);
  // The N-13 links carry the request's own query, in its order, however often it was asked.
  assert.equal(second.headers['link'], '</api/counter.xml?tag=a&n=1&tag=b%20c>; rel="alternate"; type="application/xml"');
  const xml = await fetch(path.replace('.json', '.xml'));
  assert.equal(parseXml(xml.body).children.find((c) => c.name === 'calls')?.text, '3');
});

for (const embedding of LOADER_EMBEDDINGS) test(`A-2 a loader refuses with HttpError and headers of its own, in any case: they reach the client once, lowercased (${embedding.protocol})`, async (t) => {
  const { fetch } = await mounted(t, embedding, {
    busy: () => {
      // Framing fields are the server's to set: a loader's would break the message (over HTTP/1.1 a client refused it).
      throw new HttpError(problem(503, 'overloaded', { detail: 'Try later.' }), { 'Retry-After': '7', 'X-Shard': 'b', Vary: 'Origin', 'Transfer-Encoding': 'chunked', 'Content-Length': '1' });
    },
  });
  const r = await fetch('/api/busy', { headers: { accept: 'application/json' } });
  assert.equal(r.status, 503);
  assert.equal(r.headers['transfer-encoding'], undefined);
  assert.equal(r.headers['content-length'], String(r.raw.length));
  assert.equal(r.headers['retry-after'], '7');
  assert.equal(r.headers['x-shard'], 'b');
  assert.equal(r.headers['vary'], 'Origin, Accept');
  assert.equal(JSON.parse(r.body).detail, 'Try later.');
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
  // A-11 (amended): the only admin goes only when forced.
  await assert.rejects(service.users.remove('frank'), { code: 'ERR_LAST_ADMIN' });
  assert.equal(await service.users.remove('frank', { force: true }), true);
  assert.equal(await service.users.remove('frank'), false);
});

test('L-1 a requestTimeoutMs below the headers time-out shortens the headers default with it, and both listeners start', async (t) => {
  const dir = await tempDir(t);
  for (const http2 of [true, false]) {
    const service = createService({ port: 0, http2, requestTimeoutMs: 2_000, store: join(dir, `users-${http2}.json`), ...testCertificate(), log: false });
    assert.equal(service.config.headersTimeoutMs, 2_000);
    await service.listen();
    await service.close();
  }
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
    // node:http would refuse it at listen() with a RangeError; it is refused here, by name.
    { headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 },
    { headersTimeoutMs: 40_000 },
    // A URL of a scheme no store has, and near misses of ':memory:': not file paths.
    { store: 'mysql://user:secret@db/app' },
    { store: 'file:///var/lib/users.json' },
    { store: ':memory' },
    { store: ':MEMORY:' },
    { store: ':memory: ' },
    // Near misses of a PostgreSQL URL, and one that does not parse: not file paths either.
    { store: 'postgres:/user:secret@db/app' },
    { store: 'postgresql:user:secret@db/app' },
    { store: 'postgres//user:secret@db/app' },
    { store: ' postgres://user:secret@db/app' },
    { store: 'postgres://user:secret@db:notaport/app' },
    // Two listeners on one port could never both listen (all bind the same host).
    { port: 9000, httpPort: 9000 },
    { metricsPort: 8443 },
    { port: 9000, httpPort: 9001, metricsPort: 9001 },
  ];
  for (const options of bad) {
    assert.throws(() => createService(options as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION' && !e.message.includes('secret'), JSON.stringify(options));
  }
  // The refusal names the scheme, never the URL's password; a number that is no integer is shown as it is.
  assert.throws(() => createService({ store: 'mysql://user:secret@db/app' }), (e: unknown) => e instanceof ServiceError && /"mysql:" URL/.test(e.message) && !e.message.includes('secret'));
  assert.throws(() => createService({ port: Number.NaN }), /got NaN/);
  assert.throws(() => createService({ port: 9000, metricsPort: 9000 }), /^ServiceError: metricsPort: 9000 is also the HTTPS port; each listener needs a port of its own$/);
  // Port 0 is a free port for each listener.
  assert.doesNotThrow(() => createService({ port: 0, httpPort: 0, metricsPort: 0 }));
  // Paths that only look like those are paths.
  for (const path of ['C://data/users.json', 'memory', 'memory.json', 'data/http://x/users.json']) assert.doesNotThrow(() => createService({ store: path }), path);
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
  assert.throws(() => lib.negotiate('*/*', ['application/*']), { code: 'ERR_INVALID_ARGUMENT' });
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
  const { openStore } = await import('../../lib/store/open.js');
  const reopened = await openStore(store);
  assert.notEqual((await reopened.get('kim'))?.digest, undefined);
  await reopened.close();
});
