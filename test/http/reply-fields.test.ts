// The response's header fields as writeReply() hands them to node:http: a handler's constant header
// set (headerSet) goes out with the listener's common headers and the request id, each name once,
// the set's own value winning, on every listener (the fields are made once per set and listener).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestContext } from '../../lib/http/context.js';
import type { HttpResponse } from '../../lib/http/messages.js';
import { commonHeaders, headerSet, writeReply, type Reply } from '../../lib/http/reply.js';

function written(reply: Reply, common: ReturnType<typeof commonHeaders>, id = 'abc-1', ifNoneMatch?: string): { status: number; fields: string[] } {
  let status = 0;
  let fields: string[] = [];
  const res = {
    writeHead(s: number, f: string[]) {
      status = s;
      fields = [...f];
      return res;
    },
    end() {},
  };
  const ctx = { method: 'GET', http2: false, id, headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } } as unknown as RequestContext;
  writeReply(ctx, res as unknown as HttpResponse, reply, common);
  return { status, fields };
}

const pairs = (fields: readonly string[]): Array<[string, string]> => fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1] as string] as [string, string]] : []));

const secure = commonHeaders({ 'x-content-type-options': 'nosniff', 'strict-transport-security': 'max-age=1' });
const plain = commonHeaders({ 'x-content-type-options': 'nosniff' });

test('a header set goes out with the common headers and the request id, in that order, and the framing last', () => {
  const headers = headerSet({ 'content-type': 'application/json; charset=utf-8', link: '</a.xml>; rel="alternate"' });
  const reply: Reply = { status: 200, headers, body: '{"a":1}', etag: '"t"', vary: ['Accept'] };
  for (const id of ['abc-1', 'abc-2']) {
    assert.deepEqual(pairs(written(reply, secure, id).fields), [
      ['content-type', 'application/json; charset=utf-8'],
      ['link', '</a.xml>; rel="alternate"'],
      ['x-content-type-options', 'nosniff'],
      ['strict-transport-security', 'max-age=1'],
      ['x-request-id', id],
      ['vary', 'Accept'],
      ['etag', '"t"'],
      ['content-length', '7'],
    ]);
  }
  // The same set on another listener gets that listener's common headers (no HSTS on plain HTTP).
  assert.deepEqual(pairs(written(reply, plain).fields).map(([name]) => name), ['content-type', 'link', 'x-content-type-options', 'x-request-id', 'vary', 'etag', 'content-length']);
});

test("a header set's own common header or request id replaces ours: each name once", () => {
  const headers = headerSet({ 'x-content-type-options': 'mine', 'x-request-id': 'their-id' });
  const { fields } = written({ status: 200, headers, body: '' }, secure);
  assert.deepEqual(pairs(fields), [
    ['x-content-type-options', 'mine'],
    ['x-request-id', 'their-id'],
    ['strict-transport-security', 'max-age=1'],
    ['content-length', '0'],
  ]);
});

test('a 304 for a header set keeps only what RFC 9110 §15.4.5 repeats', () => {
  const headers = headerSet({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'private' });
  const { status, fields } = written({ status: 200, headers, body: '{}', etag: '"t"' }, secure, 'abc-3', '"t"');
  assert.equal(status, 304);
  assert.deepEqual(pairs(fields).map(([name]) => name).sort(), ['cache-control', 'etag', 'strict-transport-security', 'x-content-type-options', 'x-request-id']);
});
