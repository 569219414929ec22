// L-2 / H-3 (amended 2026-11-27): readiness runs at most one store check at a time; probes that
// arrive meanwhile share its answer, which is kept for `cacheMs`; a check that outlives the
// time-out is not repeated while it still runs; after stopServing() every probe is 503 at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError } from '../../lib/http/problem.js';
import { createHealth, type HealthOptions } from '../../lib/ops/health.js';
import type { ResourceContext } from '../../lib/resources/resource.js';

const context = { name: 'readyz' } as ResourceContext;

/** A readiness whose store check the test settles by hand; `calls` counts the checks begun. */
function controlled(options: Omit<HealthOptions, 'ready'> = {}) {
  const pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  let calls = 0;
  const failures: unknown[] = [];
  const health = createHealth({
    ...options,
    ready: () => {
      calls++;
      return new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
    },
    onNotReady: (error) => failures.push(error),
  });
  const readyz = health.loaders.get('readyz');
  if (readyz === undefined) throw new Error('no readyz loader');
  /** One probe: 200 or the problem's status. */
  const probe = async (): Promise<number> => {
    try {
      await readyz(new URLSearchParams(), context);
      return 200;
    } catch (error) {
      if (error instanceof HttpError) return error.problem.status;
      throw error;
    }
  };
  /** A probe whose store check is the `n`th, which succeeds. */
  const answeredBy = async (n: number): Promise<number> => {
    const answer = probe();
    await tick();
    pending[n]?.resolve();
    return answer;
  };
  return { health, probe, answeredBy, pending, failures, calls: () => calls };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('L-2 concurrent probes share one store check and its answer', async () => {
  const r = controlled({ cacheMs: 0 });
  const probes = Array.from({ length: 50 }, () => r.probe());
  await tick();
  assert.equal(r.calls(), 1);
  r.pending[0]?.resolve();
  assert.deepEqual(new Set(await Promise.all(probes)), new Set([200]));
  // With no cache, the next probe asks again.
  const next = r.probe();
  await tick();
  assert.equal(r.calls(), 2);
  r.pending[1]?.reject(new Error('store away'));
  assert.equal(await next, 503);
  assert.equal(r.failures.length, 1, 'one log line per failed check, not per probe');
});

test('L-2 an answer is kept for cacheMs: probes within it do not reach the store', async () => {
  const r = controlled({ cacheMs: 200 });
  assert.equal(await r.answeredBy(0), 200);
  for (let i = 0; i < 20; i++) assert.equal(await r.probe(), 200);
  assert.equal(r.calls(), 1);
  await new Promise((resolve) => setTimeout(resolve, 250));
  const later = r.probe();
  await tick();
  assert.equal(r.calls(), 2, 'asked again once the answer is older than cacheMs');
  r.pending[1]?.resolve();
  assert.equal(await later, 200);
});

test('L-2 a check past the time-out answers 503 and is not repeated while it still runs', async (t) => {
  // The time-out's timer never holds a process; this test's process must wait for it.
  const awake = setInterval(() => {}, 1_000);
  t.after(() => clearInterval(awake));
  const r = controlled({ timeoutMs: 50, cacheMs: 0 });
  const started = performance.now();
  assert.equal(await r.probe(), 503);
  assert.ok(performance.now() - started < 1_000);
  assert.equal(r.failures.length, 1);
  for (let i = 0; i < 10; i++) assert.equal(await r.probe(), 503);
  assert.equal(r.calls(), 1, 'no second check queued behind the first');
  r.pending[0]?.resolve();
  await tick();
  const again = r.probe();
  await tick();
  assert.equal(r.calls(), 2);
  r.pending[1]?.resolve();
  assert.equal(await again, 200);
});

test('C-5 after stopServing(), /readyz is 503 at once, a cached 200 and a check under way notwithstanding; /healthz stays 200', async () => {
  const r = controlled({ cacheMs: 60_000 });
  assert.equal(await r.answeredBy(0), 200);
  r.health.stopServing();
  assert.equal(await r.probe(), 503);
  assert.equal(r.calls(), 1);
  // A probe that was waiting for a check when the stop began gets 503 too.
  const s = controlled({ cacheMs: 0 });
  const waiting = s.probe();
  await tick();
  s.health.stopServing();
  s.pending[0]?.resolve();
  assert.equal(await waiting, 503);
  assert.deepEqual(await r.health.loaders.get('healthz')?.(new URLSearchParams(), context), { status: 'ok' });
});
