// End-to-end over real TLS, both protocols, and through service.fetch (A-8): CONTRACT A-5 (resources with methods and items), A-6's
// body rules as far as the service applies them, A-7 (conditional writes) and A-12 (the OpenAPI
// document of what is served). Every response is also checked against the service's own document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createService, HttpError, problem, ServiceError, type ResourceDefinition, type ServiceOptions } from '../../lib/index.js';
import type { Response } from '../helpers/https.js';
import { serve, WAYS, type Served, type Way } from '../helpers/ways.js';
import { parseXml } from '../helpers/xml-parse.js';

interface Book {
  readonly title: string;
  readonly year?: number;
}

/** A small in-memory collection, with a count of every call so a test can tell a method did not run. */
function library(options: { putDelayMs?: number } = {}) {
  const items = new Map<string, Book>([['1', { title: 'Dune', year: 1965 }]]);
  const calls: string[] = [];
  let next = 2;
  const contexts: Array<{ name: string; id?: string }> = [];
  const definition: ResourceDefinition = {
    get(query) {
      calls.push('get');
      const year = query.get('year');
      return { books: [...items].filter(([, b]) => year === null || String(b.year) === year).map(([id, b]) => ({ id, ...b })) };
    },
    post(body: Book, ctx) {
      calls.push('post');
      contexts.push({ name: ctx.name });
      const id = String(next++);
      items.set(id, body);
      return { id, value: body };
    },
    item: {
      get(id, _query, ctx) {
        calls.push(`item.get ${id}`);
        contexts.push({ name: ctx.name, id: ctx.id });
        return items.get(id);
      },
      async put(id, body: Book) {
        calls.push(`item.put ${id}`);
        if (options.putDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.putDelayMs));
        items.set(id, body);
        return body;
      },
      delete(id) {
        calls.push(`item.delete ${id}`);
        return items.delete(id);
      },
    },
    parse(body) {
      if (typeof body !== 'object' || body === null || typeof (body as { title?: unknown }).title !== 'string') throw new Error('title must be a string');
      return body;
    },
    xml: { itemRoot: 'book' },
  };
  return { items, calls, contexts, definition };
}

const JSON_BODY = { 'content-type': 'application/json' };

function json(r: Response): unknown {
  return JSON.parse(r.body);
}

function assertProblem(r: Response, status: number, slug: string): Record<string, unknown> {
  assert.equal(r.status, status, r.body);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = JSON.parse(r.body) as Record<string, unknown>;
  assert.equal(p['type'], `/problems/${slug}`);
  return p;
}

async function start(t: Parameters<typeof serve>[0], way: Way, books: ResourceDefinition, options: ServiceOptions = {}): Promise<Served> {
  return serve(t, { resources: { books }, ...options }, way);
}

