// L-1's time-outs on every listener the service opens (L-2 as amended 2026-11-27): the HTTPS
// port, the plain-HTTP port (--http-port) and the metrics port (H-5). A connection that sends
// nothing, half a request line or half its headers is cut at the header time-out plus at most 2 s.
// The metrics port used Node's defaults and held a half request line for about 67 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { startService } from '../helpers/service.js';

const headersTimeoutMs = 1_500;
const requestTimeoutMs = 3_000;
const keepAliveTimeoutMs = 1_000;

/** Opens a connection (TLS for https:), writes `bytes`, resolves with the ms until the server closed it. */
function timeCut(url: string, ca: string, bytes: string): Promise<number> {
  const { protocol, hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let started = 0;
    const onOpen = (): void => {
      started = performance.now();
      if (bytes !== '') socket.write(bytes);
    };
    const socket: Socket =
      protocol === 'https:'
        ? tlsConnect({ host: hostname, port: Number(port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, onOpen)
        : tcpConnect({ host: hostname, port: Number(port) }, onOpen);
    socket.on('error', () => {});
    socket.resume();
    socket.once('close', () => resolve(performance.now() - started));
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`${url}: still open after 20 s`));
    }, 20_000).unref();
  });
}

test('L-1, L-2 every listener (HTTPS, plain HTTP, metrics) cuts a silent connection, half a request line and half the headers at the header time-out', async (t) => {
  const s = await startService(t, { httpPort: 0, metricsPort: 0, headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs });
  const listening = s.logs.map((l) => JSON.parse(l) as { msg: string; metricsUrl?: string }).find((l) => l.msg === 'listening');
  const metricsUrl = listening?.metricsUrl;
  assert.ok(metricsUrl !== undefined && s.httpUrl !== undefined);
  const listeners = { https: s.url, http: s.httpUrl, metrics: metricsUrl };
  const shapes = {
    silent: { bytes: '', limit: headersTimeoutMs },
    'half a request line': { bytes: 'GET /metr', limit: headersTimeoutMs },
    'half the headers': { bytes: 'GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Pad: a', limit: headersTimeoutMs },
  };
  const runs = Object.entries(listeners).flatMap(([listener, url]) =>
    Object.entries(shapes).map(async ([shape, { bytes, limit }]) => ({ listener, shape, limit, ms: await timeCut(url, s.ca, bytes) })),
  );
  const results = await Promise.all(runs);
  for (const r of results) t.diagnostic(`${r.listener}, ${r.shape}: cut after ${r.ms.toFixed(0)} ms (time-out ${r.limit} ms)`);
  for (const r of results) {
    // The HTTPS listener gives a silent TLS connection the header time-out plus the keep-alive
    // time-out (server.ts: its idle guard); the others, the time-out itself.
    const allowed = r.listener === 'https' && r.shape === 'silent' ? r.limit + keepAliveTimeoutMs : r.limit;
    assert.ok(r.ms >= r.limit - 100 && r.ms <= allowed + 2_000, `${r.listener}, ${r.shape}: cut after ${r.ms.toFixed(0)} ms, expected ${r.limit}–${allowed + 2_000}`);
  }
});
