// service.fetch — the global fetch's arguments in, a WHATWG Response out, through the same
// pipeline as a socket (routing, negotiation, authentication, throttling, problems, log), with no
// listener, certificate or file; mounted in Hono (a fetch framework).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { Hono } from 'hono';
import { mount } from 'hono/mount';
import { createService, HttpError, problem, ServiceError, type ServiceOptions } from '../../lib/index.js';
import { basic, FAST_SCRYPT, startService } from '../helpers/service.js';

const ADMIN_PASSWORD = 'a-long-admin-passphrase';

function memoryService(t: import('node:test').TestContext, options: ServiceOptions = {}) {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT, ...options });
  t.after(() => service.close());
  return service;
}

const isCode = (code: string) => (error: unknown) => error instanceof ServiceError && error.code === code;

test('A-8 a path, a URL and a Request: negotiated answers with their headers, as a WHATWG Response', async (t) => {
  const service = memoryService(t, { resources: { books: (query) => ({ title: query.get('title') }) } });
  const xml = await service.fetch('/api/books.xml?title=Emma');
  assert.ok(xml instanceof Response);
  assert.equal(xml.status, 200);
  assert.equal(xml.headers.get('content-type'), 'application/xml; charset=utf-8');
  assert.equal(await xml.text(), '<?xml version="1.0" encoding="UTF-8"?><books><title>Emma</title></books>');
  assert.equal(xml.headers.get('link'), '</api/books.json?title=Emma>; rel="alternate"; type="application/json"');
  assert.equal(xml.headers.get('strict-transport-security'), 'max-age=31536000', 'a path counts as HTTPS');

  const json = await service.fetch(new URL('https://localhost/api/books?title=Emma'), { headers: { accept: 'application/json' } });
  assert.deepEqual(await json.json(), { title: 'Emma' });
  assert.equal(json.headers.get('vary'), 'Accept');
  assert.equal(json.headers.get('content-location'), '/api/books.json?title=Emma');
  const etag = json.headers.get('etag');
  assert.match(etag ?? '', /^"/);

  const again = await service.fetch(new Request('https://localhost/api/books?title=Emma', { headers: { accept: 'application/json', 'if-none-match': etag as string } }));
  assert.equal(again.status, 304);
  assert.equal(again.body, null);

  const lower = await service.fetch('/api/books.json', { method: 'get' });
  assert.equal(lower.status, 200, 'the common methods are uppercased, as the Fetch standard does');
  const head = await service.fetch('/api/books.json', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body, null, 'HEAD has no body');
  assert.equal(head.headers.get('content-length'), String(Buffer.byteLength('{"title":null}')));
});

test('A-8 problems, 404 and 405 come out as on a socket; OPTIONS lists the methods', async (t) => {
  const service = memoryService(t);
  const missing = await service.fetch('/api/nothing.xml');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get('content-type'), 'application/problem+xml; charset=utf-8');
  assert.match(await missing.text(), /<type>\/problems\/not-found<\/type>/);
  const post = await service.fetch('/api/something', { method: 'POST', body: '{}' });
  assert.equal(post.status, 405);
  assert.match(post.headers.get('allow') ?? '', /GET/);
  const options = await service.fetch('/api/something', { method: 'OPTIONS' });
  assert.equal(options.status, 204);
  assert.equal(options.body, null);
});

test('A-8 the same answer as over a socket (status, headers that matter, body)', async (t) => {
  const started = await startService(t, { store: ':memory:' });
  for (const [path, accept] of [['/api/something.json?param1=a', undefined], ['/api/something', 'application/xml'], ['/api/nope', 'text/html'], ['/healthz', undefined]] as const) {
    const headers: Record<string, string> = accept === undefined ? {} : { accept };
    const viaSocket = await started.fetch(path, { headers });
    const inProcess = await started.service.fetch(path, { headers });
    assert.equal(inProcess.status, viaSocket.status, path);
    assert.equal(await inProcess.text(), viaSocket.body, path);
    for (const name of ['content-type', 'etag', 'vary', 'link', 'content-location', 'cache-control', 'strict-transport-security', 'content-security-policy']) {
      assert.equal(inProcess.headers.get(name) ?? undefined, viaSocket.headers[name], `${path} ${name}`);
    }
  }
});

