// End-to-end: CONTRACT T-1..T-6 and L-1, L-2 over real sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect } from 'node:tls';
import { connect as netConnect } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createService } from '../../lib/index.js';
import { PROTOCOLS, request } from '../helpers/https.js';
import { basic, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Writes `raw` on a fresh connection (TLS offering only http/1.1 when `ca` is given, plain TCP
 * otherwise; `end`: then half-closes) and resolves to all it read (Latin-1) once it closes.
 */
function exchange(to: { readonly port: number; readonly ca?: string | Buffer }, raw: string, end = false): Promise<string> {
  return new Promise((resolve) => {
    const send = (): void => void (end ? socket.end(raw) : socket.write(raw));
    const socket = to.ca === undefined ? netConnect(to.port, '127.0.0.1', send) : tlsConnect({ host: '127.0.0.1', port: to.port, servername: 'localhost', ca: to.ca, ALPNProtocols: ['http/1.1'] }, send);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
}

// H-1: what a client of either protocol sees is looped over PROTOCOLS; the HTTP/1.1 framing,
// time-out and raw-socket tests stay HTTP/1.1 (their h2 counterparts are in http2.test.ts).
for (const protocol of PROTOCOLS) test(`T-2 without --cert a development certificate is created, trusted as CA, host name verified (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const logs: string[] = [];
  const service = createService({ port: 0, store: join(dir, 'users.json'), certDir: join(dir, 'certs'), log: (l) => logs.push(l) });
  const { url } = await service.listen();
  t.after(() => service.close(500));
  const ca = await readFile(join(dir, 'certs', 'localhost-cert.pem'));
  const key = await stat(join(dir, 'certs', 'localhost-key.pem'));
  assert.equal(key.mode & 0o777, 0o600);
  const port = new URL(url).port;
  for (const host of ['localhost', '127.0.0.1']) {
    const r = await request(`https://${host}:${port}/api/something.json`, { ca, protocol });
    assert.equal(r.status, 200, host);
  }
  await assert.rejects(request(`https://127.0.0.1:${port}/api/something.json`, { ca, servername: 'example.com', protocol }));
  await assert.rejects(request(`https://127.0.0.1:${port}/api/something.json`, { protocol }), 'an untrusted certificate is refused by default');
  const warning = logs.map((l) => JSON.parse(l)).find((l) => l.level === 'warn');
  assert.match(warning.msg, /DEVELOPMENT certificate/);
});

// TLS handshakes only: no HTTP is spoken.
test('T-1 TLS 1.2 and 1.3 work; TLS 1.1 is refused', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  const handshake = (min: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3', max: typeof min) =>
    new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: s.ca, minVersion: min, maxVersion: max }, () => {
        const v = socket.getProtocol() ?? '';
        socket.end();
        resolve(v);
      });
      socket.on('error', reject);
    });
  assert.equal(await handshake('TLSv1.2', 'TLSv1.2'), 'TLSv1.2');
  assert.equal(await handshake('TLSv1.3', 'TLSv1.3'), 'TLSv1.3');
  await assert.rejects(handshake('TLSv1', 'TLSv1.1'));
});

test('T-6 port 0 picks a free port and the startup line states the real URL', async (t) => {
  const s = await startService(t);
  const line = s.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'listening');
  assert.equal(line.url, s.url);
  assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(new URL(s.url).port, '0');
});

// Over the plain-HTTP listener, which is HTTP/1.1 (h2 is offered over TLS only).
test('T-5 X-Forwarded-Proto counts only from a trusted proxy', async (t) => {
  const trusted = await startService(t, { httpPort: 0, trustProxy: '127.0.0.0/8' });
  await trusted.service.users.add('alice', 'lemon-initial-passphrase-1');
  const viaProxy = await trusted.fetchPlain('/user/alice/password', {
    method: 'PUT',
    headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7, 127.0.0.1', 'content-type': 'text/plain' },
    body: 'x',
  });
  assert.equal(viaProxy.status, 401, 'treated as HTTPS: the credentials are asked for');
  await new Promise((r) => setTimeout(r, 20));
  const entry = trusted.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.method === 'PUT');
  assert.equal(entry.address, '203.0.113.7', 'the nearest untrusted X-Forwarded-For address is the client');
  const hsts = await trusted.fetchPlain('/api/something', { headers: { 'x-forwarded-proto': 'https' } });
  assert.equal(hsts.headers['strict-transport-security'], 'max-age=31536000');

  const untrusted = await startService(t, { httpPort: 0, trustProxy: '10.0.0.0/8' });
  const spoofed = await untrusted.fetchPlain('/user/alice/password', {
    method: 'PUT',
    headers: { 'x-forwarded-proto': 'https', 'content-type': 'text/plain' },
    body: 'x',
  });
  assert.equal(spoofed.status, 403);
  assert.equal(JSON.parse(spoofed.body).type, '/problems/https-required');
});

