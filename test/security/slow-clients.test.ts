// The security suite, slow and hostile clients (docs/CONTRACT.md L-1, L-2): connections that dribble headers or sit
// idle do not stop others from being served, dribblers are cut at the header time-out, and
// request-smuggling shapes get 400 and a closed connection, never a second request.
// HTTP/1.1 only (H-1): dribbled headers and smuggling are HTTP/1.1 framing; the h2 time-outs are in http2.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type TLSSocket } from 'node:tls';
import { basic, startService, type Started } from '../helpers/service.js';
import { exchangeOnce, RawConnection } from './helpers/raw-http.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noProcFs, startChildServer } from './helpers/child-server.js';

/** Opens `count` TLS connections, `parallel` handshakes at a time. */
async function openMany(s: Started, count: number, parallel: number): Promise<TLSSocket[]> {
  const port = Number(new URL(s.url).port);
  const sockets: TLSSocket[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next++;
        sockets.push(
          await new Promise<TLSSocket>((resolve, reject) => {
            const socket = connect({ host: '127.0.0.1', port, ca: s.ca, servername: 'localhost' }, () => resolve(socket));
            socket.once('error', reject);
          }),
        );
      }
    }),
  );
  for (const socket of sockets) {
    socket.on('error', () => {});
    socket.resume();
  }
  return sockets;
}

test('L-1 200 connections sending headers a byte at a time do not stop a normal client; they are cut at the header time-out', async (t) => {
  // Long enough that the normal client's ten requests are done before any cut, even on a busy runner.
  const headersTimeoutMs = 5_000;
  const s = await startService(t, { headersTimeoutMs, requestTimeoutMs: 8_000 });
  const slow = await openMany(s, 200, 25);
  t.after(() => slow.forEach((socket) => socket.destroy()));
  const request = `GET /api/something HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'a'.repeat(10_000)}`;
  const closedAfter: number[] = [];
  const started = performance.now();
  let open = slow.length;
  const allClosed = Promise.all(
    slow.map(
      (socket) =>
        new Promise<void>((resolve) => {
          socket.once('close', () => {
            closedAfter.push(performance.now() - started);
            open--;
            resolve();
          });
        }),
    ),
  );
  let at = 0;
  const drip = setInterval(() => {
    const byte = request[at++ % request.length] as string;
    for (const socket of slow) if (socket.writable) socket.write(byte);
  }, 50);
  t.after(() => clearInterval(drip));

  // A normal client, served while every dribbler is still connected.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const latencies: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    const r = await s.fetch(`/api/something.json?param1=normal-${i}`);
    latencies.push(performance.now() - t0);
    assert.equal(r.status, 200);
  }
  const openWhileServed = open;
  assert.equal(openWhileServed, 200, 'the normal client was served while all 200 slow connections were open');

  await allClosed;
  clearInterval(drip);
  const first = Math.min(...closedAfter);
  const last = Math.max(...closedAfter);
  t.diagnostic(`normal requests took ${Math.max(...latencies).toFixed(0)} ms at most; slow connections cut between ${first.toFixed(0)} and ${last.toFixed(0)} ms (header time-out ${headersTimeoutMs} ms)`);
  assert.ok(first >= headersTimeoutMs - 100, `cut at ${first.toFixed(0)} ms, before the time-out`);
  // L-1: a client past a time-out is disconnected within 2 s more (plus scheduling slack on a busy CI runner).
  assert.ok(last <= headersTimeoutMs + 3_000, `the last slow connection was cut after ${last.toFixed(0)} ms`);
  const after = await s.fetch('/api/something.json');
  assert.equal(after.status, 200);
});