test('A-8 request bodies stream in (a ReadableStream), authentication and Location work, answers are logged', async (t) => {
  const logs: string[] = [];
  const service = memoryService(t, { log: (line) => logs.push(line) });
  await service.users.add('root', ADMIN_PASSWORD, { role: 'admin' });
  const chunks = ['{"name": "bob", ', '"password": "bobs-long-passphrase", ', '"role": "user"}'];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(new TextEncoder().encode(next));
    },
  });
  const created = await service.fetch(
    new Request('https://localhost/user/', {
      method: 'POST',
      headers: { authorization: basic('root', ADMIN_PASSWORD), 'content-type': 'application/json', accept: 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit),
  );
  assert.equal(created.status, 201, await created.clone().text());
  assert.equal(created.headers.get('location'), '/user/bob');
  assert.equal(((await created.json()) as { name: string }).name, 'bob');
  assert.equal(await service.users.verify('bob', 'bobs-long-passphrase'), true);
  const wrong = await service.fetch('/user/bob', { headers: { authorization: basic('root', 'not-the-password-at-all') } });
  assert.equal(wrong.status, 401);
  assert.match(wrong.headers.get('www-authenticate') ?? '', /^Basic /);
  const line = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'request' && l['method'] === 'POST');
  assert.deepEqual({ path: line?.['path'], status: line?.['status'], address: line?.['address'] }, { path: '/user/', status: 201, address: '127.0.0.1' });
});

test('A-8 a body past the limit is 413 without reading it all', async (t) => {
  const service = memoryService(t, { maxBodyBytes: 1024 });
  await service.users.add('root', ADMIN_PASSWORD, { role: 'admin' });
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(new Uint8Array(512).fill(0x20));
    },
  });
  const res = await service.fetch('/user/', {
    method: 'POST',
    headers: { authorization: basic('root', ADMIN_PASSWORD), 'content-type': 'application/json' },
    body: endless,
    duplex: 'half',
  } as RequestInit);
  assert.equal(res.status, 413);
  assert.equal(res.headers.get('connection'), null, 'no connection-specific field in an in-process Response');
  assert.ok(pulled < 100, `read ${pulled} chunks of an endless body`);
});

test('A-8 an http: URL is plain HTTP (T-3): a password operation is refused before anything else', async (t) => {
  const service = memoryService(t);
  await service.users.add('alice', 'quiet-river-stone-lamp');
  const plain = await service.fetch('http://localhost/user/alice/password', {
    method: 'PUT',
    headers: { authorization: basic('alice', 'quiet-river-stone-lamp'), 'content-type': 'application/json' },
    body: JSON.stringify({ password: 'another-long-passphrase' }),
  });
  assert.equal(plain.status, 403);
  assert.equal(((await plain.json()) as { type: string }).type, '/problems/https-required');
  assert.equal(plain.headers.get('strict-transport-security'), null, 'no HSTS on plain HTTP');
  const secure = await service.fetch('https://localhost/user/alice/password', {
    method: 'PUT',
    headers: { authorization: basic('alice', 'quiet-river-stone-lamp'), 'content-type': 'text/plain' },
    body: 'another-long-passphrase',
  });
  assert.equal(secure.status, 204);
  assert.equal(await service.users.verify('alice', 'another-long-passphrase'), true);
});

test('A-8 init.address is the client address: the address budget counts it apart from others', async (t) => {
  const service = memoryService(t);
  await service.users.add('carol', 'green-field-paper-moon');
  const right = basic('carol', 'green-field-paper-moon');
  let refused: Response | undefined;
  // Password spraying from one address: one failure per (made-up) account, until the address is refused.
  for (let i = 0; i < 60 && refused === undefined; i++) {
    const res = await service.fetch(`/user/nobody${i}`, { headers: { authorization: basic(`nobody${i}`, 'wrong-password-wrong') }, address: '192.0.2.7' });
    if (res.status === 429) refused = res;
  }
  assert.ok(refused !== undefined, 'repeated failures from one address are throttled');
  assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
  assert.equal((await service.fetch('/user/carol', { headers: { authorization: right }, address: '192.0.2.7' })).status, 429);
  assert.equal((await service.fetch('/user/carol', { headers: { authorization: right }, address: '198.51.100.9' })).status, 200, 'another address is not refused');
  assert.equal((await service.fetch('/user/carol', { headers: { authorization: right } })).status, 200, 'nor the default 127.0.0.1');
});

