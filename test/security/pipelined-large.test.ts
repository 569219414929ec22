// L-2, H-1: responses pipelined on an HTTP/1.1 connection that goes away before they are sent (a
// client that asks for many large bodies in one write and never reads, then drops the connection)
// must not stay in memory. node:http never closes a response still queued behind another when the
// connection closes, so nothing of ours may keep one alive: the stall watch of a large body held it
// (and its body) until the request time-out, so a few hundred such connections held gigabytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { AddressInfo } from 'node:net';
import { createService } from '../../lib/index.js';
import { MAX_PIPELINED } from '../../lib/http/server.js';
import { testCertificate } from '../helpers/service.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('L-2 large responses queued behind the 32 a connection may have waiting are freed once the service cuts it, not at the request time-out', async (t) => {
  const big = { text: 'x'.repeat(100_000) };
  const { cert, key } = testCertificate();
  const service = createService({ host: '127.0.0.1', port: 0, cert, key, store: ':memory:', resources: { big: () => big } });
  t.after(() => service.close());
  const { url } = await service.listen();
  const port = Number(new URL(url).port);
  gc();
  const before = process.memoryUsage().arrayBuffers;
  const pipelined = 'GET /api/big.json HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(MAX_PIPELINED + 8);
  // Five connections, each cut by the service when its 33rd response would wait.
  await Promise.all(
    Array.from({ length: 5 }, () =>
      new Promise<void>((resolve) => {
        const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
          socket.pause();
          socket.write(pipelined);
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      }),
    ),
  );
  // 5 × 32 bodies of 100 KB were waiting (16 MB): at most one connection's worth may remain.
  let held = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 50 && held > 3_200_000; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    gc();
    held = process.memoryUsage().arrayBuffers - before;
  }
  assert.ok(held <= 3_200_000, `${held} bytes of response bodies still held after the connections were cut`);
});

test('L-2 large responses queued on an HTTP/1.1 connection that closed are freed at once, not at the request time-out', async (t) => {
  const big = { text: 'x'.repeat(100_000) };
  const service = createService({ store: ':memory:', resources: { big: () => big } });
  const server: Server = createServer(testCertificate(), service.handler);
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await service.close();
  });
  let responses = 0;
  const freed = { count: 0 };
  const registry = new FinalizationRegistry(() => void freed.count++);
  server.on('request', (_req, res) => {
    responses++;
    registry.register(res, undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const pipelined = 'GET /api/big.json HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(20);
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
      // The socket is paused from here on: the server's writes fill the windows and stop.
      socket.pause();
      socket.write(pipelined);
      // Until the server has taken every request, then gone.
      const wait = setInterval(() => {
        if (responses < 20) return;
        clearInterval(wait);
        socket.destroy();
        resolve();
      }, 20);
    });
    socket.on('error', reject);
  });
  assert.equal(responses, 20);
  // The server's request time-out is Node's default (300 s): nothing may wait for it.
  for (let i = 0; i < 50 && freed.count < responses; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    gc();
  }
  assert.equal(freed.count, responses, 'every response of the closed connection is collected');
});

test('L-2 the metrics listener, too, cuts a connection past 32 pipelined scrapes waiting, where it held them all', async (t) => {
  const { cert, key } = testCertificate();
  const service = createService({ host: '127.0.0.1', port: 0, metricsPort: 0, cert, key, store: ':memory:' });
  t.after(() => service.close());
  const { metricsUrl } = await service.listen();
  const { port } = new URL(metricsUrl as string);
  let received = '';
  const closed = await new Promise<boolean>((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port: Number(port) }, () => {
      socket.pause();
      socket.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(2_000));
      // A paused socket sees no close: read after the server has had its time with the requests.
      setTimeout(() => socket.resume(), 1_000);
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => void (received += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(true));
    // Long before any time-out (the request time-out is 30 s).
    setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, 5_000).unref();
  });
  const answered = received.split('HTTP/1.1 200 OK').length - 1;
  assert.equal(closed, true, `the connection was still open after 5 s, ${answered} scrapes answered`);
  assert.ok(answered <= MAX_PIPELINED + 1, `${answered} scrapes answered`);
});
