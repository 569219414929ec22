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

/** Times CHANGES password changes (each a verify and a hash) while `path` is flooded, in ms. */
async function changeDuring(s: Started, path: string): Promise<{ times: number[]; report: FloodReport; cpu: number; requests: number }> {
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
  const cpu = process.cpuUsage();
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
  const used = process.cpuUsage(cpu);
  return { times, report, cpu: used.user + used.system, requests: Object.values(report).reduce((a, b) => a + b, 0) };
}

const median = (times: readonly number[]): number => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] as number;

test('L-2 / H-3 a /readyz flood (HTTPS h1 and h2, plain HTTP) costs the server no more per request than an /api/ flood, one store check a second, and a password change goes through it; /readyz answers 200 throughout', async (t) => {
  const s = await startService(t, { httpPort: 0, metricsPort: 0, scrypt: SCRYPT });
  await s.service.users.add('alice', `flood-passphrase-number-${generation}`);
  // The two floods take turns, twice: a change's time moves with what else this machine is doing,
  // and both medians are taken over the same stretch of it.
  const api1 = await changeDuring(s, '/api/something');
  const before = await pings(s);
  const flooded = performance.now();
  const ready1 = await changeDuring(s, '/readyz');
  const seconds = (performance.now() - flooded) / 1_000;
  const checks = (await pings(s)) - before;
  const api2 = await changeDuring(s, '/api/something');
  const ready2 = await changeDuring(s, '/readyz');
  const api = { median: median([...api1.times, ...api2.times]), report: api1.report };
  const ready = { median: median([...ready1.times, ...ready2.times]), report: ready1.report };
  const total = (report: FloodReport): number => Object.values(report).reduce((a, b) => a + b, 0);
  // The server's CPU (this process: the service, its hashing threads, the test's own requests) per
  // flood request: what a probe costs against what an /api/ request costs.
  const apiCpu = (api1.cpu + api2.cpu) / (api1.requests + api2.requests);
  const readyCpu = (ready1.cpu + ready2.cpu) / (ready1.requests + ready2.requests);
  t.diagnostic(`CPU per flood request: ${apiCpu.toFixed(1)} µs for /api/, ${readyCpu.toFixed(1)} µs for /readyz`);
  t.diagnostic(`password change, median of ${2 * CHANGES} in two turns: ${api.median.toFixed(0)} ms under an /api/ flood (${total(api.report)} requests), ${ready.median.toFixed(0)} ms under a /readyz flood (${total(ready.report)} probes, ${checks} store checks)`);
  for (const report of [api1.report, api2.report]) assert.deepEqual(Object.keys(report), ['200'], JSON.stringify(report));
  for (const report of [ready1.report, ready2.report]) assert.deepEqual(Object.keys(report), ['200'], `every probe answered 200: ${JSON.stringify(report)}`);
  assert.ok(total(ready.report) >= 200, `a flood, not a trickle: ${total(ready.report)} probes`);
  // One store check at a time, its answer shared and kept about a second: not one per probe.
  assert.ok(checks <= Math.ceil(seconds) + 2, `${checks} store checks in ${seconds.toFixed(1)} s for ${total(ready.report)} probes`);
  // A probe costs the server no more than a representation does: a flood of them takes from other
  // requests what a flood of /api/ requests takes. (The change's own time, with both floods keeping
  // the event loop saturated, moved between 0.65 and 2.9 times the /api/ figure from run to run on
  // this 2-core machine: only a probe that waited on the store, seconds, would show there.)
  assert.ok(readyCpu <= 1.5 * apiCpu, `${readyCpu.toFixed(1)} µs per probe against ${apiCpu.toFixed(1)} µs per /api/ request`);
  assert.ok(ready.median <= 4 * api.median, `${ready.median.toFixed(0)} ms under /readyz against ${api.median.toFixed(0)} ms under /api/`);
});
