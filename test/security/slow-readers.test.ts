// Slow readers (docs/CONTRACT.md L-2 as amended 2026-11-27, H-1): a client that asks for large
// responses and never takes them (an HTTP/2 window that never opens, a TCP window that closes)
// cannot pin them in the server's memory. A response that makes no progress for the request
// time-out is ended, an HTTP/2 session whose every response stalls is destroyed, and the bytes one
// session holds unsent are bounded. A reader that is slow but steady is served in full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { ServiceError } from '../../lib/errors.js';
import { createService } from '../../lib/index.js';
import { request } from '../helpers/https.js';
import { startService } from '../helpers/service.js';
import { noProcFs, startChildServer, type ChildServer } from './helpers/child-server.js';
import { ERROR, errorCode, frame, FRAME, headersFrame, RawH2, settingsFrame, windowUpdateFrame } from './helpers/h2-frames.js';

const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;

async function tempDir(t: { after: (fn: () => unknown) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-slow-readers-'));
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 5 }).catch(() => {}));
  return dir;
}


const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A normal request on a fresh connection; its status and time. */
async function normal(server: ChildServer, protocol: 'h1' | 'h2'): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const r = await request(`${server.url}/api/something.json?param1=normal`, { ca: server.ca, protocol });
  return { status: r.status, ms: performance.now() - started };
}

test('L-2 HTTP/2 slow readers: 16 connections × 100 streams of 150 KB that never open their window are cut after the request time-out; RSS stays bounded and returns', { skip: noProcFs }, async (t) => {
  const requestTimeoutMs = 10_000;
  const bigBytes = 150_000;
  const CONNECTIONS = 16;
  // The server's budget across sessions is another test's (below): large enough here that only
  // each session's own bound and the time-out act.
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs, bigBytes, maxUnsentBytesTotal: 2 ** 30 }, { exposeGc: true });
  // Warm up: the first big responses allocate what any server needs for them.
  for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/big.json`, { ca: server.ca, protocol: 'h2', unchecked: true })).status, 200);
  await server.collectGarbage();
  const baseline = server.rssMiB();
  const baseSockets = server.sockets();

  // Half announce a window of 0 (nothing can be sent, they read what comes); half keep the default
  // 64 KiB window, never send WINDOW_UPDATE and stop reading their socket.
  const hostile: RawH2[] = [];
  t.after(() => hostile.forEach((c) => c.close()));
  const opened = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, i) => {
      const c = await RawH2.open(server.port, server.ca);
      hostile.push(c);
      const zeroWindow = i % 2 === 0;
      if (zeroWindow) await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]));
      await c.write(...Array.from({ length: 100 }, (_, n) => headersFrame(2 * n + 1, { path: '/api/big.json' })));
      if (!zeroWindow) c.reading(false);
    }),
  );
  const sent = (performance.now() - opened) / 1e3;

  // A client that does not read cannot see the server close: open sessions are counted as the
  // server's sockets (one per connection) above its baseline.
  const samples: Array<{ s: number; rss: number; open: number }> = [];
  const served: Array<{ status: number; ms: number }> = [];
  while (performance.now() - opened < 40_000) {
    await sleep(1_000);
    samples.push({ s: (performance.now() - opened) / 1e3, rss: server.rssMiB(), open: Math.max(0, server.sockets() - baseSockets) });
    if (samples.length % 5 === 0) served.push(await normal(server, samples.length % 10 === 0 ? 'h1' : 'h2'));
  }
  const beforeGc = server.rssMiB();
  await server.collectGarbage();
  const final = server.rssMiB();
  t.diagnostic(`the server's memory after each GC: ${server.stderr().trim().split('\n').join(' ')}`);
  const peak = Math.max(...samples.map((x) => x.rss));
  const firstCut = samples.find((x) => x.open < CONNECTIONS)?.s;
  const allCut = samples.find((x) => x.open === 0)?.s;
  t.diagnostic(`requests sent in ${sent.toFixed(1)} s; RSS baseline ${baseline.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, at 40 s ${beforeGc.toFixed(0)} MiB, after a GC ${final.toFixed(0)} MiB; sessions cut from ${String(firstCut?.toFixed(0))} s to ${String(allCut?.toFixed(0))} s`);
  t.diagnostic(`samples (s, RSS MiB, hostile sessions open): ${samples.map((x) => `${x.s.toFixed(0)} ${x.rss.toFixed(0)} ${x.open}`).join(' | ')}`);
  t.diagnostic(`normal requests meanwhile: ${served.map((x) => `${x.status} in ${x.ms.toFixed(0)} ms`).join(', ')}`);

  // Refused past the session's limit (4 MiB): RST_STREAM(ENHANCE_YOUR_CALM) for most of the 100.
  const calm = hostile.filter((_, i) => i % 2 === 0).map((c) => c.frames.filter((f) => f.type === FRAME.RST_STREAM && errorCode(f) === ERROR.ENHANCE_YOUR_CALM).length);
  t.diagnostic(`streams refused with ENHANCE_YOUR_CALM per zero-window session: ${calm.join(' ')}`);
  assert.ok(calm.every((n) => n >= 50), 'a session cannot make the server hold 100 large responses');
  assert.ok(hostile.filter((_, i) => i % 2 === 0).every((c) => c.isClosed), 'the zero-window clients saw their connections closed');

  assert.ok(served.every((x) => x.status === 200), 'normal clients were served throughout');
  assert.ok(firstCut !== undefined && firstCut >= requestTimeoutMs / 1e3 - 0.5, `no session was cut before the time-out (first at ${String(firstCut)} s)`);
  // Each response has the whole time-out from when the server wrote it; writing 1,600 of them keeps
  // this small machine busy for several seconds, so the last sessions go up to that much later.
  assert.ok(allCut !== undefined && allCut <= sent + (2 * requestTimeoutMs) / 1e3, `every hostile session was cut well within the 40 s (at ${String(allCut)} s)`);
  // The bound: 16 sessions × 4 MiB of bodies, and the JSON texts they were made from until a GC. Before
  // the bound (Node refuses streams of a session past its maxSessionMemory, 10 MB) the rise was 166 MiB.
  assert.ok(peak - baseline < CONNECTIONS * 4 * 1.5 + 32, `RSS rose by ${(peak - baseline).toFixed(0)} MiB`);
  assert.ok(final - baseline < 72, `RSS is back near its baseline after the cut (${(final - baseline).toFixed(0)} MiB above)`);
  assert.ok(server.alive());
});

