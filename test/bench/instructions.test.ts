// bench/instructions.ts (`--against REF --instructions`, issue 23): a server under callgrind, its
// main thread's instructions counted per request over HTTP/1.1 and HTTP/2, only between the
// counter's zero and its dump (the warm-up and the start are not in the figure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Callgrind, compilesIn, countRequests, haveCallgrind, totalOf } from '../../bench/instructions.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';

test('totalOf reads the summary line of a callgrind dump', () => {
  assert.equal(totalOf('version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 123456789\n'), 123456789);
  assert.equal(totalOf('events: Ir\ntotals: 42\n'), 42);
  assert.throws(() => totalOf('events: Ir\n'), /without a summary line/);
});

test("compilesIn adds up the inclusive counts of V8's optimizing compiles, OSR ones too, and nothing else", () => {
  const annotated = [
    '--------------------------------------------------------------------------------',
    '          Ir',
    '--------------------------------------------------------------------------------',
    '958,163,111 (100.0%)  PROGRAM TOTALS',
    '   51,206,036 ( 4.82%)  ???:v8::internal::Runtime_CompileOptimized(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
    '   51,205,918 ( 4.82%)  ???:v8::internal::Compiler::CompileOptimized(v8::internal::Isolate*, v8::internal::Handle<v8::internal::JSFunction>) [/usr/bin/node]',
    '    2,000,000 ( 0.19%)  ???:v8::internal::Runtime_CompileOptimizedOSR(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
    '    6,703,296 ( 0.63%)  ???:Builtins_CompileLazy [/usr/bin/node]',
    '      500,000 ( 0.05%)  ???:v8::internal::Runtime_CompileLazy(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
  ].join('\n');
  assert.equal(compilesIn(annotated), 53_206_036);
  assert.equal(compilesIn('958,163,111 (100.0%)  PROGRAM TOTALS\n'), 0);
});

// A server answering every path with the same small body, over HTTP/2 and HTTP/1.1.
const SERVER = `
const { createSecureServer } = require('node:http2');
const s = createSecureServer({ cert: process.env.CERT, key: process.env.KEY, allowHTTP1: true }, (req, res) => {
  // /chunked: no Content-Length, which the counting client refuses rather than miscounts.
  res.writeHead(200, req.url === '/chunked' ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': '11' });
  res.end('{"ok":true}');
});
s.listen(0, '127.0.0.1', () => process.send({ url: 'https://127.0.0.1:' + s.address().port }));
`;

test('instructions per request of a server under callgrind, HTTP/1.1 and HTTP/2', { skip: haveCallgrind() || process.env.CI === 'true' ? false : 'valgrind is not installed (.ci/run installs it; under CI=true this fails instead)', timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'httpskit-callgrind-test-'));
  const { cert, key } = createSelfSignedCertificate();
  const server = new Callgrind([process.execPath, '-e', SERVER], join(dir, 'out'), { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: { ...process.env, CERT: cert, KEY: key } });
  try {
    const [message] = (await once(server.child, 'message')) as [{ url: string }];
    const load = { url: message.url, path: '/x', headers: {}, connections: 4, streams: 8, warmup: 100 };
    const h1 = await countRequests(server, { ...load, mode: 'h1', requests: 200 });
    const h1More = await countRequests(server, { ...load, mode: 'h1', requests: 400 });
    const h2 = await countRequests(server, { ...load, mode: 'h2', requests: 200 });
    assert.deepEqual([h1.ok, h1.failed, h1More.ok, h2.ok, h2.failed], [200, 0, 400, 200, 0]);
    // A request of a bare handler takes some tens of thousands of instructions: the start of node
    // (hundreds of millions) is not in the count, and twice the requests count about the same each.
    for (const count of [h1, h1More, h2]) {
      assert.ok(count.main > 5_000 && count.main < 2_000_000, `${count.main} instructions a request`);
      assert.ok(count.compiles >= 0 && count.compiles < count.main * 10, `${count.compiles} instructions of compiles a request`);
    }
    await assert.rejects(countRequests(server, { ...load, path: '/chunked', mode: 'h1', requests: 10 }), /a response without Content-Length/);
    assert.ok(h1More.main / h1.main > 0.5 && h1More.main / h1.main < 1.5, `${h1.main} then ${h1More.main}`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
