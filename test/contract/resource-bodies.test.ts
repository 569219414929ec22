// End-to-end three ways (HTTP/1.1 and HTTP/2 over real TLS, and service.fetch): CONTRACT A-6, the request bodies of an embedder's
// resource: 415 with Accept-Post / Accept-Patch, 400 with the place of a JSON syntax error,
// 413 that reads no further, 422 `unprocessable` with RFC 6901 pointers (JSON and XML problems,
// E-1), and `parse` throwing → 422 with its message.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { constants } from 'node:http2';
import { openH2Session, type Protocol } from '../helpers/https.js';
import { startService, type Started } from '../helpers/service.js';
import { serve, WAYS, type Served, type Way } from '../helpers/ways.js';
import { parseXml } from '../helpers/xml-parse.js';

const LIMIT = 1_024;

const BOOK_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['title'],
  additionalProperties: false,
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 100 },
    year: { type: 'integer', minimum: 0 },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 } },
    'a/b~c': { type: 'string' },
  },
};

/** A small read-write resource checked by a schema, and one checked by a `parse` of its own. */
function resources(calls: string[]) {
  const books = new Map<string, unknown>([['1', { title: 'Dune', year: 1965 }]]);
  let next = 2;
  const notes = new Map<string, unknown>();
  return {
    books: {
      get: () => [...books.values()],
      post: (body: unknown) => {
        calls.push('books.post');
        const id = String(next++);
        books.set(id, body);
        return { id, value: body };
      },
      item: {
        get: (id: string) => books.get(id),
        put: (id: string, body: unknown) => {
          calls.push('books.put');
          books.set(id, body);
          return body;
        },
        delete: (id: string) => books.delete(id),
      },
      schema: BOOK_SCHEMA,
      maxBodyBytes: LIMIT,
    },
    notes: {
      post: (body: unknown) => {
        calls.push('notes.post');
        notes.set('n', body);
        return { id: 'n', value: body };
      },
      parse(body: unknown) {
        if (typeof body !== 'object' || body === null || typeof (body as { text?: unknown }).text !== 'string') {
          throw new Error('A note is an object with a string member "text".');
        }
        return { text: (body as { text: string }).text.trim() };
      },
    },
  };
}

/** Over a socket: for the tests that speak the wire themselves. */
async function start(t: TestContext, protocol: Protocol): Promise<{ s: Started; calls: string[] }> {
  const calls: string[] = [];
  const s = await startService(t, { resources: resources(calls) }, protocol);
  return { s, calls };
}

/** Any of the three ways. */
async function reach(t: TestContext, way: Way): Promise<{ s: Served; calls: string[] }> {
  const calls: string[] = [];
  const s = await serve(t, { resources: resources(calls) }, way);
  return { s, calls };
}

function send(s: Served, method: string, path: string, body: string | Buffer, headers: Record<string, string> = {}) {
  return s.fetch(path, { method, headers: { 'content-type': 'application/json', ...headers }, body });
}

function problemOf(r: { status: number; headers: Record<string, unknown>; body: string }, status: number, slug: string): Record<string, unknown> {
  assert.equal(r.status, status, r.body);
  assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
  const p = JSON.parse(r.body) as Record<string, unknown>;
  assert.equal(p['type'], `/problems/${slug}`);
  assert.equal(p['status'], status);
  return p;
}