test('L-2 HTTP/2: a stream whose window stays shut is reset after the request time-out while the session and a slow but steady stream go on', async (t) => {
  const requestTimeoutMs = 2_000;
  const bigBytes = 1_000_000;
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs, bigBytes });
  const c = await RawH2.open(server.port, server.ca);
  t.after(() => c.close());
  // Every stream starts with a window of 0; stream 3 is opened 64 KiB every 400 ms (about 160 KB/s,
  // so its 1 MB takes some 6 s, three request time-outs); stream 1 is never opened.
  await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]), windowUpdateFrame(0, 2 ** 30));
  await c.write(headersFrame(1, { path: '/api/big.json' }), headersFrame(3, { path: '/api/big.json' }));
  const started = performance.now();
  const received = (id: number): number => c.frames.filter((f) => f.type === FRAME.DATA && f.streamId === id).reduce((n, f) => n + f.payload.length, 0);
  const ended = (id: number): boolean => c.frames.some((f) => f.type === FRAME.DATA && f.streamId === id && (f.flags & 0x1) !== 0);
  let resetAt: number | undefined;
  while (!ended(3) && performance.now() - started < 20_000) {
    await c.write(windowUpdateFrame(3, 65_536));
    await sleep(400);
    if (resetAt === undefined && c.frames.some((f) => f.type === FRAME.RST_STREAM && f.streamId === 1)) resetAt = performance.now() - started;
  }
  const elapsed = performance.now() - started;
  t.diagnostic(`stream 1 reset after ${String(resetAt?.toFixed(0))} ms; stream 3 got ${received(3)} bytes in ${elapsed.toFixed(0)} ms`);
  const reset = c.frames.find((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
  assert.ok(reset !== undefined, 'the stalled stream was reset');
  assert.equal(errorCode(reset), ERROR.CANCEL);
  assert.ok(resetAt !== undefined && resetAt >= requestTimeoutMs - 100 && resetAt <= requestTimeoutMs + 3_000, `reset after ${String(resetAt)} ms`);
  assert.ok(ended(3), 'the steady stream got its whole response');
  assert.ok(elapsed > 2 * requestTimeoutMs, 'the steady stream took longer than the time-out');
  assert.equal(received(1), 0);
  assert.ok(!c.isClosed && c.frames.every((f) => f.type !== FRAME.GOAWAY), 'the session goes on');
});