for (const protocol of WAYS) {
  test(`A-5 POST creates: 201, Location, the negotiated value with its ETag; GET of the Location gives the same (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    const created = await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ title: 'Emma', year: 1815 }) });
    assert.equal(created.status, 201, created.body);
    assert.equal(created.headers['location'], '/api/books/2');
    assert.equal(created.headers['content-location'], '/api/books/2.json');
    assert.equal(created.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(created.headers['vary'], 'Accept');
    assert.equal(created.headers['link'], '</api/books/2.xml>; rel="alternate"; type="application/xml"');
    assert.deepEqual(json(created), { title: 'Emma', year: 1815 });
    assert.deepEqual(lib.contexts[0], { name: 'books' });
    const read = await s.fetch('/api/books/2');
    assert.equal(read.status, 200);
    assert.equal(read.body, created.body);
    assert.equal(read.headers['etag'], created.headers['etag']);
    assert.deepEqual(lib.contexts[1], { name: 'books', id: '2' });
    // XML by Accept: the item's root is xml.itemRoot.
    const xml = await s.fetch('/api/books', { method: 'POST', headers: { ...JSON_BODY, accept: 'application/xml' }, body: JSON.stringify({ title: 'Ulysses' }) });
    assert.equal(xml.status, 201);
    assert.equal(xml.headers['location'], '/api/books/3');
    assert.equal(xml.headers['content-location'], '/api/books/3.xml');
    assert.equal(parseXml(xml.body).name, 'book');
  });

  test(`A-5 a URL no GET answers takes no write either: POST /api/books.html and writes of an empty id are 404, and no method runs (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    for (const path of ['/api/books.html', '/api/books.foo']) {
      const read = await s.fetch(path);
      const p = assertProblem(await s.fetch(path, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ title: 'Emma' }) }), 404, 'not-found');
      assert.equal(read.status, 404);
      assert.equal(p['detail'], 'Available extensions: .json, .xml.');
    }
    // (.xml: the problem comes as XML, N-12.)
    for (const path of ['/api/books/.json', '/api/books/.xml']) {
      const answers = [
        await s.fetch(path),
        await s.fetch(path, { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ title: 'Emma' }) }),
        await s.fetch(path, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{}' }),
        await s.fetch(path, { method: 'DELETE' }),
      ];
      assert.deepEqual(answers.map((r) => r.status), [404, 404, 404, 404], path);
      if (path.endsWith('.json')) for (const r of answers) assertProblem(r, 404, 'not-found');
    }
    assert.deepEqual(lib.calls, [], 'no method of the definition ran');
    assert.deepEqual([...lib.items.keys()], ['1']);
  });

  test(`A-5 item GET: extensions, Accept, Vary, Content-Location, Link, ETag/304, HEAD; undefined is 404 in the chosen format (${protocol})`, async (t) => {
    const s = await start(t, protocol, library().definition);
    const byExt = await s.fetch('/api/books/1.xml');
    assert.equal(byExt.status, 200);
    assert.equal(byExt.headers['content-type'], 'application/xml; charset=utf-8');
    assert.equal(byExt.headers['vary'], undefined, 'N-5: an extension does not vary');
    assert.equal(byExt.headers['content-location'], undefined);
    assert.equal(byExt.headers['link'], '</api/books/1.json>; rel="alternate"; type="application/json"');
    const root = parseXml(byExt.body);
    assert.equal(root.name, 'book');
    const negotiated = await s.fetch('/api/books/1', { headers: { accept: 'text/xml' } });
    assert.equal(negotiated.headers['content-type'], 'text/xml; charset=utf-8');
    assert.equal(negotiated.headers['vary'], 'Accept');
    assert.equal(negotiated.headers['content-location'], '/api/books/1.xml');
    const plain = await s.fetch('/api/books/1?return_type=json');
    assert.deepEqual(json(plain), { title: 'Dune', year: 1965 });
    const etag = plain.headers['etag'] as string;
    const cached = await s.fetch('/api/books/1?return_type=json', { headers: { 'if-none-match': etag } });
    assert.equal(cached.status, 304);
    assert.equal(cached.body, '');
    const head = await s.fetch('/api/books/1.json', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['etag'], etag);
    assertProblem(await s.fetch('/api/books/99'), 404, 'not-found');
    const xml404 = await s.fetch('/api/books/99.xml');
    assert.equal(xml404.status, 404);
    assert.match(String(xml404.headers['content-type']), /^application\/problem\+xml/);
    const byReturnType = await s.fetch('/api/books/99?return_type=xml');
    assert.match(String(byReturnType.headers['content-type']), /^application\/problem\+xml/, 'E-1: return_type chose XML for the problem too');
    // N-1 / U-2: only a literal .json or .xml ending is an extension: `1.yaml` is an id, and absent.
    assertProblem(await s.fetch('/api/books/1.yaml'), 404, 'not-found');
    // The collection is negotiated too, with the query handed to get.
    const list = await s.fetch('/api/books.json?year=1965');
    assert.deepEqual(json(list), { books: [{ id: '1', title: 'Dune', year: 1965 }] });
    assertProblem(await s.fetch('/api/books/1', { headers: { accept: 'image/png' } }), 406, 'not-acceptable');
  });

  test(`A-5 PUT replaces (200) or creates (201 + Location); DELETE 204, then 404 (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    const replaced = await s.fetch('/api/books/1', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ title: 'Dune Messiah', year: 1969 }) });
    assert.equal(replaced.status, 200, replaced.body);
    assert.equal(replaced.headers['location'], undefined);
    assert.deepEqual(json(replaced), { title: 'Dune Messiah', year: 1969 });
    assert.equal((await s.fetch('/api/books/1')).headers['etag'], replaced.headers['etag'], 'the ETag a PUT answers is the one GET gives');
    const made = await s.fetch('/api/books/a%20b.xml', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ title: 'New' }) });
    assert.equal(made.status, 201, made.body);
    assert.equal(made.headers['location'], '/api/books/a%20b');
    assert.equal(parseXml(made.body).name, 'book');
    assert.ok(lib.items.has('a b'));
    const gone = await s.fetch('/api/books/a%20b', { method: 'DELETE' });
    assert.equal(gone.status, 204);
    assert.equal(gone.body, '');
    assertProblem(await s.fetch('/api/books/a%20b', { method: 'DELETE' }), 404, 'not-found');
  });

  test(`A-5 PATCH applies a merge patch to the current value, checks it, hands it to put (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    const patched = await s.fetch('/api/books/1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ year: null, subtitle: 'A novel' }) });
    assert.equal(patched.status, 200, patched.body);
    assert.deepEqual(json(patched), { title: 'Dune', subtitle: 'A novel' });
    assert.deepEqual(lib.items.get('1'), { title: 'Dune', subtitle: 'A novel' });
    // The result is checked like a PUT's body: removing the title is refused, and put is not called.
    const before = lib.calls.length;
    const refused = assertProblem(
      await s.fetch('/api/books/1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ title: null }) }),
      422,
      'unprocessable',
    );
    assert.equal(refused['detail'], 'title must be a string');
    assert.ok(!lib.calls.slice(before).some((c) => c.startsWith('item.put')));
    assertProblem(await s.fetch('/api/books/99', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{}' }), 404, 'not-found');
    const wrongType = await s.fetch('/api/books/1', { method: 'PATCH', headers: JSON_BODY, body: '{}' });
    assertProblem(wrongType, 415, 'unsupported-media-type');
    assert.equal(wrongType.headers['accept-patch'], 'application/merge-patch+json');
  });

  test(`A-5/A-6 bodies: parse's refusal is 422 with its message; 415 with Accept-Post; malformed JSON 400; over maxBodyBytes 413 (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, { ...lib.definition, maxBodyBytes: 64 });
    const p = assertProblem(await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: '{"name":"x"}' }), 422, 'unprocessable');
    assert.equal(p['detail'], 'title must be a string');
    const wrong = await s.fetch('/api/books', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assertProblem(wrong, 415, 'unsupported-media-type');
    assert.equal(wrong.headers['accept-post'], 'application/json');
    assertProblem(await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: '{"title":' }), 400, 'bad-request');
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ title: 'x'.repeat(100) }) }), 413, 'payload-too-large');
    assert.deepEqual(lib.calls.filter((c) => c === 'post' || c.startsWith('item.put')), [], 'no method saw a refused body');
  });

  test(`A-6 schema: a refusal is 422 with errors and RFC 6901 pointers; an async parse's rejection is 422 too (${protocol})`, async (t) => {
    const lib = library();
    const { parse: _parse, ...unparsed } = lib.definition;
    const schema = { type: 'object', required: ['title'], additionalProperties: false, properties: { title: { type: 'string', minLength: 1 }, year: { type: 'integer' } } };
    const s = await serve(
      t,
      {
        resources: {
          books: { ...unparsed, schema },
          asyncs: { post: (body: unknown) => ({ id: 1, value: body }), parse: async (body: unknown) => (body === 1 ? body : Promise.reject(new Error('only 1 will do'))) },
        },
      },
      protocol,
    );
    const p = assertProblem(await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ year: 'old', extra: 1 }) }), 422, 'unprocessable');
    const pointers = (p['errors'] as Array<{ pointer: string; detail: string }>).map((e) => e.pointer).sort();
    assert.deepEqual(pointers, ['', '/extra', '/year']);
    // The same refusal in XML when the request chose XML (E-1: array members as <i>).
    const xml = await s.fetch('/api/books/1.xml', { method: 'PUT', headers: JSON_BODY, body: '{"title":""}' });
    assert.equal(xml.status, 422);
    assert.match(String(xml.headers['content-type']), /^application\/problem\+xml/);
    assert.match(xml.body, /<errors><i><pointer>\/title<\/pointer>/);
    assert.equal((await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: '{"title":"Ok","year":2000}' })).status, 201);
    assert.equal(lib.calls.filter((c) => c === 'post').length, 1, 'post ran only for the valid body');
    assert.equal(assertProblem(await s.fetch('/api/asyncs', { method: 'POST', headers: JSON_BODY, body: '2' }), 422, 'unprocessable')['detail'], 'only 1 will do');
    assert.equal((await s.fetch('/api/asyncs', { method: 'POST', headers: JSON_BODY, body: '1' })).status, 201);
  });

  test(`A-5 OPTIONS and 405 list exactly the methods defined; a resource without get or post has no collection route (${protocol})`, async (t) => {
    const s = await serve(t, { resources: { books: library().definition, notes: { item: { get: (id: string) => ({ id }) } }, plain: () => 1 } }, protocol);
    const collection = await s.fetch('/api/books', { method: 'OPTIONS' });
    assert.equal(collection.status, 204);
    assert.equal(collection.headers['allow'], 'GET, POST, HEAD, OPTIONS');
    const item = await s.fetch('/api/books/1', { method: 'OPTIONS' });
    assert.equal(item.headers['allow'], 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    const readOnly = await s.fetch('/api/notes/7', { method: 'PUT', headers: JSON_BODY, body: '{}' });
    assertProblem(readOnly, 405, 'method-not-allowed');
    assert.equal(readOnly.headers['allow'], 'GET, HEAD, OPTIONS');
    assert.deepEqual(json(await s.fetch('/api/notes/7')), { id: '7' });
    assertProblem(await s.fetch('/api/notes'), 404, 'not-found');
    // A-2 unchanged: a plain function is GET/HEAD at /api/<name> and has no items.
    assert.equal((await s.fetch('/api/plain.xml')).status, 200);
    assertProblem(await s.fetch('/api/plain', { method: 'POST', headers: JSON_BODY, body: '{}' }), 405, 'method-not-allowed');
    assertProblem(await s.fetch('/api/plain/1'), 404, 'not-found');
  });

  test(`A-5 a method's HttpError is the answer, in the request's format; ctx.authenticate() works for items (${protocol})`, async (t) => {
    const s = await serve(
      t,
      {
        resources: {
          vault: {
            item: {
              async get(id, _query, ctx) {
                const caller = await ctx.authenticate();
                return { id, owner: caller.name };
              },
              delete() {
                throw new HttpError(problem(409, 'in-use', { title: 'In Use', detail: 'Still borrowed.' }));
              },
            },
          },
        },
      },
      protocol,
    );
    const anonymous = await s.fetch('/api/vault/1');
    assert.equal(anonymous.status, 401);
    assert.ok(String(anonymous.headers['www-authenticate']).startsWith('Basic'));
    await s.service.users.add('alice', 'correct-horse-battery-9');
    const mine = await s.fetch('/api/vault/1.json', { headers: { authorization: `Basic ${Buffer.from('alice:correct-horse-battery-9').toString('base64')}` } });
    assert.deepEqual(json(mine), { id: '1', owner: 'alice' });
    assert.equal(mine.headers['cache-control'], 'private, no-cache');
    const conflict = await s.fetch('/api/vault/1.xml', { method: 'DELETE' });
    assert.equal(conflict.status, 409);
    assert.match(String(conflict.headers['content-type']), /^application\/problem\+xml/);
  });

  test(`A-7 If-Match against any representation's strong ETag; 412 before the method runs; If-Unmodified-Since ignored (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    const xmlTag = (await s.fetch('/api/books/1.xml')).headers['etag'] as string;
    const stale = '"not-the-current-tag"';
    const before = lib.calls.length;
    const body = JSON.stringify({ title: 'Changed' });
    const patchHeaders = { 'content-type': 'application/merge-patch+json' };
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': stale }, body }), 412, 'precondition-failed');
    assertProblem(await s.fetch('/api/books/1', { method: 'PATCH', headers: { ...patchHeaders, 'if-match': stale }, body: '{}' }), 412, 'precondition-failed');
    assertProblem(await s.fetch('/api/books/1', { method: 'DELETE', headers: { 'if-match': stale } }), 412, 'precondition-failed');
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': `W/${xmlTag}` } , body }), 412, 'precondition-failed');
    assert.ok(!lib.calls.slice(before).some((c) => /^item\.(put|delete)/.test(c)), `no write ran: ${lib.calls.slice(before).join(', ')}`);
    // The XML representation's tag holds for a JSON write (E-4: any representation of the current state).
    const ok = await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': xmlTag, 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' }, body });
    assert.equal(ok.status, 200, ok.body);
    // If-None-Match: * creates only.
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-none-match': '*' }, body }), 412, 'precondition-failed');
    assert.equal((await s.fetch('/api/books/9', { method: 'PUT', headers: { ...JSON_BODY, 'if-none-match': '*' }, body })).status, 201);
    // If-Match on an item that does not exist is false (RFC 9110 §13.1.1).
    assertProblem(await s.fetch('/api/books/10', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': '*' }, body }), 412, 'precondition-failed');
    assert.equal((await s.fetch('/api/books/9', { method: 'DELETE', headers: { 'if-match': '*' } })).status, 204);
    // A PATCH or DELETE of an item that does not exist is 404 whatever its conditions say: without
    // them the answer would not be 2xx (§13.2.1). A PUT creates, so its If-Match counts (above).
    for (const condition of [{ 'if-match': stale }, { 'if-match': '*' }, { 'if-none-match': '*' }]) {
      assertProblem(await s.fetch('/api/books/11', { method: 'DELETE', headers: condition }), 404, 'not-found');
      assertProblem(await s.fetch('/api/books/11', { method: 'PATCH', headers: { ...patchHeaders, ...condition }, body: '{}' }), 404, 'not-found');
    }
  });

  test(`A-7 requireConditional: an unconditional PUT, PATCH or DELETE is 428 and nothing runs (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, { ...lib.definition, requireConditional: true });
    const before = lib.calls.length;
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: JSON_BODY, body: '{"title":"x"}' }), 428, 'precondition-required');
    assertProblem(await s.fetch('/api/books/1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{}' }), 428, 'precondition-required');
    assertProblem(await s.fetch('/api/books/1', { method: 'DELETE' }), 428, 'precondition-required');
    // An If-None-Match other than * on a PUT guards nothing (a tag the item lacks is always true),
    // and If-None-Match: * creates only: neither makes a PATCH or DELETE conditional.
    const junk = { 'if-none-match': '"junk"' };
    assertProblem(await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, ...junk }, body: '{"title":"x"}' }), 428, 'precondition-required');
    assertProblem(await s.fetch('/api/books/1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json', ...junk }, body: '{}' }), 428, 'precondition-required');
    for (const inm of ['"junk"', '*']) assertProblem(await s.fetch('/api/books/1', { method: 'DELETE', headers: { 'if-none-match': inm } }), 428, 'precondition-required');
    assert.deepEqual(lib.calls.slice(before), []);
    const etag = (await s.fetch('/api/books/1')).headers['etag'] as string;
    assert.equal((await s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': etag }, body: '{"title":"x"}' })).status, 200);
    assert.equal((await s.fetch('/api/books/2', { method: 'PUT', headers: { ...JSON_BODY, 'if-none-match': '*' }, body: '{"title":"y"}' })).status, 201);
    // POST creates: it is not a write to an existing item, and needs no condition.
    assert.equal((await s.fetch('/api/books', { method: 'POST', headers: JSON_BODY, body: '{"title":"z"}' })).status, 201);
  });

  test(`A-7 an item without get cannot evaluate If-Match or If-None-Match: a conditional PUT or DELETE is 412 and nothing runs; unconditional ones run (${protocol})`, async (t) => {
    const calls: string[] = [];
    const s = await serve(
      t,
      { resources: { logs: { item: { put: (id: string, body: unknown) => (calls.push(`put ${id}`), body), delete: (id: string) => (calls.push(`delete ${id}`), true) } } } },
      protocol,
    );
    for (const condition of [{ 'if-match': '"anything"' }, { 'if-match': '*' }, { 'if-none-match': '*' }, { 'if-none-match': '"x"' }]) {
      const put = assertProblem(await s.fetch('/api/logs/1', { method: 'PUT', headers: { ...JSON_BODY, ...condition }, body: '{"a":1}' }), 412, 'precondition-failed');
      assert.match(String(put['detail']), /no get/);
      assertProblem(await s.fetch('/api/logs/1', { method: 'DELETE', headers: condition }), 412, 'precondition-failed');
    }
    assert.deepEqual(calls, []);
    assert.equal((await s.fetch('/api/logs/1', { method: 'PUT', headers: JSON_BODY, body: '{"a":1}' })).status, 200);
    assert.equal((await s.fetch('/api/logs/1', { method: 'DELETE' })).status, 204);
    assert.deepEqual(calls, ['put 1', 'delete 1']);
  });

  test(`E-4 a POST's If-Match and If-None-Match are about the collection as its GET represents it: false is 412 with post not called (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    const etag = (await s.fetch('/api/books.xml')).headers['etag'] as string;
    const body = '{"title":"Emma","year":1815}';
    for (const condition of [{ 'if-match': '"stale"' }, { 'if-none-match': '*' }, { 'if-none-match': etag }]) {
      const before = lib.calls.filter((c) => c === 'post').length;
      assertProblem(await s.fetch('/api/books', { method: 'POST', headers: { ...JSON_BODY, ...condition }, body }), 412, 'precondition-failed');
      assert.equal(lib.calls.filter((c) => c === 'post').length, before, JSON.stringify(condition));
    }
    assert.equal((await s.fetch('/api/books', { method: 'POST', headers: { ...JSON_BODY, 'if-match': etag }, body })).status, 201, 'the ETag of any representation of the collection');
    assertProblem(await s.fetch('/api/books', { method: 'POST', headers: { ...JSON_BODY, 'if-match': etag }, body }), 412, 'precondition-failed');
    // Without get the collection cannot be read: a conditional POST is 412, an unconditional one runs.
    const only = await serve(t, { resources: { inbox: { post: (b: unknown) => ({ id: '1', value: b }) } } }, protocol);
    assertProblem(await only.fetch('/api/inbox', { method: 'POST', headers: { ...JSON_BODY, 'if-match': '*' }, body }), 412, 'precondition-failed');
    assert.equal((await only.fetch('/api/inbox', { method: 'POST', headers: JSON_BODY, body })).status, 201);
  });

  test(`A-2 a value JSON cannot hold (undefined, a function, a symbol) is null in both representations (${protocol})`, async (t) => {
    const s = await serve(t, { resources: { fn: () => (() => 1) as never, sym: { get: () => Symbol('x') as never, item: { get: () => (() => 1) as never } } } }, protocol);
    for (const path of ['/api/fn', '/api/sym', '/api/sym/1']) {
      const asJson = await s.fetch(`${path}.json`);
      assert.equal(asJson.status, 200, path);
      assert.equal(asJson.body, 'null');
      const asXml = await s.fetch(`${path}.xml`);
      assert.equal(asXml.status, 200, path);
      assert.match(asXml.body, /^<\?xml version="1\.0" encoding="UTF-8"\?><(fn|sym|item) xmlns:xsi="http:\/\/www\.w3\.org\/2001\/XMLSchema-instance" xsi:nil="true"\/>$/);
    }
  });

  test(`A-5 a JSON body labelled charset=utf8 is UTF-8, as charset=utf-8 (${protocol})`, async (t) => {
    const lib = library();
    const s = await start(t, protocol, lib.definition);
    for (const type of ['application/json;charset=utf8', 'application/json; charset="UTF8"']) {
      assert.equal((await s.fetch('/api/books', { method: 'POST', headers: { 'content-type': type }, body: '{"title":"é"}' })).status, 201, type);
    }
    assertProblem(await s.fetch('/api/books', { method: 'POST', headers: { 'content-type': 'application/json;charset=latin1' }, body: '{"title":"x"}' }), 415, 'unsupported-media-type');
  });

  test(`A-7 two clients update one item with the ETag they read, at once: exactly one wins, the other gets 412 (${protocol})`, async (t) => {
    const lib = library({ putDelayMs: 30 });
    const s = await start(t, protocol, lib.definition);
    for (let round = 0; round < 3; round++) {
      const etag = (await s.fetch('/api/books/1')).headers['etag'] as string;
      const update = (title: string) => s.fetch('/api/books/1', { method: 'PUT', headers: { ...JSON_BODY, 'if-match': etag }, body: JSON.stringify({ title }) });
      const answers = await Promise.all([update(`first ${round}`), update(`second ${round}`)]);
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 412], `round ${round}`);
      const winner = answers.find((r) => r.status === 200) as Response;
      assert.deepEqual(lib.items.get('1'), json(winner), 'the stored value is the winner\'s');
    }
  });

  test(`A-12 /openapi.json describes the embedder's resources, methods, bodies and statuses, validates, and is service.openapi() (${protocol})`, async (t) => {
    const schema = { type: 'object', required: ['title'], properties: { title: { type: 'string' } } };
    const { parse: _parse, ...unparsed } = library().definition;
    const s = await start(t, protocol, { ...unparsed, schema, requireConditional: true });
    const r = await s.fetch('/openapi.json');
    assert.deepEqual(JSON.parse(r.body), s.service.openapi());
    const document = JSON.parse(r.body);
    assert.ok(Object.isFrozen(s.service.openapi()));
    const result = await new Validator().validate(document);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    const methods = (path: string) => Object.keys(document.paths[path] ?? {}).filter((k) => k !== 'parameters').sort();
    assert.deepEqual(methods('/api/books'), ['get', 'head', 'options', 'post']);
    assert.deepEqual(methods('/api/books.xml'), ['get', 'head', 'options', 'post']);
    assert.deepEqual(methods('/api/books/{id}'), ['delete', 'get', 'head', 'options', 'patch', 'put']);
    assert.deepEqual(document.paths['/api/books'].post.requestBody.content['application/json'].schema, schema);
    assert.deepEqual(document.paths['/api/books/{id}'].put.requestBody.content['application/json'].schema, schema);
    assert.ok(document.paths['/api/books/{id}'].put.responses['428'] !== undefined, 'requireConditional documents its 428');
    assert.ok(document.paths['/api/books'].post.responses['201'].headers.Location !== undefined);
    for (const path of ['/user/{name}/resettoken', '/metrics', '/api/{resource}']) assert.equal(document.paths[path], undefined, `${path} is not served`);
    // The same service with a delivery channel serves, and describes, P-12.
    const withChannel = createService({ log: false, onResetToken: () => {}, resources: { books: library().definition } }).openapi() as { paths: Record<string, unknown> };
    assert.ok(withChannel.paths['/user/{name}/resettoken'] !== undefined);
  });
}