for (const way of WAYS) {
  test(`A-6 a body that passes the schema reaches the method: 201 and 200 (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const created = await send(s, 'POST', '/api/books', JSON.stringify({ title: 'Emma', year: 1815, tags: ['novel'] }));
    assert.equal(created.status, 201, created.body);
    assert.deepEqual(JSON.parse(created.body), { title: 'Emma', year: 1815, tags: ['novel'] });
    const patched = await send(s, 'PATCH', '/api/books/1', '{"year":1966}', { 'content-type': 'application/merge-patch+json' });
    assert.equal(patched.status, 200, patched.body);
    assert.deepEqual(JSON.parse(patched.body), { title: 'Dune', year: 1966 });
    assert.deepEqual(calls, ['books.post', 'books.put']);
  });

  test(`A-6 another media type is 415 naming what is accepted in Accept-Post / Accept-Patch; the method is not called (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=iso-8859-1', 'application/merge-patch+json']) {
      const r = await send(s, 'POST', '/api/books', '{"title":"x"}', { 'content-type': type });
      problemOf(r, 415, 'unsupported-media-type');
      assert.equal(r.headers['accept-post'], 'application/json', type);
    }
    const none = await s.fetch('/api/books', { method: 'POST', body: '{"title":"x"}' });
    problemOf(none, 415, 'unsupported-media-type');
    assert.equal(none.headers['accept-post'], 'application/json');
    // PUT has no Accept-* header of its own (Accept-Post is POST's): the problem names the types.
    const put = await send(s, 'PUT', '/api/books/1', '{"title":"x"}', { 'content-type': 'text/plain' });
    assert.deepEqual(problemOf(put, 415, 'unsupported-media-type')['accepted'], ['application/json']);
    assert.equal(put.headers['accept-post'], undefined);
    // PATCH takes only a merge patch.
    for (const type of ['application/json', 'application/json-patch+json']) {
      const r = await send(s, 'PATCH', '/api/books/1', '{"year":1}', { 'content-type': type });
      problemOf(r, 415, 'unsupported-media-type');
      assert.equal(r.headers['accept-patch'], 'application/merge-patch+json', type);
    }
    problemOf(await send(s, 'PUT', '/api/books/1', '{"title":"x"}', { 'content-type': 'text/plain' }), 415, 'unsupported-media-type');
    assert.deepEqual(calls, []);
  });

  test(`A-6 OPTIONS names the body types before a client sends one: Accept-Post on a collection that takes POST, Accept-Patch on an item that takes PATCH (RFC 5789 §3.1) (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const collection = await s.fetch('/api/books', { method: 'OPTIONS' });
    assert.equal(collection.status, 204);
    assert.equal(collection.headers['accept-post'], 'application/json');
    assert.equal(collection.headers['accept-patch'], undefined);
    const item = await s.fetch('/api/books/1.xml', { method: 'OPTIONS' });
    assert.equal(item.status, 204);
    assert.equal(item.headers['accept-patch'], 'application/merge-patch+json');
    assert.equal(item.headers['accept-post'], undefined);
    // notes takes POST and has no items; /api/something takes no body at all.
    assert.equal((await s.fetch('/api/notes', { method: 'OPTIONS' })).headers['accept-post'], 'application/json');
    const something = await s.fetch('/api/something', { method: 'OPTIONS' });
    assert.equal(something.headers['accept-post'], undefined);
    assert.equal(something.headers['accept-patch'], undefined);
    assert.deepEqual(calls, []);
  });

  test(`A-6 malformed JSON is 400 with the line and column in detail (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const p = problemOf(await send(s, 'POST', '/api/books', '{\n  "title": "Dune",\n  "year": ,\n}'), 400, 'bad-request');
    assert.match(String(p['detail']), /line 3, column 11/);
    assert.deepEqual([p['line'], p['column']], [3, 11]);
    const q = problemOf(await send(s, 'PUT', '/api/books/1', '{"title":"Dune"'), 400, 'bad-request');
    assert.match(String(q['detail']), /line 1, column 16/);
    problemOf(await send(s, 'POST', '/api/books', ''), 400, 'bad-request');
    problemOf(await send(s, 'POST', '/api/books', Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d])), 400, 'bad-request');
    assert.deepEqual(calls, []);
  });

  test(`A-6 a body over maxBodyBytes is 413, declared or streamed (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const body = JSON.stringify({ title: 'x'.repeat(LIMIT) });
    const p = problemOf(await send(s, 'POST', '/api/books', body), 413, 'payload-too-large');
    assert.equal(p['limit'], LIMIT);
    problemOf(await send(s, 'PUT', '/api/books/1', body), 413, 'payload-too-large');
    // Exactly the limit is read (then refused by the schema, which says the body got through).
    const exact = JSON.stringify({ title: 'y'.repeat(LIMIT - 12) });
    assert.equal(Buffer.byteLength(exact), LIMIT);
    assert.equal((await send(s, 'POST', '/api/books', exact)).status, 422);
    assert.deepEqual(calls, []);
  });

  test(`A-6 a refused body is 422 unprocessable with RFC 6901 pointers, in JSON (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const r = await send(s, 'POST', '/api/books', JSON.stringify({ year: 12.5, tags: ['ok', 'too long'], 'a/b~c': 1, extra: true }));
    const p = problemOf(r, 422, 'unprocessable');
    assert.equal(p['title'], 'Unprocessable Content');
    const errors = p['errors'] as Array<{ pointer: string; detail: string }>;
    assert.deepEqual(
      errors.map((e) => e.pointer).sort(),
      ['', '/a~1b~0c', '/extra', '/tags/1', '/year'],
    );
    for (const e of errors) assert.ok(typeof e.detail === 'string' && e.detail.length > 0);
    assert.ok(errors.some((e) => e.pointer === '' && e.detail.includes('title')), 'the object that lacks title');
    // A merge patch whose result breaks the schema is refused the same way, and nothing is stored.
    const patch = await send(s, 'PATCH', '/api/books/1', '{"title":null,"year":-1}', { 'content-type': 'application/merge-patch+json' });
    const q = problemOf(patch, 422, 'unprocessable');
    assert.deepEqual((q['errors'] as Array<{ pointer: string }>).map((e) => e.pointer).sort(), ['', '/year']);
    assert.deepEqual(JSON.parse((await s.fetch('/api/books/1.json')).body), { title: 'Dune', year: 1965 });
    // A __proto__ member is a member like any other: not allowed here, and no prototype was set.
    const proto = problemOf(await send(s, 'POST', '/api/books', '{"title":"x","__proto__":{"admin":true}}'), 422, 'unprocessable');
    assert.deepEqual((proto['errors'] as Array<{ pointer: string }>).map((e) => e.pointer), ['/__proto__']);
    const merged = problemOf(await send(s, 'PATCH', '/api/books/1', '{"__proto__":{"year":"x"}}', { 'content-type': 'application/merge-patch+json' }), 422, 'unprocessable');
    assert.deepEqual((merged['errors'] as Array<{ pointer: string }>).map((e) => e.pointer), ['/__proto__']);
    assert.equal(({} as { admin?: unknown }).admin, undefined);
    assert.deepEqual(calls, []);
  });

  test(`A-6 / E-1 the 422 in XML: one <i> per refusal, each with its pointer and detail (${way})`, async (t) => {
    const { s } = await reach(t, way);
    // The answer's representation is chosen first, so XML is asked for as a representation;
    // the problem then comes as XML, labelled as the Accept accepts best (E-1 amended).
    for (const accept of ['application/xml, application/problem+xml', 'application/xml', 'text/xml']) {
      const r = await send(s, 'POST', '/api/books', JSON.stringify({ title: '', tags: [1] }), { accept });
      assert.equal(r.status, 422, r.body);
      assert.match(String(r.headers['content-type']), /^(application\/(problem\+)?xml|text\/xml); charset=utf-8$/, accept);
      const root = parseXml(r.body);
      assert.equal(root.ns, 'urn:ietf:rfc:7807');
      assert.equal(root.children.find((c) => c.name === 'type')?.text, '/problems/unprocessable');
      const errors = root.children.find((c) => c.name === 'errors');
      assert.ok(errors !== undefined, r.body);
      assert.ok(errors.children.length === 2 && errors.children.every((i) => i.name === 'i'), r.body);
      const entries = errors.children.map((i) => Object.fromEntries(i.children.map((c) => [c.name, c.text])));
      assert.deepEqual(entries.map((e) => e['pointer']).sort(), ['/tags/0', '/title']);
      for (const e of entries) assert.ok((e['detail'] ?? '').length > 0);
    }
  });

  test(`A-6 parse() that throws is 422 with its message as detail; what it returns is what the method gets (${way})`, async (t) => {
    const { s, calls } = await reach(t, way);
    const p = problemOf(await send(s, 'POST', '/api/notes', '{"txt":"hello"}'), 422, 'unprocessable');
    assert.equal(p['detail'], 'A note is an object with a string member "text".');
    assert.deepEqual(calls, []);
    const ok = await send(s, 'POST', '/api/notes', '{"text":"  hello  ","ignored":1}');
    assert.equal(ok.status, 201, ok.body);
    assert.deepEqual(JSON.parse(ok.body), { text: 'hello' });
    assert.deepEqual(calls, ['notes.post']);
  });
}