/** A TLS connection (HTTP/1.1) that has sent a GET of /api/big.json. */
function h1Get(server: ChildServer): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: server.port, ca: server.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      socket.write('GET /api/big.json HTTP/1.1\r\nHost: localhost\r\n\r\n');
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

test('L-2 HTTP/1.1 slow readers: connections that never read a large response are closed after the request time-out; a slow but steady reader gets all of it', { skip: noProcFs }, async (t) => {
  const requestTimeoutMs = 2_000;
  const bigBytes = 8_000_000;
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs, headersTimeoutMs: requestTimeoutMs, bigBytes, http2: false });
  const baseSockets = server.sockets();
  // Stuck readers never read: their receive window fills, then the server's send buffer. A paused
  // client does not see the server close either, so the server's sockets are counted.
  const stuck = await Promise.all(Array.from({ length: 5 }, () => h1Get(server)));
  for (const socket of stuck) socket.pause();
  t.after(() => stuck.forEach((socket) => socket.destroy()));
  const started = performance.now();
  // A steady reader: about 1 MB a second, so its 8 MB take some 8 s, four request time-outs.
  const steady = await h1Get(server);
  t.after(() => steady.destroy());
  let got = 0;
  steady.on('data', (chunk: Buffer) => {
    got += chunk.length;
    steady.pause();
    setTimeout(() => steady.resume(), chunk.length / 1_000);
  });
  assert.equal(server.sockets(), baseSockets + 6);
  let cutAt: number | undefined;
  while (performance.now() - started < requestTimeoutMs + 10_000) {
    await sleep(100);
    if (server.sockets() <= baseSockets + 1) {
      cutAt = performance.now() - started;
      break;
    }
  }
  t.diagnostic(`the 5 stuck readers' connections were closed after ${String(cutAt?.toFixed(0))} ms; the steady reader had ${got} bytes then`);
  // Each stall is counted from the last piece its reader took, after the server has made its 8 MB
  // response (a few hundred ms each on this small machine): hence 4 s of room, not L-1's 2.
  assert.ok(cutAt !== undefined && cutAt >= requestTimeoutMs - 100 && cutAt <= requestTimeoutMs + 4_000, `closed after ${String(cutAt)} ms`);
  // The steady reader is still served, and gets all of it (its response has a Content-Length).
  while (got < bigBytes && performance.now() - started < 30_000) await sleep(200);
  t.diagnostic(`steady reader: ${got} bytes after ${(performance.now() - started).toFixed(0)} ms`);
  assert.ok(got > bigBytes, `the steady reader got its whole response (${got} bytes)`);
  assert.ok(performance.now() - started > 2 * requestTimeoutMs, 'the steady reader took longer than the time-out');
  assert.ok(server.alive());
});

test('L-2 maxUnsentBytes: a session holds no more unsent than configured (the rest is refused with ENHANCE_YOUR_CALM); a wrong value is ERR_INVALID_OPTION', async (t) => {
  for (const maxUnsentBytes of [0, 65_535, 2 ** 31, 1.5, '1048576']) {
    assert.throws(() => createService({ maxUnsentBytes } as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', String(maxUnsentBytes));
  }
  const body = 'x'.repeat(150_000);
  const s = await startService(t, { maxUnsentBytes: 1_048_576, resources: { big: () => ({ body }) } });
  const c = await RawH2.open(Number(new URL(s.url).port), s.ca);
  t.after(() => c.close());
  await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]));
  await c.write(...Array.from({ length: 20 }, (_, n) => headersFrame(2 * n + 1, { path: '/api/big.json' })));
  const refused = async (): Promise<number> => {
    await sleep(100);
    return c.frames.filter((f) => f.type === FRAME.RST_STREAM && errorCode(f) === ERROR.ENHANCE_YOUR_CALM).length;
  };
  let n = 0;
  for (let i = 0; i < 50 && n < 14; i++) n = await refused();
  const answered = new Set(c.frames.filter((f) => f.type === FRAME.HEADERS).map((f) => f.streamId)).size;
  t.diagnostic(`${answered} responses held (about 150 KB each), ${n} refused`);
  // 1 MiB holds six bodies of 150 KB: the seventh would pass it.
  assert.equal(answered, 6);
  assert.equal(n, 14);
});

