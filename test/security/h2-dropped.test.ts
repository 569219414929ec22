// L-2: HTTP/2 connections that send requests and then drop leave nothing behind. node:http2 (Node 20)
// ends a destroyed session's socket gracefully, waiting for writes that a peer that has gone never
// takes: in a hostile review, 20 connections that each sent 100 requests without ending them and
// dropped 100 ms later left 13–19 descriptors every time, for good, until a few hundred of them
// had taken the server's last descriptor and no other client was answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../helpers/tmp.js';
import { noProcFs, startChildServer } from './helpers/child-server.js';
import { FLAG, FRAME, frame, headersFrame, RawH2 } from './helpers/h2-frames.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('L-2 HTTP/2 connections that send 100 unfinished requests each and drop leave no socket or descriptor behind once the request time-out has cut them', { skip: noProcFs }, async (t) => {
  // In a process of its own: a client in the server's process does not show it.
  const s = await startChildServer(t, await tempDir(t), { requestTimeoutMs: 1_000, headersTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 });
  const port = s.port;
  const before = s.sockets();
  const requests = Array.from({ length: 100 }, (_, i) => headersFrame(1 + 2 * i, { path: '/api/something?param1=x', endStream: false }));
  for (let round = 0; round < 3; round++) {
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const c = await RawH2.open(port, s.ca);
        // As a real client: the server's SETTINGS acknowledged, then the requests.
        await c.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0, 5_000);
        await c.write(frame(FRAME.SETTINGS, FLAG.ACK, 0), ...requests);
        await sleep(100);
        c.close();
      }),
    );
  }
  // The request time-out (1 s) resets the unfinished requests; the sessions and their sockets go.
  const deadline = performance.now() + 20_000;
  let now = s.sockets();
  while (now > before && performance.now() < deadline) {
    await sleep(250);
    now = s.sockets();
  }
  t.diagnostic(`sockets: ${before} before, ${now} after 60 dropped connections`);
  assert.ok(now <= before, `${now - before} sockets left of 60 dropped connections`);
  assert.ok(s.alive());
});