test('A-8 repeated response fields stay separate (Set-Cookie), joined ones stay joined (Vary)', async (t) => {
  const service = memoryService(t, {
    resources: {
      cookies: () => {
        throw new HttpError(problem(401, 'unauthorized'), { 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'], vary: 'Cookie' });
      },
    },
  });
  const res = await service.fetch('/api/cookies', { headers: { accept: 'application/json' } });
  assert.equal(res.status, 401);
  assert.deepEqual(res.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Path=/']);
  assert.deepEqual(res.headers.get('vary')?.split(/,\s*/).sort(), ['Accept', 'Cookie']);
});

test('A-8 repeated request fields reach the service joined, as node:http joins them', async (t) => {
  const service = memoryService(t, { resources: { echo: () => 'ok' } });
  const headers = new Headers();
  headers.append('accept', 'text/html');
  headers.append('accept', 'application/xml');
  const res = await service.fetch('/api/echo', { headers });
  assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
});

test('A-8 wrong arguments reject with ERR_INVALID_ARGUMENT naming them, never a TypeError', async (t) => {
  const service = memoryService(t);
  const bad: Array<[unknown, unknown, RegExp]> = [
    [123, undefined, /^input /],
    [undefined, undefined, /^input /],
    [{ url: '/api/something' }, undefined, /^input /],
    ['ftp://localhost/api/something', undefined, /^input /],
    ['http://[not a url', undefined, /^input /],
    ['/api/something', 'init', /^init /],
    ['/api/something', { method: 'GET', body: 'x' }, /^init /],
    ['/api/something', { method: 'no spaces allowed' }, /^init /],
    ['/api/something', { address: 42 }, /^init\.address /],
    ['/api/something', { signal: { aborted: true } }, /^init\.signal /],
    ['/api/something', { method: 'TRACE' }, /^init /],
    ['/api/something', { headers: { 'bad name': 'x' } }, /^init /],
    ['/api/something', { headers: { accept: 'a\r\nb' } }, /^init /],
    [new URL('https://localhost/api/something'), { method: 'CONNECT' }, /^init /],
    [await (async () => { const used = new Request('https://localhost/api/something', { method: 'POST', body: 'x' }); await used.text(); return used; })(), undefined, /^input /],
  ];
  for (const [input, init, message] of bad) {
    await assert.rejects(service.fetch(input as never, init as never), (error: unknown) => isCode('ERR_INVALID_ARGUMENT')(error) && message.test((error as Error).message), String(input));
  }
});

test('A-8 init.signal and a Request\'s signal abort the call as the global fetch\'s do: rejected with the reason, before or while the service works', async (t) => {
  const loads: string[] = [];
  let release: () => void = () => {};
  const service = memoryService(t, {
    resources: {
      slow: (query) => {
        loads.push(query.get('n') ?? '');
        return new Promise((resolve) => (release = () => resolve({ n: query.get('n') })));
      },
    },
  });
  // Already aborted: nothing reaches the service.
  await assert.rejects(service.fetch('/api/slow?n=1', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  await assert.rejects(service.fetch(new Request('https://localhost/api/slow?n=2', { signal: AbortSignal.abort(new Error('gave up')) })), { message: 'gave up' });
  // init.signal null: the Request's own signal is not followed (Fetch's rule), so the call is made.
  const unfollowed = service.fetch(new Request('https://localhost/api/slow?n=0', { signal: AbortSignal.abort() }), { signal: null });
  await new Promise((resolve) => setImmediate(resolve));
  release();
  assert.equal((await unfollowed).status, 200);
  loads.length = 0;
  assert.deepEqual(loads, []);
  // Aborted while the loader works: rejected at once; the answer that comes later is dropped.
  const controller = new AbortController();
  const call = service.fetch('/api/slow?n=3', { signal: controller.signal });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(loads, ['3']);
  controller.abort();
  await assert.rejects(call, { name: 'AbortError' });
  release();
  // A body still streaming in is cut, and the call does not wait for it.
  const upload = new AbortController();
  const never = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new TextEncoder().encode('{"name":')) });
  const posting = service.fetch('/user/ann/resetpassword', { method: 'POST', headers: { 'content-type': 'application/json' }, body: never, duplex: 'half', signal: upload.signal } as RequestInit);
  setTimeout(() => upload.abort(new Error('stopped uploading')), 50);
  await assert.rejects(posting, { message: 'stopped uploading' });
  // A body given whole, aborted while the password is checked (a hash on another thread): rejected, nothing thrown elsewhere.
  await service.users.add('ann', 'ann-initial-passphrase-1');
  const changing = new AbortController();
  const change = service.fetch('/user/ann/password', { method: 'PUT', headers: { authorization: basic('ann', 'ann-initial-passphrase-1'), 'content-type': 'text/plain' }, body: 'ann-second-passphrase-2', signal: changing.signal });
  changing.abort();
  await assert.rejects(change, { name: 'AbortError' });
  await new Promise((resolve) => setTimeout(resolve, 50));
  // A signal never aborted: the answer, and no listener left on the signal, whatever the body.
  const kept = new AbortController();
  const answered = service.fetch('/api/slow?n=4', { signal: kept.signal });
  await new Promise((resolve) => setImmediate(resolve));
  release();
  const ok = await answered;
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { n: '4' });
  const streamed = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new TextEncoder().encode('{}')), c.close()) });
  for (const init of [
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamed, duplex: 'half' },
    { method: 'POST', body: new URLSearchParams({ a: 'b' }) },
  ]) {
    const r = await service.fetch('/user/ann/resetpassword', { ...init, signal: kept.signal } as RequestInit);
    await r.arrayBuffer();
  }
  assert.equal(getEventListeners(kept.signal, 'abort').length, 0);
  // A Request's own signal, copied with an init: the copy does not keep following it either.
  const request = new Request('https://localhost/api/something');
  await (await service.fetch(request, { headers: { accept: 'application/xml' } })).text();
  assert.equal(getEventListeners(request.signal, 'abort').length, 0);
});