/** The value of SETTINGS parameter `id` in a SETTINGS frame (not an ACK), or undefined. */
function setting(f: { type: number; flags: number; payload: Buffer }, id: number): number | undefined {
  if (f.type !== FRAME.SETTINGS || (f.flags & 0x1) !== 0) return undefined;
  for (let at = 0; at + 6 <= f.payload.length; at += 6) if (f.payload.readUInt16BE(at) === id) return f.payload.readUInt32BE(at + 2);
  return undefined;
}

/** A new session's `streams` requests at once are all answered, none refused: the budget is whole. The session, still open. */
async function assertBudgetWhole(t: { after: (fn: () => unknown) => void }, port: number, ca: string, streams: number): Promise<RawH2> {
  const c = await RawH2.open(port, ca);
  t.after(() => c.close());
  await c.write(...Array.from({ length: streams }, (_, n) => headersFrame(2 * n + 1, { path: '/api/something.json' })));
  for (let i = 0; i < 100 && outcome(c).answered < streams; i++) await sleep(50);
  assert.deepEqual(outcome(c), { answered: streams, refused: 0, calm: 0 });
  return c;
}

/** Streams of `c` the server answered (HEADERS) and refused (RST_STREAM), by error code. */
function outcome(c: RawH2): { answered: number; refused: number; calm: number } {
  const answered = new Set(c.frames.filter((f) => f.type === FRAME.HEADERS).map((f) => f.streamId)).size;
  const rst = c.frames.filter((f) => f.type === FRAME.RST_STREAM);
  return { answered, refused: rst.filter((f) => errorCode(f) === ERROR.REFUSED_STREAM).length, calm: rst.filter((f) => errorCode(f) === ERROR.ENHANCE_YOUR_CALM).length };
}

