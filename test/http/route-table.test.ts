import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestContext } from '../../lib/http/context.js';
import type { Handler } from '../../lib/http/dispatch.js';
import { routeLabels, routerTable, type RouteDecl } from '../../lib/http/route-table.js';

const doc = { id: 'x', summary: 'x', tags: [], responses: {} };
const ok: Handler = () => ({ status: 204 });

test('A-12 route table: a guard runs before every handler of its route; labels are the router\'s', async () => {
  const seen: string[] = [];
  const routes: RouteDecl[] = [
    { pattern: '/a/:name', guard: (ctx) => void seen.push(`guard ${ctx.method}`), quiet: true, methods: { GET: { handler: ok, doc }, PUT: { handler: ok, doc } } },
    { pattern: '/:resource(b)', negotiated: true, methods: { GET: { handler: ok, doc } } },
  ];
  const table = routerTable(routes);
  assert.deepEqual(Object.keys(table), ['/a/:name', '/:resource(b)']);
  await table['/a/:name']?.['PUT']?.({ method: 'PUT' } as RequestContext, {});
  assert.deepEqual(seen, ['guard PUT']);
  assert.deepEqual([...routeLabels(routes, (r) => r.quiet === true)], ['/a/{name}']);
  assert.deepEqual([...routeLabels(routes, (r) => r.negotiated === true)], ['/b']);
  assert.throws(() => routerTable([...routes, routes[0] as RouteDecl]), /declared twice/);
});
