// a resource's JSON request body: media type, size, encoding, syntax, each refusal the problem a client can act on.
import { test } from 'node:test';
import { createService } from '../../lib/index.js';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { readBody } from '../../lib/http/body.js';
import { readJsonBody, type JsonBodyOptions, type JsonBodySource } from '../../lib/http/json-body.js';
import { HttpError } from '../../lib/http/problem.js';

const JSON_POST: JsonBodyOptions = { limit: 1024, types: ['application/json'], acceptHeader: 'accept-post' };
const MERGE_PATCH: JsonBodyOptions = { limit: 1024, types: ['application/merge-patch+json'], acceptHeader: 'accept-patch' };

/** A body source as a RequestContext is one: headers, and the body read through lib/http/body.ts. */
function source(headers: IncomingHttpHeaders, body: Readable | string | Uint8Array): JsonBodySource & { reads: number } {
  const stream = body instanceof Readable ? body : Readable.from([typeof body === 'string' ? Buffer.from(body) : Buffer.from(body)]);
  const s = {
    headers,
    reads: 0,
    readBody(limit: number) {
      s.reads++;
      return readBody(stream, headers['content-length'], limit);
    },
  };
  return s;
}

const json = (text: string | Uint8Array, type = 'application/json') => source({ 'content-type': type }, text);

async function refusal(promise: Promise<unknown>): Promise<HttpError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  assert.fail('expected an HttpError');
}

test('A-6 a JSON body is read as its value', async () => {
  assert.deepEqual(await readJsonBody(json('{"title":"Dune","tags":["sf"],"n":1.5,"ok":true,"x":null}'), JSON_POST), {
    title: 'Dune', tags: ['sf'], n: 1.5, ok: true, x: null,
  });
  assert.equal(await readJsonBody(json(' "é😀" '), JSON_POST), 'é😀');
  assert.equal(await readJsonBody(json('42', 'Application/JSON; charset="UTF-8"'), JSON_POST), 42);
  assert.deepEqual(await readJsonBody(json('{"a":null}', 'application/merge-patch+json'), MERGE_PATCH), { a: null });
});

test('A-6 one leading byte order mark is ignored (RFC 8259 §8.1), a second one is not JSON', async () => {
  assert.deepEqual(await readJsonBody(json('\uFEFF{"a":1}'), JSON_POST), { a: 1 });
  const e = await refusal(readJsonBody(json('\uFEFF\uFEFF{}'), JSON_POST));
  assert.equal(e.problem.status, 400);
});

test('A-6 __proto__ in a body is an own member, never a prototype', async () => {
  const value = (await readJsonBody(json('{"__proto__":{"admin":true}}'), JSON_POST)) as Record<string, unknown>;
  assert.ok(Object.hasOwn(value, '__proto__'));
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.equal((value as { admin?: unknown }).admin, undefined);
});