test('L-2 1,000 idle TLS connections do not stop service', async (t) => {
  // Long time-outs, so the idle connections are still there while the normal client is served.
  const s = await startService(t, { headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 60_000 });
  await s.service.users.add('alice', 'lemon-initial-passphrase-1');
  const idle = await openMany(s, 1_000, 50);
  t.after(() => idle.forEach((socket) => socket.destroy()));
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) assert.equal((await s.fetch(`/api/something.xml?param1=${i}`)).status, 200);
  const change = await s.fetch('/user/alice/password', {
    method: 'PUT',
    headers: { authorization: basic('alice', 'lemon-initial-passphrase-1'), 'content-type': 'text/plain' },
    body: 'lemon-changed-passphrase-2',
  });
  assert.equal(change.status, 204);
  const served = performance.now() - t0;
  const stillOpen = idle.filter((socket) => !socket.destroyed).length;
  t.diagnostic(`11 requests served in ${served.toFixed(0)} ms with ${stillOpen} idle TLS connections open`);
  assert.equal(stillOpen, 1_000, 'the idle connections were all open while the others were served');
});

// RFC 9112 §6.1, §6.3: a message whose length cannot be determined reliably is answered 400 and
// the connection closed; a request hidden behind the ambiguity must never be processed.
const smuggled = 'GET /api/something.json?param1=smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n';
const shapes: ReadonlyArray<readonly [label: string, head: string, body: string]> = [
  ['Content-Length and Transfer-Encoding', 'Content-Length: 4\r\nTransfer-Encoding: chunked', `0\r\n\r\n${smuggled}`],
  ['Transfer-Encoding and Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 40', `0\r\n\r\n${smuggled}`],
  ['two different Content-Lengths', 'Content-Length: 4\r\nContent-Length: 40', `abcd${smuggled}`],
  ['two equal Content-Lengths', 'Content-Length: 4\r\nContent-Length: 4', `abcd${smuggled}`],
  ['a Content-Length list', 'Content-Length: 4, 4', `abcd${smuggled}`],
  ['Content-Length with a sign', 'Content-Length: +4', `abcd${smuggled}`],
  ['Content-Length in hex', 'Content-Length: 0x4', `abcd${smuggled}`],
  ['two Transfer-Encoding fields', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked', `0\r\n\r\n${smuggled}`],
  ['chunked not last', 'Transfer-Encoding: chunked, identity', `0\r\n\r\n${smuggled}`],
  ['an unknown Transfer-Encoding', 'Transfer-Encoding: xchunked', `0\r\n\r\n${smuggled}`],
  ['Transfer-Encoding: identity', 'Transfer-Encoding: identity', `0\r\n\r\n${smuggled}`],
  ['whitespace before the colon', 'Transfer-Encoding : chunked\r\nContent-Length: 4', `0\r\n\r\n${smuggled}`],
  ['an obs-folded Transfer-Encoding', 'Content-Length: 4\r\nX-Fold: a\r\n Transfer-Encoding: chunked', `0\r\n\r\n${smuggled}`],
  ['a bad chunk size', 'Transfer-Encoding: chunked', `4x\r\nabcd\r\n0\r\n\r\n${smuggled}`],
  ['an overflowing chunk size', 'Transfer-Encoding: chunked', `fffffffffffffffff\r\nabcd\r\n0\r\n\r\n${smuggled}`],
];
const routes = ['PUT /user/alice/password', 'POST /user/alice/resetpassword/', 'GET /api/something'] as const;

test('L-2 request smuggling shapes get 400 and a closed connection; the hidden request is never served', async (t) => {
  const s = await startService(t);
  await s.service.users.add('alice', 'lemon-initial-passphrase-1');
  const target = { host: '127.0.0.1', port: Number(new URL(s.url).port), ca: s.ca };
  for (const route of routes) {
    for (const [label, head, body] of shapes) {
      const request = Buffer.from(`${route} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${basic('alice', 'lemon-initial-passphrase-1')}\r\nContent-Type: text/plain\r\n${head}\r\n\r\n${body}`);
      const { responses, error } = await exchangeOnce(target, request, [route.split(' ')[0] as string, 'GET'], 10_000);
      const where = `${route} with ${label}`;
      assert.equal(error, undefined, where);
      assert.deepEqual(responses.map((r) => r.status), [400], `${where}: one 400 and nothing else`);
      const [response] = responses;
      assert.equal(response?.headers.get('connection')?.[0]?.toLowerCase(), 'close', where);
      assert.equal(response?.headers.get('x-content-type-options')?.[0], 'nosniff', where);
      assert.match(response?.body.toString() ?? '', /"type":"\/problems\/bad-request"/, where);
    }
  }
  assert.equal(await s.service.users.verify('alice', 'lemon-initial-passphrase-1'), true, 'no smuggled change went through');
});

test('L-2 a smuggling shape after a good request on a kept-alive connection: the good one is answered, the bad one gets 400, then close', async (t) => {
  const s = await startService(t);
  const target = { host: '127.0.0.1', port: Number(new URL(s.url).port), ca: s.ca };
  const good = Buffer.from('GET /api/something.json?param1=first HTTP/1.1\r\nHost: localhost\r\n\r\n');
  for (const [label, head, body] of shapes) {
    const bad = Buffer.from(`POST /user/alice/resetpassword/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${head}\r\n\r\n${body}`);
    // One after the other: the second request arrives once the first response is complete.
    const connection = await RawConnection.open(target);
    t.after(() => connection.close());
    const first = await connection.send(good, 'GET', 10_000);
    assert.ok(!('closed' in first) && first.status === 200, label);
    const second = await connection.send(bad, 'POST', 10_000);
    assert.ok(!('closed' in second), `${label}: the second request is answered`);
    assert.equal(second.status, 400, label);
    // Pipelined: both at once. The good one still gets its 200; nothing else is served.
    const { responses } = await exchangeOnce(target, Buffer.concat([good, bad]), ['GET', 'POST', 'GET'], 10_000);
    assert.deepEqual(responses.map((r) => r.status).slice(0, 1), [200], `${label} (pipelined)`);
    assert.ok(responses.every((r) => r.status !== 200 || r.body.toString().includes('first')), `${label} (pipelined): the hidden request was not served`);
  }
});

test('L-2 a TCP connection that sends nothing is cut on the plain-HTTP and metrics listeners too, as on HTTPS (a hostile trial said not: it holds, at the header time-out and the next check)', async (t) => {
  const s = await startService(t, { httpPort: 0, metricsPort: 0, headersTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 });
  const { connect: tcp } = await import('node:net');
  for (const url of [s.httpUrl, s.metricsUrl]) {
    const port = Number(new URL(String(url)).port);
    const socket = tcp(port, '127.0.0.1');
    t.after(() => socket.destroy());
    socket.on('error', () => {});
    socket.resume();
    const started = performance.now();
    const closed = await new Promise<boolean>((resolve) => {
      socket.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 6_000).unref();
    });
    assert.equal(closed, true, `${String(url)}: a silent connection is closed`);
    t.diagnostic(`${String(url)}: closed after ${(performance.now() - started).toFixed(0)} ms`);
  }
});

