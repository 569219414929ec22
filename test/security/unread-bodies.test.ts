// L-2: request bodies nobody reads are inside the HTTP/2 budget. A client that shuts its window (so
// that every response stalls) and sends, on each of its 100 streams, a GET followed by 64 KiB of
// DATA that the GET's handler never reads: node:http2 keeps each stream's unread bytes, up to the
// stream's window, and a hostile review took a server from 60 to 655 MB with 80 such connections,
// held until the request time-out, while the budget counted each stream as 8 KiB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../helpers/tmp.js';
import { request } from '../helpers/https.js';
import { noProcFs, startChildServer } from './helpers/child-server.js';
import { startService } from '../helpers/service.js';
import { ERROR, errorCode, FLAG, frame, FRAME, headersFrame, RawH2, settingsFrame, windowUpdateFrame } from './helpers/h2-frames.js';

const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * 80 sessions that shut their window, each sending 100 requests (`method` `path` with `extra`
 * fields), every one followed by 64 KiB of DATA (one byte short of the stream's window); a normal
 * client asks meanwhile. The server's RSS rise at its peak and the normal client's statuses.
 */
async function flood(t: { after: (fn: () => unknown) => void }, request1: { method?: string; path: string; extra?: ReadonlyArray<readonly [string, string]> }): Promise<{ rise: number; served: number[] }> {
  const server = await startChildServer(t, await tempDir(t), { requestTimeoutMs: 60_000 }, { exposeGc: true });
  for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/something.json`, { ca: server.ca, protocol: 'h2', unchecked: true })).status, 200);
  await server.collectGarbage();
  const baseline = server.rssMiB();
  const hostile: RawH2[] = [];
  t.after(() => hostile.forEach((c) => c.close()));
  const data = Buffer.alloc(16_384, 0x61);
  let peak = baseline;
  for (let i = 0; i < 80; i++) {
    const c = await RawH2.open(server.port, server.ca);
    hostile.push(c);
    const frames = [settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]])];
    for (let n = 0; n < 100; n++) {
      frames.push(headersFrame(2 * n + 1, { ...request1, endStream: false }));
      for (let k = 0; k < 4; k++) frames.push(frame(FRAME.DATA, 0, 2 * n + 1, k === 3 ? data.subarray(0, 16_383) : data));
    }
    await c.write(...frames);
    if (i % 10 === 9) peak = Math.max(peak, server.rssMiB());
  }
  const served: number[] = [];
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    peak = Math.max(peak, server.rssMiB());
    if (i % 4 === 0) served.push((await request(`${server.url}/api/something.json`, { ca: server.ca, protocol: 'h2' })).status);
  }
  assert.ok(server.alive());
  return { rise: peak - baseline, served };
}

test('L-2 unread request bodies: 80 zero-window sessions × 100 GET streams each followed by 64 KiB of DATA nobody reads leave RSS within the budget; a reader is served', { skip: noProcFs }, async (t) => {
  const { rise, served } = await flood(t, { path: '/api/something.json' });
  t.diagnostic(`RSS rose by ${rise.toFixed(0)} MiB; normal requests: ${served.join(' ')}`);
  assert.ok(rise < 200, `RSS rose by ${rise.toFixed(0)} MiB`);
  assert.ok(served.every((status) => status === 200), 'normal requests were served');
});

test('L-2 request bodies waiting for their authentication: 80 zero-window sessions × 100 password changes each followed by 64 KiB of DATA leave RSS within the budget; a reader is served', { skip: noProcFs }, async (t) => {
  const basic = `Basic ${Buffer.from('alice:not-her-password').toString('base64')}`;
  const { rise, served } = await flood(t, { method: 'PUT', path: '/user/alice/password', extra: [['authorization', basic], ['content-type', 'text/plain']] });
  t.diagnostic(`RSS rose by ${rise.toFixed(0)} MiB; normal requests: ${served.join(' ')}`);
  assert.ok(rise < 200, `RSS rose by ${rise.toFixed(0)} MiB`);
  assert.ok(served.every((status) => status === 200), 'normal requests were served');
});

test('L-2, RFC 9113 §8.1: a GET sent with a body nobody reads is answered, its body discarded as it comes (the stream\'s window opens again while the response waits for the reader), and the stream closed with NO_ERROR once the response is out', async (t) => {
  const s = await startService(t, {});
  const c = await RawH2.open(Number(new URL(s.url).port), s.ca);
  t.after(() => c.close());
  const data = Buffer.alloc(16_384, 0x61);
  await c.write(
    settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]),
    headersFrame(1, { path: '/api/something.json', endStream: false }),
    ...[data, data, data, data.subarray(0, 16_383)].map((piece) => frame(FRAME.DATA, 0, 1, piece)),
  );
  assert.ok(await c.waitFor((f) => f.type === FRAME.HEADERS && f.streamId === 1, 5_000), 'answered');
  const reopened = await c.waitFor((f) => f.type === FRAME.WINDOW_UPDATE && f.streamId === 1, 5_000);
  assert.ok(reopened !== undefined, 'the stream\'s window was opened again: its body was discarded, not kept');
  assert.equal(c.frames.some((f) => f.type === FRAME.RST_STREAM && f.streamId === 1), false, 'not closed while its response waits');
  // The reader opens its window: the response comes, then RST_STREAM(NO_ERROR) asks it to stop sending.
  await c.write(windowUpdateFrame(1, 1_000_000));
  const closed = await c.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 1, 5_000);
  assert.ok(closed !== undefined && errorCode(closed) === ERROR.NO_ERROR, 'closed with NO_ERROR');
  const body = Buffer.concat(c.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 1).map((f) => f.payload));
  assert.ok(c.frames.some((f) => f.type === FRAME.DATA && f.streamId === 1 && (f.flags & FLAG.END_STREAM) !== 0), 'the response ended before the reset');
  assert.doesNotThrow(() => JSON.parse(body.toString('utf8')), 'the whole response came');
});