test('L-2 maxUnsentBytesTotal: zero-window sessions together hold no more than the server\'s budget and one response each; new streams are refused, sessions narrowed to one stream, the stalled cut within seconds; a reader is served throughout and the budget comes back whole', async (t) => {
  for (const maxUnsentBytesTotal of [0, 1_048_575, 2 ** 41, 1.5, '67108864']) {
    assert.throws(() => createService({ maxUnsentBytesTotal } as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', String(maxUnsentBytesTotal));
  }
  const body = 'x'.repeat(150_000);
  const lines: string[] = [];
  // A request time-out far beyond the test: only the budget can cut the sessions early.
  const s = await startService(t, { maxUnsentBytesTotal: 1_048_576, requestTimeoutMs: 60_000, resources: { big: () => ({ body }) }, log: (line) => lines.push(line), logLevel: 'warn' });
  const port = Number(new URL(s.url).port);
  const SESSIONS = 8;
  const STREAMS = 10;
  const hostile = await Promise.all(Array.from({ length: SESSIONS }, () => RawH2.open(port, s.ca)));
  t.after(() => hostile.forEach((c) => c.close()));
  const opened = performance.now();
  for (const c of hostile) {
    await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]));
    await c.write(...Array.from({ length: STREAMS }, (_, n) => headersFrame(2 * n + 1, { path: '/api/big.json' })));
  }
  const settled = async (): Promise<void> => {
    for (let i = 0; i < 100 && hostile.some((c) => { const o = outcome(c); return o.answered + o.refused + o.calm < STREAMS && !c.isClosed; }); i++) await sleep(50);
  };
  await settled();
  const outcomes = hostile.map(outcome);
  t.diagnostic(`per session (answered/refused/calm): ${outcomes.map((o) => `${o.answered}/${o.refused}/${o.calm}`).join(' ')}`);
  const answered = outcomes.reduce((n, o) => n + o.answered, 0);
  // 1 MiB holds six bodies of 150 KB with their streams; past it each session may hold one alone.
  // Each session's own bound (4 MiB) would have let all 80 through.
  assert.ok(answered <= 6 + SESSIONS, `${answered} bodies held across the sessions`);
  assert.ok(outcomes.every((o) => o.answered >= 1), 'every session holds its one response');
  assert.ok(outcomes.some((o) => o.refused > 0), 'new streams were refused with REFUSED_STREAM');
  assert.ok(hostile.some((c) => c.frames.some((f) => setting(f, SETTINGS_MAX_CONCURRENT_STREAMS) === 1)), 'a refused session was told it may open one stream at a time');

  // A reader that reads is served meanwhile, over HTTP/2 and HTTP/1.1.
  for (const protocol of ['h2', 'h1'] as const) {
    const r = await request(`${s.url}/api/big.json`, { ca: s.ca, protocol, unchecked: true });
    assert.equal(r.status, 200, protocol);
    assert.equal(r.body.length, JSON.stringify({ body }).length, protocol);
  }
  assert.ok(lines.some((line) => JSON.parse(line).msg === 'HTTP/2 budget full (maxUnsentBytesTotal): connections over their share are refused'), 'the operator is told');

  // Past half the budget a response that takes nothing for two seconds is stalled: the hostile
  // sessions are cut, long before the request time-out, until what the rest hold is under half of it.
  const open = (): number => hostile.filter((c) => !c.isClosed).length;
  const stillHeld = (): number => hostile.filter((c) => !c.isClosed).reduce((n, c) => n + outcome(c).answered * (150_000 + 8_192), 0);
  for (let i = 0; i < 100 && stillHeld() > 524_288; i++) await sleep(100);
  const cutAfter = performance.now() - opened;
  t.diagnostic(`${SESSIONS - open()} hostile sessions cut ${(cutAfter / 1e3).toFixed(1)} s after their requests; closed: ${hostile.map((c) => (c.isClosed ? 1 : 0)).join('')}`);
  assert.ok(hostile[0]?.isClosed, 'the session holding most was cut');
  assert.ok(stillHeld() <= 524_288, `${open()} sessions still hold ${stillHeld()} bytes`);
  assert.ok(cutAfter < 10_000, `cut after ${cutAfter.toFixed(0)} ms`);
  hostile.forEach((c) => c.close());
  await sleep(200);

  // What they held is given back: a new session may open its streams at once again.
  await assertBudgetWhole(t, port, s.ca, 20);
});

