// HTTP/2 floods (CONTRACT H-1, L-2): streams past the limit, rapid resets (CVE-2023-44487),
// PINGs and SETTINGS whose acknowledgements are never read, an endless header block
// (CONTINUATION flood). Each is sent with real frames, by Node's http2 client where it can be made
// to misbehave and by a raw frame writer where it cannot. After every flood the process is up and
// a normal client, on another connection, was served during it and after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, type ClientHttp2Session } from 'node:http2';
import { openH2Session } from '../helpers/https.js';
import { startService, type Started } from '../helpers/service.js';
import { ERROR, errorCode, frame, FRAME, FLAG, headersFrame, pingFrame, RawH2, rstStreamFrame, settingsFrame } from './helpers/h2-frames.js';

/** Normal requests (h1 and h2, fresh connections) every 100 ms while `flood` runs; their worst latency. */
async function servedDuring(s: Started, flood: () => Promise<void>): Promise<number> {
  let running = true;
  let worst = 0;
  let served = 0;
  const normal = (async () => {
    for (let i = 0; running || served === 0; i++) {
      const started = performance.now();
      const r = await s.fetch(`/api/something.json?param1=normal-${i}`, { protocol: i % 2 === 0 ? 'h2' : 'h1' });
      worst = Math.max(worst, performance.now() - started);
      assert.equal(r.status, 200);
      assert.equal(r.body, `{"param1":"normal-${i}"}`);
      served++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    await flood();
  } finally {
    running = false;
    await normal;
  }
  const after = await s.fetch('/api/something.json?param1=after', { protocol: 'h2' });
  assert.equal(after.status, 200);
  return worst;
}

const connectClient = (s: Started, options: { maxOutstandingPings?: number } = {}): Promise<ClientHttp2Session> => openH2Session(s.url, { ca: s.ca, ...options });

// Generous: these only catch a starved event loop, never measure speed (that is bench/'s job).
const STARVED_MS = 5_000;

test('L-2 1,000 requests at once on one HTTP/2 connection (Node client): at most 100 in the handler at once, every one answered', async (t) => {
  let running = 0;
  let peak = 0;
  const s = await startService(t, {
    resources: {
      tick: () => {
        running++;
        peak = Math.max(peak, running);
        return new Promise((resolve) => setTimeout(() => resolve((running--, 'ok')), 20));
      },
    },
  });
  const client = await connectClient(s);
  t.after(() => client.destroy());
  const worst = await servedDuring(s, async () => {
    const statuses = await Promise.all(
      Array.from(
        { length: 1_000 },
        () =>
          new Promise<number>((resolve) => {
            const stream = client.request({ ':path': '/api/tick.json' }).end();
            stream.on('response', (h) => resolve(Number(h[':status'])));
            stream.on('error', () => resolve(-1));
            stream.resume();
          }),
      ),
    );
    assert.deepEqual([...new Set(statuses)], [200]);
  });
  t.diagnostic(`peak ${peak} requests in the handler at once; normal requests took at most ${worst.toFixed(0)} ms`);
  assert.ok(peak <= 100, `peak ${peak}`);
  assert.ok(worst < STARVED_MS);
});

test('L-2 rapid reset (CVE-2023-44487): 5,000 requests cancelled as soon as sent (Node client) and 10,000 HEADERS + RST_STREAM pairs (raw)', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  const client = await connectClient(s);
  t.after(() => client.destroy());
  let raw: RawH2 | undefined;
  const worst = await servedDuring(s, async () => {
    for (let i = 0; i < 5_000 && !client.destroyed && !client.closed; i++) {
      const stream = client.request({ ':path': `/api/something.json?param1=${i}` });
      stream.on('error', () => {});
      stream.close(constants.NGHTTP2_CANCEL);
      if (i % 500 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    raw = await RawH2.open(port, s.ca);
    let id = 1;
    for (let burst = 0; burst < 100 && !raw.isClosed; burst++) {
      const frames: Buffer[] = [];
      for (let j = 0; j < 100; j++, id += 2) frames.push(headersFrame(id, { path: '/api/something.json' }), rstStreamFrame(id, ERROR.CANCEL));
      await raw.write(...frames);
    }
    await raw.waitFor((f) => f.type === FRAME.GOAWAY, 2_000);
  });
  const goaway = raw?.frames.find((f) => f.type === FRAME.GOAWAY);
  t.diagnostic(`raw flood: ${goaway === undefined ? 'no GOAWAY' : `GOAWAY code ${errorCode(goaway)}`}; normal requests took at most ${worst.toFixed(0)} ms`);
  raw?.close();
  assert.ok(worst < STARVED_MS);
});

test('L-2 PING flood: 20,000 PINGs whose ACKs are never read (raw), and 2,000 from Node’s client', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  let raw: RawH2 | undefined;
  let acked = 0;
  const worst = await servedDuring(s, async () => {
    raw = await RawH2.open(port, s.ca);
    raw.reading(false);
    for (let burst = 0; burst < 200 && !raw.isClosed; burst++) await raw.write(...Array.from({ length: 100 }, (_, j) => pingFrame(burst * 100 + j)));
    raw.reading(true);
    await Promise.race([raw.closed, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    const client = await connectClient(s, { maxOutstandingPings: 10_000 });
    const pings = Array.from({ length: 2_000 }, () => new Promise<void>((resolve) => client.ping((error) => (error === null && acked++, resolve()))));
    await Promise.all(pings);
    client.destroy();
  });
  t.diagnostic(`raw flooder ${raw?.isClosed === true ? 'was disconnected' : 'is still connected'}; Node client: ${acked} of 2,000 pings acknowledged; normal requests took at most ${worst.toFixed(0)} ms`);
  assert.equal(raw?.isClosed, true, 'the server cut the connection that did not read its PING ACKs');
  raw?.close();
  assert.ok(worst < STARVED_MS);
});

test('L-2 SETTINGS flood: 10,000 SETTINGS frames, each to be acknowledged (raw)', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  let raw: RawH2 | undefined;
  const worst = await servedDuring(s, async () => {
    raw = await RawH2.open(port, s.ca);
    raw.reading(false);
    for (let burst = 0; burst < 100 && !raw.isClosed; burst++) {
      await raw.write(...Array.from({ length: 100 }, () => settingsFrame([[0x3, 100], [0x4, 65_535]])));
    }
    raw.reading(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
  });
  const acks = raw?.frames.filter((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) !== 0).length ?? 0;
  t.diagnostic(`${acks} SETTINGS acknowledged, connection ${raw?.isClosed === true ? 'closed by the server' : 'still open'}; normal requests took at most ${worst.toFixed(0)} ms`);
  raw?.close();
  assert.ok(worst < STARVED_MS);
});

test('L-2 CONTINUATION flood: a header block that never ends is cut, not buffered', async (t) => {
  const s = await startService(t);
  const port = Number(new URL(s.url).port);
  let raw: RawH2 | undefined;
  const before = process.memoryUsage().rss;
  const worst = await servedDuring(s, async () => {
    raw = await RawH2.open(port, s.ca);
    // HEADERS without END_HEADERS, then CONTINUATION frames of 16 KB of one field's literal bytes.
    await raw.write(frame(FRAME.HEADERS, FLAG.END_STREAM, 1, Buffer.concat([Buffer.from([0x82, 0x87, 0x84]), Buffer.from([0x40, 0x05]), Buffer.from('x-pad'), Buffer.from([0x7f, 0xe1, 0xff, 0x03])])));
    const chunk = frame(0x9, 0, 1, Buffer.alloc(16_384, 0x61));
    for (let i = 0; i < 2_000 && !raw.isClosed; i++) await raw.write(chunk);
    await Promise.race([raw.closed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
  });
  const grown = (process.memoryUsage().rss - before) / 2 ** 20;
  t.diagnostic(`flooder ${raw?.isClosed === true ? 'disconnected' : 'still connected'}; RSS grew ${grown.toFixed(1)} MiB; normal requests took at most ${worst.toFixed(0)} ms`);
  assert.equal(raw?.isClosed, true, 'the server cut the connection instead of buffering 32 MB of header block');
  raw?.close();
  assert.ok(worst < STARVED_MS);
});
