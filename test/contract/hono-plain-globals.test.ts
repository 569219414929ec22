// A-8 served by @hono/node-server with overrideGlobalObjects: false: its own request objects,
// which pass instanceof Request but are not undici's, reach service.fetch with Hono's env. Its own
// process: no serve() here ever puts Hono's classes in the globals' place.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createService } from '../../lib/index.js';

test('A-8 @hono/node-server without its global classes (overrideGlobalObjects: false): its own request objects are read as they are', async (t) => {
  const service = createService({ store: ':memory:', scrypt: { ln: 10 }, basePath: '/svc', resources: { books: { get: () => [{ title: 'Emma' }] } } });
  t.after(() => service.close());
  const app = new Hono();
  app.mount('/svc', service.fetch, { replaceRequest: false });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', overrideGlobalObjects: false });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/svc/api/books.json`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), '[{"title":"Emma"}]');
});