const unsupported: ReadonlyArray<readonly [string, IncomingHttpHeaders, JsonBodyOptions, string, string]> = [
  ['no Content-Type', {}, JSON_POST, 'accept-post', 'application/json'],
  ['text/plain', { 'content-type': 'text/plain' }, JSON_POST, 'accept-post', 'application/json'],
  ['application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, JSON_POST, 'accept-post', 'application/json'],
  ['charset=latin1', { 'content-type': 'application/json; charset=latin1' }, JSON_POST, 'accept-post', 'application/json'],
  ['charset=utf-16', { 'content-type': 'application/json;charset=utf-16' }, JSON_POST, 'accept-post', 'application/json'],
  ['a malformed Content-Type', { 'content-type': 'application/json; ; x' }, JSON_POST, 'accept-post', 'application/json'],
  ['an empty Content-Type', { 'content-type': '' }, JSON_POST, 'accept-post', 'application/json'],
  ['application/json on PATCH', { 'content-type': 'application/json' }, MERGE_PATCH, 'accept-patch', 'application/merge-patch+json'],
  ['application/json-patch+json on PATCH', { 'content-type': 'application/json-patch+json' }, MERGE_PATCH, 'accept-patch', 'application/merge-patch+json'],
  ['merge-patch on POST', { 'content-type': 'application/merge-patch+json' }, JSON_POST, 'accept-post', 'application/json'],
];

for (const [what, headers, options, header, accepted] of unsupported) {
  test(`A-6 ${what} → 415 unsupported-media-type with ${header}: ${accepted}, body not read`, async () => {
    const s = source(headers, '{}');
    const e = await refusal(readJsonBody(s, options));
    assert.equal(e.problem.status, 415);
    assert.equal(e.problem.type, '/problems/unsupported-media-type');
    assert.deepEqual(e.headers, { [header]: accepted });
    assert.deepEqual(e.problem['accepted'], [accepted]);
    assert.equal(s.reads, 0);
    // The detail names the type that was sent, so a client sees what it got wrong.
    const sent = headers['content-type'];
    assert.ok(String(e.problem.detail).includes(sent === undefined ? 'no Content-Type' : `Content-Type ${JSON.stringify(sent)}`), String(e.problem.detail));
  });
}

test('A-6 a fetch() of a string body without a Content-Type is told what fetch sent for it', async () => {
  const service = createService({ store: ':memory:', resources: { notes: { post: (body) => ({ id: 1, value: body }) } } });
  const r = await service.fetch('/api/notes', { method: 'POST', body: '{"a":1}' });
  assert.equal(r.status, 415);
  assert.match(((await r.json()) as { detail: string }).detail, /^The body was sent with Content-Type "text\/plain;charset=UTF-8"; send application\/json \(UTF-8\)\.$/);
  await service.close();
});

test('A-6 a long Content-Type is cut short in the 415 detail', async () => {
  const e = await refusal(readJsonBody(source({ 'content-type': `text/${'x'.repeat(500)}` }, '{}'), JSON_POST));
  assert.ok(String(e.problem.detail).length < 200);
});

test('A-6 Accept-Post names every accepted type', async () => {
  const e = await refusal(readJsonBody(source({}, '{}'), { ...JSON_POST, types: ['application/json', 'application/ld+json'] }));
  assert.deepEqual(e.headers, { 'accept-post': 'application/json, application/ld+json' });
});

test('A-6 a body over the limit is 413 and the rest is not read', async () => {
  let produced = 0;
  // An endless body: the test ends only if the reader stops.
  const endless = new Readable({
    read() {
      produced++;
      this.push(Buffer.alloc(512, 0x20));
    },
  });
  const e = await refusal(readJsonBody(source({ 'content-type': 'application/json' }, endless), JSON_POST));
  assert.equal(e.problem.status, 413);
  assert.equal(e.problem.type, '/problems/payload-too-large');
  const soon = produced;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(produced <= soon + 1, `reading stopped (${soon} then ${produced} chunks)`);
  endless.destroy();
});

test('A-6 a declared Content-Length over the limit is 413 before a byte is read', async () => {
  const e = await refusal(readJsonBody(source({ 'content-type': 'application/json', 'content-length': '1025' }, '{}'), JSON_POST));
  assert.equal(e.problem.status, 413);
});

test('A-6 exactly the limit is read', async () => {
  const text = `"${'a'.repeat(1022)}"`;
  assert.equal(((await readJsonBody(json(text), JSON_POST)) as string).length, 1022);
});

const bad: ReadonlyArray<readonly [string, string | Uint8Array, RegExp, { line: number; column: number } | undefined]> = [
  ['an empty body', '', /empty/, undefined],
  ['invalid UTF-8 (a lone continuation byte)', Uint8Array.of(0x22, 0x80, 0x22), /UTF-8/, undefined],
  ['invalid UTF-8 (an overlong form)', Uint8Array.of(0x22, 0xc0, 0xaf, 0x22), /UTF-8/, undefined],
  ['invalid UTF-8 (an encoded surrogate)', Uint8Array.of(0x22, 0xed, 0xa0, 0x80, 0x22), /UTF-8/, undefined],
  ['invalid UTF-8 (truncated)', Uint8Array.of(0x22, 0xe2, 0x82), /UTF-8/, undefined],
  ['whitespace only', '  \n ', /line 2, column 2, expected a value, found the end of the body/, { line: 2, column: 2 }],
  ['a missing value', '{"a":}', /line 1, column 6, expected a value, found '\}'/, { line: 1, column: 6 }],
  ['a trailing comma on line 3', '{\n  "a": 1,\n}', /line 3, column 1, expected a member name \(a string\), found '\}'/, { line: 3, column: 1 }],
  ['CRLF line ends', '[\r\n1,\r\n\r\n2 3]', /line 4, column 3, expected ',' or '\]', found '3'/, { line: 4, column: 3 }],
  ['CR line ends', '[\r1,\r\r2 3]', /line 4, column 3/, { line: 4, column: 3 }],
  ['columns count code points', '["😀😀", x]', /line 1, column 8, expected a value, found 'x'/, { line: 1, column: 8 }],
  ['a control character in a string', '"a\tb"', /line 1, column 3, expected a control character to be escaped .*found U\+0009/, { line: 1, column: 3 }],
  ['a non-ASCII character where a value goes', '[é]', /line 1, column 2, expected a value, found U\+00E9/, { line: 1, column: 2 }],
  ['an unclosed object', '{"a":1', /line 1, column 7, expected ',' or '\}', found the end of the body/, { line: 1, column: 7 }],
  ['text after the value', '{} {}', /line 1, column 4, expected the end of the body, found '\{'/, { line: 1, column: 4 }],
  ['single quotes', "{'a':1}", /line 1, column 2/, { line: 1, column: 2 }],
  ['NaN', '[NaN]', /line 1, column 2/, { line: 1, column: 2 }],
  ['nesting past the limit', `${'['.repeat(257)}${']'.repeat(257)}`, /deeper than 256 levels \(at line 1, column 257\)/, { line: 1, column: 257 }],
];

for (const [what, body, detail, position] of bad) {
  test(`A-6 ${what} → 400 bad-request${position === undefined ? '' : ' with its position'}`, async () => {
    const e = await refusal(readJsonBody(json(body), JSON_POST));
    assert.equal(e.problem.status, 400);
    assert.equal(e.problem.type, '/problems/bad-request');
    assert.match(String(e.problem.detail), detail);
    if (position !== undefined) assert.deepEqual([e.problem['line'], e.problem['column']], [position.line, position.column]);
  });
}

test('A-6 nesting up to the limit is accepted, and maxDepth is an option', async () => {
  const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  assert.ok(Array.isArray(await readJsonBody(json(deep(256)), { ...JSON_POST, limit: 10_000 })));
  assert.ok(Array.isArray(await readJsonBody(json(deep(3)), { ...JSON_POST, maxDepth: 3 })));
  const e = await refusal(readJsonBody(json('{"a":{"b":{"c":1}}}'), { ...JSON_POST, maxDepth: 2 }));
  assert.equal(e.problem.status, 400);
  // Objects and arrays count alike: 257 levels of both, alternating, are too deep.
  const mixed = `${'{"a":['.repeat(128)}{}${']}'.repeat(128)}`;
  assert.equal((await refusal(readJsonBody(json(mixed), { ...JSON_POST, limit: 10_000 }))).problem.status, 400);
  assert.ok(await readJsonBody(json(`${'{"a":['.repeat(127)}{}${']}'.repeat(127)}`), { ...JSON_POST, limit: 10_000 }));
  // Many containers side by side, or brackets inside strings, are not depth.
  assert.equal((await readJsonBody(json(`[${Array(1000).fill('[{}]').join(',')}]`), { ...JSON_POST, limit: 10_000 }) as unknown[]).length, 1000);
  assert.deepEqual(await readJsonBody(json(JSON.stringify({ s: '[{'.repeat(300) })), { ...JSON_POST, limit: 10_000 }), { s: '[{'.repeat(300) });
  // A body nested far deeper than anything can walk is refused, not a stack overflow.
  const huge = await refusal(readJsonBody(json(deep(100_000)), { ...JSON_POST, limit: 1 << 20 }));
  assert.equal(huge.problem.status, 400);
});

test('A-6 a client that aborts mid-body is 400', async () => {
  const aborted = new Readable({ read() {} });
  aborted.push('{"a":');
  const s = source({ 'content-type': 'application/json' }, aborted);
  const pending = refusal(readJsonBody(s, JSON_POST));
  setImmediate(() => aborted.destroy());
  assert.equal((await pending).problem.status, 400);
});

test('A-6 / L-2 any bytes give a value or a 400, never another error', async () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.json({ maxDepth: 4 }).map((text) => Buffer.from(text)),
    fc.tuple(fc.json({ maxDepth: 4 }), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([text, at, byte]) => {
      const b = Buffer.from(text);
      if (b.length > 0) b[at % b.length] = byte;
      return b;
    }),
  );
  await fc.assert(
    fc.asyncProperty(bytes, async (body) => {
      try {
        await readJsonBody(json(body), JSON_POST);
      } catch (error) {
        assert.ok(error instanceof HttpError && error.problem.status === 400, String(error));
        assert.equal(typeof error.problem.detail, 'string');
      }
    }),
    { numRuns: 1000 },
  );
});

test('RFC 8259 §6: a number past a double\'s range is 400 with its JSON pointer, not stored as Infinity and served as null', async () => {
  const cases: Array<[string, string]> = [
    ['{"x":1e400}', '/x'],
    ['{"a":[1,{"b/c~":-2E+308}]}', '/a/1/b~1c~0'],
    ['1e999', ''],
    [`{"big":1${'0'.repeat(320)}}`, '/big'],
    [`{"long":1${'0'.repeat(300)}e10}`, '/long'],
  ];
  for (const [body, pointer] of cases) {
    const e = await refusal(readJsonBody(json(body), JSON_POST));
    assert.equal(e.problem.status, 400, body.slice(0, 40));
    assert.equal(e.problem['pointer'], pointer);
    assert.match(String(e.problem.detail), /too large for a double/);
  }
  // In range, an exponent in a string, and an underflow (a number that rounds to 0) are values as JSON.parse gives them.
  assert.deepEqual(await readJsonBody(json('{"x":1.7976931348623157e308,"y":"e123","z":1e-400,"w":-1e308}'), JSON_POST), { x: 1.7976931348623157e308, y: 'e123', z: 0, w: -1e308 });
});
