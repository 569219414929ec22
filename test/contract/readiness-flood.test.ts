// L-2 / H-3 (amended 2026-11-27): a flood of readiness probes (no credentials, HTTPS over both
// protocols and plain HTTP) changes no other request's latency, and /readyz itself answers 200
// through it. Timed: a password change during a /readyz flood against the same change during an
// /api/something flood of the same shape, from a process of its own (test/fixtures/flood.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FloodOrder, FloodReport } from '../fixtures/flood.js';
import { request } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';

/** The store checks readiness made so far, from the H-5 exposition. */
async function pings(s: Started): Promise<number> {
  const text = (await request(s.metricsUrl as string, { unchecked: true })).body;
  const line = /^httpskit_store_operation_duration_seconds_count\{operation="ping"\} (\d+)$/m.exec(text);
  return Number(line?.[1] ?? 0);
}

const FLOOD = fileURLToPath(new URL('../fixtures/flood.ts', import.meta.url));
/** Low enough to keep the test short, high enough that a change takes measurable time (two hashes). */
const SCRYPT = { ln: 13, r: 8, p: 1 } as const;
const CHANGES = 7;
/** HTTP/2 sessions of the flood, each with 100 streams at a time (the server's limit), as h2load -m 100 would. */
const H2_SESSIONS = 4;

/** Starts the flood; `flowing` once answers come back, `stop()` ends it, `done` with the statuses at its end. */
function flood(order: FloodOrder): { flowing: Promise<void>; stop: () => void; done: Promise<FloodReport> } {
  const child = spawn(process.execPath, ['--import', 'tsx', FLOOD, JSON.stringify(order)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  let flowing = (): void => {};
  const started = new Promise<void>((resolve) => (flowing = resolve));
  const done = new Promise<FloodReport>((resolve, reject) => {
    lines.on('line', (line) => (line === 'flowing' ? flowing() : resolve(JSON.parse(line) as FloodReport)));
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the flood exited with ${code} before reporting`)));
  });
  return { flowing: started, stop: () => child.stdin.end(), done };
}

let generation = 0;

/** Times CHANGES password changes (each a verify and a hash) while `path` is flooded; the median, in ms. */
async function changeDuring(s: Started, path: string): Promise<{ median: number; report: FloodReport }> {
  const { flowing, stop, done } = flood({
    targets: [
      { url: s.url, protocol: 'h1' },
      ...Array.from({ length: H2_SESSIONS }, () => ({ url: s.url, protocol: 'h2' }) as const),
      { url: s.httpUrl as string, protocol: 'h1' },
    ],
    path,
    // As two h2load clients would: many streams at once, and a few HTTP/1.1 connections besides.
    clients: 4,
    streams: 100,
    // Every change is timed under the flood: it runs until stopped (this is only its upper bound).
    durationMs: 60_000,
    ca: s.ca,
  });
  await flowing;
  const times: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const current = `flood-passphrase-number-${generation}`;
    const next = `flood-passphrase-number-${++generation}`;
    const started = performance.now();
    const r = await s.fetch('/user/alice/password', { method: 'PUT', headers: { authorization: basic('alice', current), 'content-type': 'text/plain' }, body: next });
    times.push(performance.now() - started);
    assert.equal(r.status, 204, r.body);
  }
  stop();
  const report = await done;
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)] as number, report };
}

test('L-2 / H-3 a /readyz flood (HTTPS h1 and h2, plain HTTP) leaves a password change within 2x of the same change under an /api/ flood; /readyz answers 200 throughout', async (t) => {
  const s = await startService(t, { httpPort: 0, metricsPort: 0, scrypt: SCRYPT });
  await s.service.users.add('alice', `flood-passphrase-number-${generation}`);
  const api = await changeDuring(s, '/api/something');
  const before = await pings(s);
  const flooded = performance.now();
  const ready = await changeDuring(s, '/readyz');
  const seconds = (performance.now() - flooded) / 1_000;
  const checks = (await pings(s)) - before;
  const total = (report: FloodReport): number => Object.values(report).reduce((a, b) => a + b, 0);
  t.diagnostic(`password change, median of ${CHANGES}: ${api.median.toFixed(0)} ms under an /api/ flood (${total(api.report)} requests), ${ready.median.toFixed(0)} ms under a /readyz flood (${total(ready.report)} probes, ${checks} store checks)`);
  assert.deepEqual(Object.keys(api.report), ['200'], JSON.stringify(api.report));
  assert.deepEqual(Object.keys(ready.report), ['200'], `every probe answered 200: ${JSON.stringify(ready.report)}`);
  assert.ok(total(ready.report) >= 200, `a flood, not a trickle: ${total(ready.report)} probes`);
  // One store check at a time, its answer shared and kept about a second: not one per probe.
  assert.ok(checks <= Math.ceil(seconds) + 2, `${checks} store checks in ${seconds.toFixed(1)} s for ${total(ready.report)} probes`);
  assert.ok(ready.median <= 2 * api.median, `${ready.median.toFixed(0)} ms under /readyz against ${api.median.toFixed(0)} ms under /api/`);
});