for (const protocol of PROTOCOLS) test(`T-4 HSTS can be turned off (${protocol})`, async (t) => {
  const s = await startService(t, { hstsMaxAge: false }, protocol);
  const r = await s.fetch('/api/something');
  assert.equal(r.headers['strict-transport-security'], undefined);
  assert.equal(r.headers['x-content-type-options'], 'nosniff');
});

for (const protocol of PROTOCOLS) test(`L-1 a request target over 8 KiB is 414 (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  const long = await s.fetch(`/api/something?param1=${'a'.repeat(8200)}`);
  assert.equal(long.status, 414);
  assert.equal(JSON.parse(long.body).status, 414);
  const fits = await s.fetch(`/api/something?param1=${'a'.repeat(8000)}`);
  assert.equal(fits.status, 200);
});

// HTTP/1.1's header block, written by hand; the h2 header list limit is in http2.test.ts.
/** The problem document of a raw HTTP/1.1 answer. */
function rawProblem(out: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(out.slice(out.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8')) as Record<string, unknown>;
}

test('L-1, E-2 a header block over 16 KiB is 431 request-header-fields-too-large; a request not whole at the header time-out is 408 request-timeout', async (t) => {
  const s = await startService(t, { headersTimeoutMs: 1_000 });
  const port = Number(new URL(s.url).port);
  const big = await exchange({ port, ca: s.ca }, `GET /api/something HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(17_000)}\r\n\r\n`);
  assert.match(big, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  assert.deepEqual(rawProblem(big), { type: '/problems/request-header-fields-too-large', title: 'Request Header Fields Too Large', status: 431 });
  const late = await exchange({ port, ca: s.ca }, 'GET /api/something HTTP/1.1\r\nHost: localhost\r\n');
  assert.match(late, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.deepEqual(rawProblem(late), { type: '/problems/request-timeout', title: 'Request Timeout', status: 408 });
});

test('C-6 requests the HTTP parser refuses (431, 400) are logged, though no handler sees them', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  const send = (raw: string) => exchange({ port, ca: s.ca }, raw);
  assert.match(await send(`GET /api/something HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(17_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
  assert.match(await send('GARBAGE\r\n\r\n'), /^HTTP\/1\.1 400 /);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refused = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request refused by the HTTP parser');
  assert.deepEqual(refused.map((l) => [l['status'], l['code'], l['level']]), [[431, 'HPE_HEADER_OVERFLOW', 'warn'], [400, 'HPE_INVALID_METHOD', 'warn']]);
  assert.match(String(refused[0]?.['address']), /127\.0\.0\.1/);
});