test('A-5 createService refuses a wrong definition with ERR_INVALID_OPTION naming the resource', () => {
  const wrong: ReadonlyArray<readonly [unknown, RegExp]> = [
    [42, /resource "bad" must be a function/],
    [null, /resource "bad"/],
    [{}, /resource "bad" defines no method/],
    [{ get: 'x' }, /resource "bad": get must be a function/],
    [{ gte: () => 1 }, /resource "bad": unknown member "gte"/],
    [{ item: [] }, /resource "bad": item must be an object/],
    [{ item: { put: 1 } }, /resource "bad": item.put must be a function/],
    [{ item: { post: () => 1 } }, /resource "bad": unknown member "item.post"/],
    [{ get: () => 1, maxBodyBytes: 0 }, /resource "bad": maxBodyBytes/],
    [{ get: () => 1, maxBodyBytes: 1.5 }, /resource "bad": maxBodyBytes/],
    [{ get: () => 1, requireConditional: 'yes' }, /resource "bad": requireConditional/],
    [{ item: { put: () => 1 }, requireConditional: true }, /resource "bad": requireConditional needs item.get/],
    [{ get: () => 1, xml: { itemRoot: '1abc' } }, /resource "bad": xml.itemRoot/],
    [{ get: () => 1, xml: { root: 'x' } }, /resource "bad": unknown member "xml.root"/],
    [{ get: () => 1, schema: 'object' }, /resource "bad": schema/],
    [{ get: () => 1, parse: {} }, /resource "bad": parse must be a function/],
    // a keyword outside the subset is refused, never ignored, even beside a parse.
    [{ get: () => 1, schema: { type: 'object', patternProperties: {} } }, /resources\.bad\.schema/],
    [{ get: () => 1, parse: (b: unknown) => b, schema: { format: 'email' } }, /resources\.bad\.schema/],
  ];
  for (const [definition, message] of wrong) {
    assert.throws(
      () => createService({ log: false, resources: { bad: definition as never } }),
      (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION' && message.test(e.message),
      JSON.stringify(definition),
    );
  }
});

test('A-8 a representation larger than one write piece (64 KiB, sent in pieces) comes whole through service.fetch', async (t) => {
  const s = await serve(t, { resources: { big: { item: { get: (id: string) => ({ id, text: 'é'.repeat(100_000) }) } } } }, 'fetch');
  const r = await s.fetch('/api/big/1.json');
  assert.equal(r.status, 200);
  assert.equal(Number(r.headers['content-length']), r.raw.length);
  assert.equal((json(r) as { text: string }).text.length, 100_000);
});

test('A-5 with A-9: under a basePath, Location, Content-Location, Link and the OpenAPI server carry the prefix', async (t) => {
  const s = await serve(t, { basePath: '/svc', resources: { books: library().definition } }, 'fetch');
  const created = await s.fetch('/svc/api/books', { method: 'POST', headers: JSON_BODY, body: '{"title":"Emma"}', unchecked: true });
  assert.equal(created.status, 201, created.body);
  assert.equal(created.headers['location'], '/svc/api/books/2');
  assert.equal(created.headers['content-location'], '/svc/api/books/2.json');
  assert.equal(created.headers['link'], '</svc/api/books/2.xml>; rel="alternate"; type="application/xml"');
  const made = await s.fetch('/svc/api/books/x.xml', { method: 'PUT', headers: JSON_BODY, body: '{"title":"X"}', unchecked: true });
  assert.equal(made.headers['location'], '/svc/api/books/x');
  assert.equal(made.headers['link'], '</svc/api/books/x.json>; rel="alternate"; type="application/json"');
  assert.deepEqual((s.service.openapi() as { servers: unknown }).servers, [{ url: '/svc' }]);
  assert.equal((await s.fetch('/api/books/1', { unchecked: true })).status, 404, 'nothing outside the prefix');
});

test('A-5 a put that returns nothing: 204, or 201 with only Location when the item is new', async (t) => {
  const items = new Map<string, unknown>([['a', { n: 1 }]]);
  const s = await serve(t, { resources: { notes: { item: { get: (id: string) => items.get(id), put: (id: string, body: unknown) => void items.set(id, body) } } } }, 'fetch');
  const replaced = await s.fetch('/api/notes/a', { method: 'PUT', headers: JSON_BODY, body: '{"n":2}' });
  assert.equal(replaced.status, 204);
  assert.equal(replaced.body, '');
  const created = await s.fetch('/api/notes/b', { method: 'PUT', headers: JSON_BODY, body: '{"n":3}', unchecked: true });
  assert.equal(created.status, 201);
  assert.equal(created.headers['location'], '/api/notes/b');
  assert.equal(created.body, '');
  assert.deepEqual(items.get('b'), { n: 3 });
});
