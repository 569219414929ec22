// L-2 (HTTP/2), an outside attack of 2026-12-05: a client that opens its flow-control windows as
// wide as HTTP/2 allows (SETTINGS_INITIAL_WINDOW_SIZE 2^31-1 and the connection's window to match),
// asks for large responses on 100 streams a second, and never reads its socket. node:http2 then
// hands all of them to the connection at once: the streams close (nothing is left unsent on them),
// and about 4 MiB per connection waits in the socket's write queue for good, counted nowhere. 300
// such connections took the server to 1.4 GB, and their descriptors stayed after the peers had gone.
// The server is a child process: its RSS from /proc, its open connections as its socket descriptors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../helpers/https.js';
import { tempDir } from '../helpers/tmp.js';
import { noProcFs, startChildServer, type ChildServer } from './helpers/child-server.js';
import { FRAME, headersFrame, RawH2, settingsFrame, windowUpdateFrame } from './helpers/h2-frames.js';

const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const MAX_WINDOW = 2 ** 31 - 1;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection whose windows are as wide as they go and which never reads; `next()` opens 100 more streams. */
async function wideOpen(server: ChildServer): Promise<{ readonly c: RawH2; next(): Promise<void> }> {
  const c = await RawH2.open(server.port, server.ca);
  await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]), windowUpdateFrame(0, MAX_WINDOW - 65_535));
  c.reading(false);
  let id = 1;
  return {
    c,
    async next() {
      await c.write(...Array.from({ length: 100 }, () => headersFrame((id += 2) - 2, { path: '/api/big.json' })));
    },
  };
}

test('L-2 HTTP/2 readers that open every window and read nothing: what waits in their connections counts in the budget and is cut within seconds, and nothing is left once they go; RSS stays bounded; a reader is served', { skip: noProcFs }, async (t) => {
  const CONNECTIONS = 50;
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs: 10_000, bigBytes: 60_000 }, { exposeGc: true });
  for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/big.json`, { ca: server.ca, protocol: 'h2', unchecked: true })).status, 200);
  await server.collectGarbage();
  const baseline = server.rssMiB();
  const baseSockets = server.sockets();
  const samples: Array<{ s: number; rss: number; open: number }> = [];
  const served: Array<{ status: number; ms: number }> = [];
  const started = performance.now();
  const sample = async (): Promise<void> => {
    samples.push({ s: (performance.now() - started) / 1e3, rss: server.rssMiB(), open: Math.max(0, server.sockets() - baseSockets) });
    if (samples.length % 3 === 0) {
      const begun = performance.now();
      const { status } = await request(`${server.url}/api/something.json?param1=reader`, { ca: server.ca, protocol: samples.length % 6 === 0 ? 'h1' : 'h2' });
      served.push({ status, ms: performance.now() - begun });
    }
  };

  // Three rounds, as the review's script: 50 connections, 100 streams a second each for 3 s (not
  // awaited: a server that reads nothing more from a connection leaves its writes pending), the
  // peers connected for 8 s, then gone.
  for (let round = 0; round < 3; round++) {
    const hostile = await Promise.all(Array.from({ length: CONNECTIONS }, () => wideOpen(server)));
    const opened = performance.now();
    while (performance.now() - opened < 8_000) {
      if (performance.now() - opened < 3_000) for (const h of hostile) void h.next();
      await sleep(1_000);
      await sample();
    }
    hostile.forEach(({ c }) => c.close());
  }
  // A connection whose queue moved until its peer went has the request time-out (10 s) from then.
  const gone = performance.now();
  while (performance.now() - gone < 14_000 && samples.at(-1)?.open !== 0) {
    await sleep(1_000);
    await sample();
  }
  const left = samples.at(-1)?.open;
  const peak = Math.max(...samples.map((x) => x.rss));
  t.diagnostic(`RSS baseline ${baseline.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB; connections left ${String(left)}; normal requests: ${served.map((x) => `${x.status} in ${x.ms.toFixed(0)} ms`).join(', ')}`);
  t.diagnostic(`samples (s, RSS MiB, hostile connections open): ${samples.map((x) => `${x.s.toFixed(0)} ${x.rss.toFixed(0)} ${x.open}`).join(' | ')}`);

  // Before: a connection whose queued write its peer never took stayed, with its 4 MiB and its
  // streams (whose DATA nghttp2 had taken, so nothing was unsent on them and none counted as
  // stalled), after its peer had gone: 19 of 150 in the review's run, for minutes.
  assert.equal(left, 0, 'nothing is left of the connections once their peers have gone');
  assert.ok(served.every((x) => x.status === 200), 'normal requests were served');
  // The default budget (64 MiB, what is queued counted twice: as written and as encrypted), one
  // response per connection and the connections themselves.
  assert.ok(peak - baseline < 260, `RSS rose by ${(peak - baseline).toFixed(0)} MiB`);
  // What they held is given back: a new connection's 100 streams are all answered, none refused.
  const fresh = await RawH2.open(server.port, server.ca);
  t.after(() => fresh.close());
  await fresh.write(...Array.from({ length: 100 }, (_, n) => headersFrame(2 * n + 1, { path: '/api/something.json' })));
  const answered = (): number => new Set(fresh.frames.filter((f) => f.type === FRAME.HEADERS).map((f) => f.streamId)).size;
  for (let i = 0; i < 100 && answered() < 100; i++) await sleep(50);
  assert.equal(answered(), 100);
  assert.equal(fresh.frames.filter((f) => f.type === FRAME.RST_STREAM).length, 0, 'no stream refused: the budget is whole again');
  assert.ok(server.alive());
});