test('A-8 mounted in Hono: the service answers under its prefix, Hono\'s own routes still answer', async (t) => {
  const service = memoryService(t, { basePath: '/svc' });
  const app = new Hono();
  app.get('/hello', (c) => c.text('hello from hono'));
  // The request as it came (replaceRequest: false), so the service sees /svc and writes it into its links.
  app.all('/svc/*', mount(service.fetch, { replaceRequest: false }));
  app.get('/after', (c) => c.text('after'));

  const res = await app.request('/svc/api/something?param1=x', { headers: { accept: 'application/json' } });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { param1: 'x' });
  assert.equal(res.headers.get('content-location'), '/svc/api/something.json?param1=x');
  assert.equal((await app.request('/hello')).status, 200);
  assert.equal(await (await app.request('/after')).text(), 'after');
  const missing = await app.request('/svc/api/nothing.json');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get('content-type'), 'application/problem+json; charset=utf-8');

  // The other way Hono takes a fetch handler: a route that hands on its raw Request.
  const other = new Hono();
  other.all('/svc/*', (c) => service.fetch(c.req.raw));
  const xml = await other.fetch(new Request('https://example.test/svc/api/something.xml'));
  assert.equal(xml.status, 200);
  assert.match(xml.headers.get('link') ?? '', /^<\/svc\/api\/something\.json>/);
});

test('A-8 a large body (written in pieces) arrives whole; HEAD of it has none', async (t) => {
  const big = 'é'.repeat(100_000); // 200 kB of UTF-8: several of the pieces a socket gets
  const service = memoryService(t, { resources: { big: () => ({ big }) } });
  const res = await service.fetch('/api/big.json');
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.equal(text, JSON.stringify({ big }));
  assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(text)));
  const head = await service.fetch('/api/big.json', { method: 'HEAD' });
  assert.equal(head.body, null);
});