test('A-6 over HTTP/1.1 a chunked body past the limit is answered 413 at once and the connection closed: the rest is never read (h1)', async (t) => {
  const { s, calls } = await start(t, 'h1');
  const { hostname, port } = new URL(s.url);
  const socket = connect({ host: hostname, port: Number(port), ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
  t.after(() => socket.destroy());
  await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  socket.write('POST /api/books HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
  const chunk = `200\r\n${'['.repeat(0x200)}\r\n`;
  // Twice the limit, and never the last chunk: only a server that stops reading can answer.
  for (let i = 0; i < 4; i++) socket.write(chunk);
  await closed;
  assert.match(received, /^HTTP\/1\.1 413 /);
  assert.match(received, /\r\nconnection: close\r\n/i);
  assert.match(received, /"type":"\/problems\/payload-too-large"/);
  assert.deepEqual(calls, []);
});

test('A-6 over HTTP/1.1 a whole chunked body sent at once is read whole: past the limit 413, within it the value (h1)', async (t) => {
  const { s, calls } = await start(t, 'h1');
  const { hostname, port } = new URL(s.url);
  // One write each: the server has the complete message before the handler reads the body.
  const exchange = async (chunks: readonly string[]): Promise<string> => {
    const socket = connect({ host: hostname, port: Number(port), ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    t.after(() => socket.destroy());
    await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const body = chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join('');
    socket.write(`POST /api/books HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body}0\r\n\r\n`);
    await closed;
    return received;
  };
  const big = await exchange([`{"title":"${'x'.repeat(600)}",`, `"note":"${'y'.repeat(600)}"}`]);
  assert.match(big, /^HTTP\/1\.1 413 /);
  assert.match(big, /"type":"\/problems\/payload-too-large"/);
  assert.deepEqual(calls, []);
  const small = await exchange(['{"title":', '"Emma"}']);
  assert.match(small, /^HTTP\/1\.1 201 /);
  assert.match(small, /"title":"Emma"/);
});

test('A-6 over HTTP/2 a body streamed past the limit is answered 413 and the stream ended; the connection goes on (h2)', async (t) => {
  const { s, calls } = await start(t, 'h2');
  const client = await openH2Session(s.url, { ca: s.ca });
  t.after(() => client.destroy());
  const stream = client.request({ ':method': 'POST', ':path': '/api/books', 'content-type': 'application/json' });
  const outcome = new Promise<{ status: number; body: string; rstCode: number | undefined }>((resolve) => {
    let status = 0;
    let body = '';
    stream.on('response', (h) => (status = Number(h[constants.HTTP2_HEADER_STATUS])));
    stream.setEncoding('utf8').on('data', (c: string) => (body += c));
    stream.on('error', () => {});
    stream.on('close', () => resolve({ status, body, rstCode: stream.rstCode }));
  });
  // Never ended by the client.
  for (let i = 0; i < 4; i++) stream.write('['.repeat(512));
  const big = await outcome;
  assert.equal(big.status, 413);
  assert.equal((JSON.parse(big.body) as { type: string }).type, '/problems/payload-too-large');
  assert.equal(big.rstCode, constants.NGHTTP2_NO_ERROR, 'the rest is refused with RST_STREAM(NO_ERROR) (RFC 9113 §8.1)');
  const next = client.request({ ':path': '/api/books/1.json' });
  next.end();
  const status = await new Promise<number>((resolve) => next.on('response', (h) => resolve(Number(h[constants.HTTP2_HEADER_STATUS]))));
  next.resume();
  assert.equal(status, 200);
  assert.deepEqual(calls, []);
});

test('A-6 a PATCH to an item whose store adds members (id, updatedAt) passes additionalProperties: false when the schema declares them readOnly; without them it is the 422 naming them', async (t) => {
  const notes = new Map<string, Record<string, unknown>>([['1', { id: '1', text: 'milk', updatedAt: 1 }]]);
  const definition = (declared: boolean) => ({
    item: {
      get: (id: string) => notes.get(id),
      put: (id: string, body: Record<string, unknown>) => {
        const stored = { ...body, id, updatedAt: Number(notes.get(id)?.['updatedAt'] ?? 0) + 1 };
        notes.set(id, stored);
        return stored;
      },
    },
    schema: {
      type: 'object',
      required: ['text'],
      additionalProperties: false,
      properties: {
        text: { type: 'string' },
        pinned: { type: 'boolean' },
        ...(declared ? { id: { type: 'string', readOnly: true }, updatedAt: { type: 'integer', readOnly: true } } : {}),
      },
    },
  });
  const s = await serve(t, { resources: { notes: definition(true), strict: definition(false) } }, 'fetch');
  const patched = await send(s, 'PATCH', '/api/notes/1', '{"pinned":true}', { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 200, patched.body);
  assert.deepEqual(JSON.parse(patched.body), { id: '1', text: 'milk', pinned: true, updatedAt: 2 });
  const refused = problemOf(await send(s, 'PATCH', '/api/strict/1', '{"pinned":false}', { 'content-type': 'application/merge-patch+json' }), 422, 'unprocessable');
  assert.deepEqual((refused['errors'] as { pointer: string }[]).map((e) => e.pointer).sort(), ['/id', '/updatedAt']);
  const openapi = JSON.parse((await s.fetch('/openapi.json')).body) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> } }>> };
  const body = openapi.paths['/api/notes/{id}']?.['put']?.requestBody?.content['application/json']?.schema;
  assert.deepEqual(body?.properties['id'], { type: 'string', readOnly: true });
});