test('L-2 HTTP/2 slow readers across many connections: 120 zero-window sessions × 100 streams of 150 KB leave RSS within the default budget, not 120 × 4 MiB; a reader is served', { skip: noProcFs }, async (t) => {
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs: 60_000, bigBytes: 150_000 }, { exposeGc: true });
  for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/big.json`, { ca: server.ca, protocol: 'h2', unchecked: true })).status, 200);
  await server.collectGarbage();
  const baseline = server.rssMiB();
  const hostile: RawH2[] = [];
  t.after(() => hostile.forEach((c) => c.close()));
  let peak = baseline;
  for (let i = 0; i < 120; i++) {
    const c = await RawH2.open(server.port, server.ca);
    hostile.push(c);
    await c.write(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]));
    await c.write(...Array.from({ length: 100 }, (_, n) => headersFrame(2 * n + 1, { path: '/api/big.json' })));
    if (i % 10 === 9) peak = Math.max(peak, server.rssMiB());
  }
  const served: number[] = [];
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    peak = Math.max(peak, server.rssMiB());
    if (i % 4 === 0) served.push((await normal(server, 'h2')).status);
  }
  const held = hostile.reduce((n, c) => n + outcome(c).answered, 0);
  t.diagnostic(`RSS baseline ${baseline.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB; ${held} bodies of 150 KB let through to 120 sessions in all (some after others were cut); normal requests: ${served.join(' ')}`);
  // 64 MiB of budget, one body alone per session (18 MiB), the sessions themselves (about 60 KiB
  // each) and the encoding's own buffers; without the budget each session held its 4 MiB (over 500 MiB).
  assert.ok(peak - baseline < 200, `RSS rose by ${(peak - baseline).toFixed(0)} MiB`);
  assert.ok(served.every((status) => status === 200), 'normal requests were served');
  assert.ok(server.alive());
});

test('L-2 maxUnsentBytesTotal: requests that never end (HEADERS without END_STREAM, a body announced and never sent or dribbled) cannot hold the budget against other clients: a client under its share is served, the silent requests are reset within seconds, a HEAD is closed once answered', async (t) => {
  const shelf = new Map<string, unknown>([['1', { title: 'Dune' }]]);
  const s = await startService(t, {
    maxUnsentBytesTotal: 1_048_576,
    requestTimeoutMs: 60_000,
    resources: { books: { item: { get: (id: string) => shelf.get(id), put: (id: string, body: unknown) => (shelf.set(id, body), body) } } },
  });
  const port = Number(new URL(s.url).port);
  // 4 sessions × 100 PUTs announcing a body they never send: 400 open streams, 29 MiB of the 1 MiB
  // (8 KiB each, and the 64 KiB window their body may fill): most are refused at once.
  const pins = await Promise.all(Array.from({ length: 4 }, () => RawH2.open(port, s.ca)));
  t.after(() => pins.forEach((c) => c.close()));
  const pinned = performance.now();
  for (const c of pins) {
    await c.write(...Array.from({ length: 100 }, (_, n) => headersFrame(2 * n + 1, { method: 'PUT', path: '/api/books/1', endStream: false, extra: [['content-type', 'application/json'], ['content-length', '100']] })));
  }
  // And they dribble their bodies, a byte per stream every half second: less than 1 KiB in 2 s.
  const dribble = setInterval(() => {
    for (const c of pins) if (!c.isClosed) void c.write(...Array.from({ length: 100 }, (_, n) => frame(FRAME.DATA, 0, 2 * n + 1, Buffer.from(' '))));
  }, 500);
  t.after(() => clearInterval(dribble));
  await sleep(300);
  // A client holding less than its share is served in full meanwhile, 20 streams at once.
  const reader = await RawH2.open(port, s.ca);
  t.after(() => reader.close());
  await reader.write(...Array.from({ length: 20 }, (_, n) => headersFrame(2 * n + 1, { path: '/api/books/1.json' })));
  for (let i = 0; i < 100 && outcome(reader).answered < 20; i++) await sleep(50);
  assert.deepEqual(outcome(reader), { answered: 20, refused: 0, calm: 0 }, 'the other client was served');
  // The silent requests are reset (CANCEL) within seconds, not at the 60 s request time-out, until
  // what is left of them fits in the budget: each counts for 8 KiB and the window its body may fill.
  const cancelled = (c: RawH2): number => c.frames.filter((f) => f.type === FRAME.RST_STREAM && errorCode(f) === ERROR.CANCEL).length;
  const open = (): number => pins.reduce((n, c) => n + (c.isClosed ? 0 : 100 - cancelled(c) - outcome(c).refused), 0);
  const perStream = 8_192 + 65_535;
  for (let i = 0; i < 100 && open() * perStream > 1_048_576; i++) await sleep(100);
  const after = performance.now() - pinned;
  t.diagnostic(`pins (cancelled/refused): ${pins.map((c) => `${cancelled(c)}/${outcome(c).refused}`).join(' ')}; ${open()} still open after ${(after / 1e3).toFixed(1)} s`);
  assert.ok(pins.some((c) => cancelled(c) > 0), 'silent requests were reset');
  assert.ok(open() * perStream <= 1_048_576, `${open()} silent requests still open`);
  assert.ok(after < 10_000, `within ${after.toFixed(0)} ms`);
  clearInterval(dribble);
  pins.forEach((c) => c.close());
  await sleep(200);
  // The budget is whole again.
  const fresh = await assertBudgetWhole(t, port, s.ca, 100);
  // RFC 9113 §8.1: a HEAD whose HEADERS do not end the stream is answered, then closed with NO_ERROR.
  await fresh.write(headersFrame(201, { method: 'HEAD', path: '/api/something.json', endStream: false }));
  const closed = await fresh.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 201, 2_000);
  assert.ok(closed !== undefined && errorCode(closed) === ERROR.NO_ERROR, 'the HEAD stream was closed once answered');
});