/** Sockets this process holds open (Linux: /proc/self/fd). */
async function socketsHeld(): Promise<number> {
  const { readdir, readlink } = await import('node:fs/promises');
  const fds = await readdir('/proc/self/fd');
  const links = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
  return links.filter((link) => link.startsWith('socket:')).length;
}

test('L-2 clients that pipeline requests and never read their answers are cut at the request time-out, and leave no socket behind', { skip: process.platform !== 'linux' && 'counts sockets in /proc/self/fd' }, async (t) => {
  const s = await startService(t, { headersTimeoutMs: 2_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000 });
  const port = Number(new URL(s.url).port);
  const before = await socketsHeld();
  const clients: TLSSocket[] = [];
  for (let i = 0; i < 5; i++) {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const c = connect({ host: '127.0.0.1', port, ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(c));
      c.once('error', reject);
    });
    socket.on('error', () => {});
    socket.pause();
    clients.push(socket);
    // Requests written until the connection pushes back, and never an answer read.
    const write = (): void => {
      for (let j = 0; j < 50; j++) if (socket.destroyed || !socket.write('GET /openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n')) return;
      setImmediate(write);
    };
    write();
  }
  t.after(() => clients.forEach((c) => c.destroy()));
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  // Counted while the clients have not left (they never read, never close): what the server holds
  // is its own doing. This process holds both ends; the clients' ends count at most once each.
  const during = await socketsHeld();
  clients.forEach((c) => c.destroy());
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const after = await socketsHeld();
  t.diagnostic(`sockets held: ${before} before, ${during} with the clients still there, ${after} after they left`);
  assert.ok(during <= before + clients.length, `the server let go of the stalled connections while their clients stayed (${before} → ${during})`);
  assert.ok(after <= before, `and nothing is left after (${before} → ${after})`);
  assert.equal((await s.fetch('/api/something.json?param1=x')).status, 200, 'and serves on');
});

