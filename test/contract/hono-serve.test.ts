// A-8 served by @hono/node-server as a user starts it: serve() first, the first service.fetch
// after it. serve() puts Hono's own Response and Request classes in the globals' place by default,
// so this file has its own process and calls service.fetch only once serve() has run (another
// file's earlier calls would hide it). And the ways Hono hands a fetch handler on: directly
// (`serve({ fetch: service.fetch })`), `app.mount`, a route with `c.req.raw`: each passes its
// `env` as the second argument, which is not an init.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createService } from '../../lib/index.js';

function serveOn(t: import('node:test').TestContext, fetch: Parameters<typeof serve>[0]['fetch']): Promise<string> {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return new Promise((resolve) => {
    const ready = (): void => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    if (server.listening) ready();
    else server.once('listening', ready);
  });
}

test('A-8 @hono/node-server: bodies arrive whatever Response class is global, by each way Hono takes a fetch handler', async (t) => {
  const lines: string[] = [];
  const service = createService({
    store: ':memory:',
    scrypt: { ln: 10 },
    log: (line) => lines.push(line),
    resources: { books: { get: () => [{ title: 'Middlemarch' }] } },
  });
  t.after(() => service.close());

  // Directly: serve() calls service.fetch(request, { incoming, outgoing }).
  const direct = await serveOn(t, service.fetch);
  const abort = AbortSignal.timeout(5_000);
  const res = await fetch(`${direct}/api/books.json`, { signal: abort });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), '[{"title":"Middlemarch"}]');
  const xml = await fetch(`${direct}/api/books`, { headers: { accept: 'application/xml' }, signal: abort });
  assert.match(await xml.text(), /<title>Middlemarch<\/title>/);
  assert.equal(xml.headers.get('vary'), 'Accept');
  // The client's address from node-server's `incoming`, not 127.0.0.1 by default: here it is the
  // loopback address the client came from, which the log shows.
  const logged = lines.map((line) => JSON.parse(line) as { path?: string; address?: string }).find((line) => line.path === '/api/books.json');
  assert.ok(logged?.address === '127.0.0.1' || logged?.address === '::ffff:127.0.0.1', JSON.stringify(logged));

  // app.mount (a service under /svc) and a route handing on c.req.raw.
  const under = createService({ store: ':memory:', scrypt: { ln: 10 }, basePath: '/svc', resources: { books: { get: () => [] } } });
  t.after(() => under.close());
  const app = new Hono();
  app.mount('/svc', under.fetch, { replaceRequest: false });
  app.all('/raw/*', (c) => service.fetch(new Request(c.req.url.replace('/raw', ''), c.req.raw)));
  const mounted = await serveOn(t, app.fetch);
  const viaMount = await fetch(`${mounted}/svc/api/books.json`, { signal: abort });
  assert.equal(viaMount.status, 200);
  assert.equal(await viaMount.text(), '[]');
  const missing = await fetch(`${mounted}/svc/api/nothing.json`, { signal: abort });
  assert.equal(missing.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.match(await missing.text(), /"status":404/);
  const viaRaw = await fetch(`${mounted}/raw/api/books.json`, { signal: abort });
  assert.equal(await viaRaw.text(), '[{"title":"Middlemarch"}]');
});

test('A-8 a second argument with an init\'s members is still the init, with a Request', async (t) => {
  const service = createService({ store: ':memory:', scrypt: { ln: 10 }, resources: { notes: { post: (body) => ({ id: '1', value: body }) } } });
  t.after(() => service.close());
  const request = new Request('https://localhost/api/notes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
  const refused = await service.fetch(request, { headers: { 'content-type': 'text/plain' } });
  assert.equal(refused.status, 415, 'the init\'s headers replace the request\'s, as fetch would');
  const context = await service.fetch(new Request('https://localhost/api/notes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' }), { incoming: {}, outgoing: {} }, {});
  assert.equal(context.status, 201, 'a framework\'s context is not an init');
});