test('RFC 9112 §3.2: an HTTP/1.1 request without Host, any request with two or with a value that is no host[:port], is a 400 problem (logged, the connection closed) on both listeners; HTTP/1.0 needs none', async (t) => {
  const s = await startService(t, { httpPort: 0 });
  const port = Number(new URL(s.url).port);
  const plainPort = Number(new URL(s.httpUrl as string).port);
  const send = (raw: string, plain = false) => exchange(plain ? { port: plainPort } : { port, ca: s.ca }, raw);
  const refusals = [
    'GET /api/something.json HTTP/1.1\r\n\r\n',
    'GET /api/something.json HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n',
    'GET /api/something.json HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n',
    'GET /api/something.json HTTP/1.1\r\nHost: a b/c@d\r\n\r\n',
    'GET /api/something.json HTTP/1.1\r\nHost: localhost:84x3\r\n\r\n',
    'GET /api/something.json HTTP/1.1\r\nHost: [::1\r\n\r\n',
    // An expectation Node does not know reaches the handler by another event ('checkExpectation').
    'GET /api/something.json HTTP/1.1\r\nExpect: something-else\r\n\r\n',
    // A second request on the same connection is never read: the first answer closes it.
    'GET /api/something.json HTTP/1.1\r\nHOST: a\r\nHost: a\r\n\r\nGET /api/something.json HTTP/1.1\r\nHost: a\r\n\r\n',
  ];
  for (const plain of [false, true]) {
    for (const raw of refusals) {
      const out = await send(raw, plain);
      assert.match(out, /^HTTP\/1\.1 400 /, JSON.stringify(raw));
      assert.match(out, /\r\nconnection: close\r\n/i);
      assert.match(out, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/i);
      assert.equal(out.match(/^HTTP\/1\.1 /gm)?.length, 1, 'one answer, then the connection is closed');
      assert.deepEqual(rawProblem(out), { type: '/problems/bad-request', title: 'Bad Request', status: 400, detail: 'Host must appear once (on HTTP/1.1 it is required), holding a host and an optional port (RFC 9112 §3.2).' });
      assert.equal(/strict-transport-security/i.test(out), !plain, 'HSTS on HTTPS only (T-4)');
    }
  }
  for (const host of ['localhost', 'localhost:8443', '127.0.0.1:8443', '[::1]:8443', 'my_host.example', '']) {
    assert.match(await send(`GET /api/something.json HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), /^HTTP\/1\.1 200 /, host);
  }
  assert.match(await send('GET /api/something.json HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /, 'HTTP/1.0 has no Host requirement');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refused = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request refused by the HTTP parser');
  assert.deepEqual(refused.map((l) => [l['status'], l['code']]), Array.from({ length: 2 * refusals.length }, () => [400, 'host']));
});

test('RFC 9112 §2.3: an HTTP/1.x request line naming HTTP/2.0 or HTTP/0.9 is a 400 problem (logged, the connection closed) on both listeners, never served past the Host and pipelining checks; the process lives', async (t) => {
  const s = await startService(t, { httpPort: 0 });
  const port = Number(new URL(s.url).port);
  const plainPort = Number(new URL(s.httpUrl as string).port);
  // 600 short fields: under the parser's 16 KiB, over the HTTP/2 header-list count (32 octets a field).
  const many = Array.from({ length: 600 }, (_, i) => `a${i % 10}: b\r\n`).join('');
  const asks: Array<[string, string]> = [
    ['2.0', 'GET /api/something.json HTTP/2.0\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['2.0', `GET /api/something.json HTTP/2.0\r\nHost: a\r\n${many}\r\n`],
    ['0.9', 'GET /api/something.json HTTP/0.9\r\nHost: a\r\n\r\n'],
  ];
  for (const plain of [false, true]) {
    for (const [version, raw] of asks) {
      const out = await exchange(plain ? { port: plainPort } : { port, ca: s.ca }, raw);
      assert.match(out, /^HTTP\/1\.1 400 /, JSON.stringify(raw.slice(0, 60)));
      assert.equal(out.match(/^HTTP\/1\.1 /gm)?.length, 1, 'one answer, then the connection is closed');
      assert.match(out, /\r\nconnection: close\r\n/i);
      assert.deepEqual(rawProblem(out), {
        type: '/problems/bad-request',
        title: 'Bad Request',
        status: 400,
        detail: `This connection speaks HTTP/1.1 (and 1.0), not the HTTP/${version} its request line names; HTTP/2 is chosen by TLS ALPN (RFC 9113 §3.2).`,
      });
    }
  }
  assert.match(await exchange({ port, ca: s.ca }, 'GET /api/something.json HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /, 'the server lives, and serves HTTP/1.0');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refusals = (): Array<Record<string, unknown>> => s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request refused by the HTTP parser');
  assert.deepEqual(refusals().map((l) => [l['status'], l['code'], l['level']]), Array.from({ length: 2 * asks.length }, () => [400, 'version', 'warn']));
  // Pipelined, keep-alive asked for: one answer; the requests Node parsed meanwhile are refused too,
  // at most MAX_PIPELINED (32) of them before the connection is cut.
  const before = refusals().length;
  const out = await exchange({ port, ca: s.ca }, 'GET /api/something.json HTTP/2.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n'.repeat(200));
  assert.equal(out.match(/^HTTP\/1\.1 /gm)?.length, 1);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const more = refusals().length - before;
  t.diagnostic(`${more} refusals logged for 200 pipelined requests`);
  assert.ok(more >= 1 && more <= 33, `${more} refusals logged for 200 pipelined requests`);
});

test('A-1 service.handler on an embedder\'s node:http server takes a request line naming HTTP/2.0 as the HTTP/1.x request it is', async (t) => {
  const service = createService({ store: ':memory:' });
  const server = createHttpServer(service.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const port = (server.address() as { port: number }).port;
  const many = Array.from({ length: 600 }, (_, i) => `a${i % 10}: b\r\n`).join('');
  const out = await exchange({ port }, `GET /api/something.json?param1=x HTTP/2.0\r\nHost: a\r\n${many}\r\n`);
  assert.match(out, /^HTTP\/1\.1 200 /);
  assert.ok(out.endsWith('{"param1":"x"}'), out.slice(-100));
});

// HTTP/1.1 only: headers dribbled on a raw socket (h2: http2.test.ts).
test('L-1 slow headers are cut at the time-out while other clients are served', async (t) => {
  const s = await startService(t, { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
  const port = Number(new URL(s.url).port);
  const started = Date.now();
  const slow = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: s.ca });
  await new Promise<void>((resolve) => slow.once('secureConnect', () => resolve()));
  slow.write('GET /api/something HTTP/1.1\r\nHost: localhost\r\n');
  const drip = setInterval(() => slow.writable && slow.write('X-Drip: 1\r\n'), 200);
  t.after(() => (clearInterval(drip), slow.destroy())); // also when an assertion fails first
  const closed = new Promise<number>((resolve) => slow.once('close', () => resolve(Date.now() - started)));
  slow.on('error', () => {});
  slow.resume(); // read the 408 so 'close' can fire
  const served = await s.fetch('/api/something.json?param1=meanwhile');
  assert.equal(served.status, 200, 'another client is served meanwhile');
  const after = await closed;
  clearInterval(drip);
  assert.ok(after < 1_000 + 2_500, `cut after ${after} ms`);
});

// No protocol is spoken on it; a silent h2 connection is in http2.test.ts.
test('L-1 an idle TLS connection that never sends a request is closed', async (t) => {
  const s = await startService(t, { headersTimeoutMs: 1_000, keepAliveTimeoutMs: 500 });
  const port = Number(new URL(s.url).port);
  const idle = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: s.ca });
  idle.on('error', () => {});
  idle.resume(); // read whatever the server says on its way out (a 408), so 'close' can fire
  const started = Date.now();
  await new Promise<void>((resolve) => idle.once('close', () => resolve()));
  assert.ok(Date.now() - started < 4_000);
});

// HTTP/1.1 on purpose: the idle guard ends with the first bytes, and Node's header time-out takes over.
test('L-1 a TLS connection that sends the start of a request line and then nothing is closed', async (t) => {
  const s = await startService(t, { headersTimeoutMs: 1_000, keepAliveTimeoutMs: 500 });
  const port = Number(new URL(s.url).port);
  const stalled = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: s.ca, ALPNProtocols: ['http/1.1'] }, () => stalled.write('GE'));
  stalled.on('error', () => {});
  stalled.resume();
  const started = Date.now();
  await new Promise<void>((resolve) => stalled.once('close', () => resolve()));
  assert.ok(Date.now() - started < 6_000, `closed after ${Date.now() - started} ms`);
});

// HTTP/1.1 framing on purpose (raw socket).
test('L-2 framing attacks get 400 and the server stays up', async (t) => {
  const s = await startService(t, { httpPort: 0 });
  const port = Number(new URL(s.httpUrl as string).port);
  const raw = (text: string) => exchange({ port }, text, true);
  const shapes = [
    'POST /user/a/resetpassword HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /user/a/resetpassword HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde',
    'GET /api/something HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
    'GET /api/something HTTP/9.9\r\n\r\n',
    'garbage\r\n\r\n',
  ];
  for (const shape of shapes) {
    const out = await raw(shape);
    assert.match(out, /^HTTP\/1\.1 400 /, JSON.stringify(shape));
  }
  const r = await s.fetch('/api/something.json');
  assert.equal(r.status, 200);
});

// Over HTTP/1.1; the h2 form (GOAWAY, the stream finishes) is in http2.test.ts.
test('C-5 close() lets an in-flight request finish', async (t) => {
  const s = await startService(t, { resources: { slow: () => new Promise((r) => setTimeout(() => r({ done: true }), 300)) } });
  const inflight = s.fetch('/api/slow.json');
  await new Promise((r) => setTimeout(r, 50));
  const closing = s.service.close(5_000);
  const r = await inflight;
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { done: true });
  await closing;
  await assert.rejects(s.fetch('/api/something.json'));
});

test('T-3 plain HTTP listener is off by default', async (t) => {
  const s = await startService(t);
  assert.equal(s.httpUrl, undefined);
  void basic;
});

// RFC 9112's absolute form is HTTP/1.1 syntax (raw socket).
test('L-2 RFC 9112 absolute-form request targets are served like origin-form', async (t) => {
  const s = await startService(t, { httpPort: 0 });
  const port = Number(new URL(s.httpUrl as string).port);
  const out = await new Promise<string>((resolve) => {
    const socket = netConnect(port, '127.0.0.1', () =>
      socket.end(`GET http://127.0.0.1:${port}/api/something.json?param1=abs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
    );
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
  });
  assert.match(out, /^HTTP\/1\.1 200 /);
  assert.ok(out.endsWith('{"param1":"abs"}'));
});

// The idle guard is an HTTP/1.1 connection's (an h2 session's is in http2-sessions.ts).
test('L-1 a first request whose answer takes longer than the idle time-out is answered, not cut', async (t) => {
  // Idle guard: headersTimeoutMs + keepAliveTimeoutMs = 600 ms; the loader takes 1.5 s (as a
  // password change queued behind other hashes can).
  const s = await startService(t, {
    headersTimeoutMs: 300,
    keepAliveTimeoutMs: 300,
    resources: { slow: async () => (await new Promise((resolve) => setTimeout(resolve, 1_500)), { done: true }) },
  });
  const r = await request(`${s.url}/api/slow.json`, { ca: s.ca, openapi: s.service.openapi(), headers: { connection: 'close' } });
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { done: true });
});