test('L-2 HTTP/1.1 pipelined requests never read: a connection may have at most 32 responses waiting, past that it is closed, its client still connected, long before the request time-out; RSS stays bounded', { skip: noProcFs }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-pipelined-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await startChildServer(t, dir, { requestTimeoutMs: 30_000 }, { exposeGc: true });
  await server.collectGarbage();
  const baseline = server.rssMiB();
  const baseSockets = server.sockets();
  // 20 connections, each writing 400 requests for /openapi.json (64 KB) at once and reading nothing.
  const clients: TLSSocket[] = [];
  t.after(() => clients.forEach((c) => c.destroy()));
  const burst = 'GET /openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(400);
  for (let i = 0; i < 20; i++) {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const c = connect({ host: '127.0.0.1', port: server.port, ca: server.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(c));
      c.once('error', reject);
    });
    socket.on('error', () => {});
    socket.pause();
    socket.write(burst);
    clients.push(socket);
  }
  const started = performance.now();
  let peak = baseline;
  let cutAt: number | undefined;
  while (performance.now() - started < 9_000) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    peak = Math.max(peak, server.rssMiB());
    if (cutAt === undefined && server.sockets() <= baseSockets) cutAt = performance.now() - started;
  }
  t.diagnostic(`RSS ${baseline.toFixed(0)} → peak ${peak.toFixed(0)} MiB; the server's connections all gone ${cutAt === undefined ? 'never' : `after ${(cutAt / 1e3).toFixed(1)} s`}, its clients still connected`);
  // Before: every response of the 8,000 kept whole until its turn, and no connection cut while its
  // client stayed (a review measured 782 MB for 20 connections over 65 s).
  assert.ok(peak - baseline < 150, `RSS rose by ${(peak - baseline).toFixed(0)} MiB`);
  assert.ok(cutAt !== undefined && cutAt < 8_000, 'every connection was let go, though its client never left');
  assert.equal((await s2xx(server.url, server.ca)), 200, 'and it serves on');
  assert.ok(server.alive());
});

test('L-2 HTTP/1.1 pipelined requests never read, fewer than the cap: a response that waited its turn is watched too, and its connection is cut at the request time-out while the client stays connected', { skip: noProcFs }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-pipelined-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await startChildServer(t, dir, { requestTimeoutMs: 2_000, bigBytes: 1_000_000 });
  const baseSockets = server.sockets();
  const clients: TLSSocket[] = [];
  t.after(() => clients.forEach((c) => c.destroy()));
  for (let i = 0; i < 5; i++) {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const c = connect({ host: '127.0.0.1', port: server.port, ca: server.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(c));
      c.once('error', reject);
    });
    socket.on('error', () => {});
    socket.pause();
    // A small answer first (sent at once), then 1 MB ones that wait their turn and then stall: more
    // than the kernel's buffers take.
    socket.write(`GET /api/something.json HTTP/1.1\r\nHost: localhost\r\n\r\n${'GET /api/big.json HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(20)}`);
    clients.push(socket);
  }
  const started = performance.now();
  while (server.sockets() > baseSockets && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 250));
  const after = performance.now() - started;
  t.diagnostic(`the server's connections: ${server.sockets() - baseSockets} left after ${(after / 1e3).toFixed(1)} s, the clients still connected`);
  assert.equal(server.sockets(), baseSockets, 'the server let go of every stalled connection');
  assert.ok(after < 6_000, `within the request time-out and a check or two (${after.toFixed(0)} ms)`);
});

async function s2xx(url: string, ca: string): Promise<number> {
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const c = connect({ host: '127.0.0.1', port: Number(new URL(url).port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(c));
    c.once('error', reject);
  });
  const text = await new Promise<string>((resolve) => {
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.on('close', () => resolve(got));
    socket.write('GET /api/something.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  });
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
}