test('A-8 the Response body behaves as the standard one: read once, clone, stream, blob, bytes', async (t) => {
  const service = memoryService(t, { resources: { books: () => ({ title: 'Emma', note: 'é' }) } });
  const expected = '{"title":"Emma","note":"é"}';
  const read = await service.fetch('/api/books.json');
  assert.equal(read.bodyUsed, false);
  const copy = read.clone();
  assert.equal(await read.text(), expected);
  assert.equal(read.bodyUsed, true);
  await assert.rejects(read.text(), TypeError, 'a body is read once');
  await assert.rejects(read.json(), TypeError);
  assert.throws(() => read.clone(), TypeError, 'a read body cannot be cloned');
  assert.equal(read.body?.locked, true, 'the stream of a read body is taken, as the standard one');
  assert.deepEqual(await copy.json(), { title: 'Emma', note: 'é' }, 'the clone has its own body');

  const streamed = await service.fetch('/api/books.json');
  const chunks: Uint8Array[] = [];
  for await (const chunk of streamed.body as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  assert.equal(Buffer.concat(chunks).toString('utf8'), expected);
  assert.equal(streamed.bodyUsed, true);
  await assert.rejects(streamed.arrayBuffer(), TypeError, 'a streamed body is read as well');

  const blob = await (await service.fetch('/api/books.json')).blob();
  assert.equal(blob.type, 'application/json; charset=utf-8');
  assert.equal(await blob.text(), expected);
  const buffer = await (await service.fetch('/api/books.json')).arrayBuffer();
  assert.equal(Buffer.from(buffer).toString('utf8'), expected);
  assert.equal(buffer.byteLength, Buffer.byteLength(expected), 'the ArrayBuffer is the body alone, not a shared pool');
  const rewrapped = await service.fetch('/api/books.json');
  assert.equal(await new Response(rewrapped.body, rewrapped).text(), expected, 'a framework that rewraps it gets the body');
});

test('A-8 served on by @hono/node-server over a real socket: the body streams out whole', async (t) => {
  const { serve } = await import('@hono/node-server');
  const big = 'x'.repeat(300_000);
  const service = memoryService(t, { resources: { big: () => ({ big }) } });
  const server = serve({ fetch: (request) => service.fetch(request), port: 0, hostname: '127.0.0.1' });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  const { port } = server.address() as import('node:net').AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}/api/big.json`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), JSON.stringify({ big }));
  const small = await fetch(`http://127.0.0.1:${port}/api/something.xml?param1=1`);
  assert.match(await small.text(), /<param1>1<\/param1>/);
});

test('A-8 a body given whole (a string, bytes) is read as fetch would send it: its type, its length', async (t) => {
  const items = new Map<string, unknown>();
  const service = memoryService(t, {
    resources: {
      notes: {
        maxBodyBytes: 8,
        item: {
          get: (id) => items.get(id),
          put(id, body) {
            items.set(id, body);
            return body;
          },
        },
      },
    },
  });
  const json = { 'content-type': 'application/json' };
  const text = await service.fetch('/api/notes/1', { method: 'PUT', body: '{"a":1}' });
  assert.equal(text.status, 415, 'a string without a Content-Type is text/plain;charset=UTF-8, as fetch sends it');
  const created = await service.fetch('/api/notes/1', { method: 'PUT', body: '{"é":1}', headers: json });
  assert.equal(created.status, 201);
  assert.deepEqual(await created.json(), { 'é': 1 });
  const bytes = new TextEncoder().encode('{"b":2}');
  const fromBytes = await service.fetch('/api/notes/1', { method: 'PUT', body: bytes, headers: json });
  assert.equal(fromBytes.status, 200);
  bytes.fill(0x20);
  assert.deepEqual(items.get('1'), { b: 2 }, 'the bytes were taken as they were when sent');
  const view = await service.fetch('/api/notes/2', { method: 'PUT', body: new DataView(new TextEncoder().encode('xx{"c":3}').buffer, 2), headers: json });
  assert.equal(view.status, 201);
  assert.deepEqual(items.get('2'), { c: 3 });
  // 9 bytes in 8 UTF-16 units: the limit counts bytes, declared by the Content-Length fetch would send.
  const tooLarge = await service.fetch('/api/notes/3', { method: 'PUT', body: '{"é":12}', headers: json });
  assert.equal(tooLarge.status, 413);
  assert.equal(items.has('3'), false);
  await assert.rejects(service.fetch('/api/notes/1', { method: 'HEAD', body: 'x' }), isCode('ERR_INVALID_ARGUMENT'));
});

test('A-8 a server that never answers in-process does not load Node\'s fetch (about 3.5 MiB): service.fetch loads it when first called', async () => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const script = `
    const { createService } = await import(${JSON.stringify(new URL('../../lib/index.ts', import.meta.url).href)});
    const loaded = () => process.moduleLoadList.some((m) => m.includes('undici'));
    const service = createService({ store: ':memory:', log: false, host: '127.0.0.1', port: 0, httpPort: 0 });
    await service.listen();
    const before = loaded();
    const response = await service.fetch('/api/something.json');
    console.log(JSON.stringify({ before, after: loaded(), status: response.status, text: await response.text() }));
    await service.close();`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script], { cwd: await import('node:os').then((os) => os.tmpdir()) });
  const seen = JSON.parse(stdout) as { before: boolean; after: boolean; status: number; text: string };
  assert.deepEqual(seen, { before: false, after: true, status: 200, text: '{"param1":null}' });
});

test('C-5 / A-8 close() lets in-process requests in flight finish, as a socket\'s, within its grace', async () => {
  const slow = (ms: number) => () => new Promise((resolve) => setTimeout(() => resolve({ waited: ms }), ms));
  const service = createService({ store: ':memory:', resources: { slow: slow(300) } });
  const pending = service.fetch('/api/slow.json');
  const started = performance.now();
  let answered = false;
  void pending.then(() => (answered = true));
  await service.close();
  assert.equal(answered, true, 'close() resolved before the request in flight was answered');
  assert.equal((await pending).status, 200);
  assert.deepEqual(await (await pending).json(), { waited: 300 });
  assert.ok(performance.now() - started >= 250);

  // Past the grace, close() stops waiting (an in-process request cannot be cut); the request still ends.
  const other = createService({ store: ':memory:', resources: { slower: slow(2_000) } });
  const late = other.fetch('/api/slower.json');
  const t0 = performance.now();
  await other.close(100);
  const took = performance.now() - t0;
  assert.ok(took >= 90 && took < 1_500, `close(100) took ${took} ms`);
  assert.equal((await late).status, 200);
});

test('C-5 / A-8 close() is not held by in-process requests that never settle, nor by ones that keep coming', async () => {
  // A loader waiting on nothing that keeps the process alive: close() still resolves after its grace.
  const hanging = createService({ store: ':memory:', resources: { hang: () => new Promise(() => {}) } });
  void hanging.fetch('/api/hang.json');
  const t0 = performance.now();
  await hanging.close(100);
  assert.ok(performance.now() - t0 < 2_000);

  // A mount that keeps sending: close() waits for what was in flight when it began, not for ever newer requests.
  const busy = createService({ store: ':memory:', resources: { tick: () => new Promise((resolve) => setTimeout(() => resolve(1), 20)) } });
  let sending = true;
  const sender = (async () => {
    while (sending) await Promise.all([busy.fetch('/api/tick.json'), busy.fetch('/api/tick.json')]).catch(() => undefined);
  })();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const t1 = performance.now();
  await busy.close(5_000);
  const took = performance.now() - t1;
  sending = false;
  await sender;
  assert.ok(took < 2_000, `close() took ${took} ms while requests kept coming`);
});

test('A-9 one target asked in turn of a service mounted under /svc and of one that is not: each routes it by its own basePath', async (t) => {
  const mounted = memoryService(t, { basePath: '/svc' });
  const plain = memoryService(t, { resources: { svc: () => ({ plain: true }) } });
  for (let i = 0; i < 2; i++) {
    const inside = await mounted.fetch('/svc/api/something.json?param1=x');
    assert.equal(inside.status, 200);
    assert.deepEqual(await inside.json(), { param1: 'x' });
    const outside = await plain.fetch('/svc/api/something.json?param1=x');
    assert.equal(outside.status, 404, 'no /svc/… route without the basePath');
    await outside.body?.cancel();
    const root = await mounted.fetch('/api/svc.json');
    assert.equal(root.status, 404, 'outside the mount');
    await root.body?.cancel();
    const own = await plain.fetch('/api/svc.json');
    assert.deepEqual(await own.json(), { plain: true });
  }
});

test('N-1 one path asked in turn with other queries (and none): each answer is its own query\'s, its Link and ETag too', async (t) => {
  const service = memoryService(t, { resources: { books: (query) => ({ title: query.get('title') }) } });
  const seen = new Map<string, string | null>();
  for (const query of ['?title=Emma', '?title=Persuasion', '', '?title=Emma', '?title=', '', '?title=Persuasion']) {
    const res = await service.fetch(`/api/books.json${query}`);
    const title = new URLSearchParams(query).get('title');
    assert.deepEqual(await res.json(), { title }, query);
    assert.equal(res.headers.get('link'), `</api/books.xml${query}>; rel="alternate"; type="application/xml"`, query);
    const etag = res.headers.get('etag');
    if (seen.has(query)) assert.equal(etag, seen.get(query), `${query}: the same ETag again`);
    else assert.ok(![...seen.values()].includes(etag), `${query}: an ETag of its own`);
    seen.set(query, etag);
  }
});
