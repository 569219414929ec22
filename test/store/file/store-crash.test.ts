// U-1 across processes: interleaved writers lose nothing, and kill -9 at any instant keeps every
// acknowledged change. The workers are real child processes (test/fixtures/store-worker.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { removeTempDir } from '../../helpers/tmp.js';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openStore, type Store, type UserRecord } from '../../../lib/store/open.js';
import { seeded } from '../../helpers/seeded.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = fileURLToPath(new URL('../../fixtures/store-worker.ts', import.meta.url));
const SEED = Number(process.env.STORE_CRASH_SEED ?? 20_240_611);
const KILL_RUNS = 5;

interface Worker {
  readonly child: ChildProcess;
  /** Resolves with every stdout line once the process has exited and its pipes are drained. */
  readonly finished: Promise<{ code: number | null; lines: string[]; stderr: string }>;
  /** Resolves at the first stdout line satisfying `predicate`. */
  waitFor(predicate: (line: string) => boolean): Promise<void>;
}

function startWorker(config: { path: string; mode: 'increment' | 'stream'; prefix: string; count: number; compactBytes: number }): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: Array<{ predicate: (line: string) => boolean; resolve: () => void }> = [];
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const reader = createInterface({ input: child.stdout! });
  reader.on('line', (line) => {
    lines.push(line);
    for (const waiter of waiters.filter((w) => w.predicate(line))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const finished = new Promise<{ code: number | null; lines: string[]; stderr: string }>((resolve) => {
    child.on('close', (code) => resolve({ code, lines, stderr }));
  });
  return {
    child,
    finished,
    waitFor: (predicate) =>
      new Promise<void>((resolve, reject) => {
        if (lines.some(predicate)) return resolve();
        waiters.push({ predicate, resolve });
        void finished.then(({ code }) => reject(new Error(`worker exited (${String(code)}) before the expected line:\n${stderr}`)));
      }),
  };
}

async function tempStorePath(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'store-crash-'));
  // Never throws (a later hook closes what may still write here): see helpers/tmp.ts.
  t.after(() => removeTempDir(dir));
  return join(dir, 'users.json');
}

function record(name: string, changedAt: number): UserRecord {
  return { name, role: 'user', hash: `$scrypt$ln=17,r=8,p=1$c2FsdA$${name}`, createdAt: 0, passwordChangedAt: changedAt };
}


test('U-1: two worker processes and this one, updating one store at once, lose no write', async (t) => {
  const path = await tempStorePath(t);
  const count = 40;
  const workers = ['p1', 'p2'].map((prefix) => startWorker({ path, mode: 'increment', prefix, count, compactBytes: 4096 }));
  t.after(() => workers.forEach((w) => w.child.kill('SIGKILL')));
  await Promise.all(workers.map((w) => w.waitFor((line) => line === 'ready')));

  const store = await openStore(path, { compactBytes: 4096, lockTimeoutMs: 60_000 });
  for (let i = 0; i < count; i++) {
    await store.update(`p0-${i}`, () => ({ next: record(`p0-${i}`, i), result: undefined }));
    await store.update('counter', (current) => ({ next: record('counter', (current?.passwordChangedAt ?? 0) + 1), result: undefined }));
  }
  for (const worker of workers) {
    const { code, lines, stderr } = await worker.finished;
    assert.equal(code, 0, stderr);
    assert.equal(lines.at(-1), 'done');
  }
    assert.equal((await store.get('counter'))?.passwordChangedAt, 3 * count, 'every increment counted once');
  assert.equal((await store.count()), 3 * count + 1);
  const expected = await store.list();
  await store.close();

  const reopened = await openStore(path);
  assert.deepEqual(await reopened.list(), expected);
  await reopened.close();
});

test(`U-1: kill -9 at a random moment keeps every acknowledged change (${KILL_RUNS} runs, seed ${SEED})`, async (t) => {
  const path = await tempStorePath(t);
  const random = seeded(SEED);
  for (let run = 0; run < KILL_RUNS; run++) {
    const prefix = `run${run}`;
    // Small compactBytes, so some kills land inside a compaction.
    const worker = startWorker({ path, mode: 'stream', prefix, count: 100_000, compactBytes: 1500 + Math.floor(random() * 3000) });
    t.after(() => worker.child.kill('SIGKILL'));
    const target = 1 + Math.floor(random() * 30);
    await worker.waitFor((line) => line === `ack ${target - 1}`);
    // Vary the instant within the next update: now, or a few milliseconds later.
    const delay = random() < 0.3 ? 0 : random() * 8;
    if (delay > 0) await sleep(delay);
    worker.child.kill('SIGKILL');
    const { lines } = await worker.finished;
    const acked = lines.filter((line) => line.startsWith('ack ')).map((line) => Number(line.slice(4)));
    const last = Math.max(...acked);
    assert.ok(last >= target - 1);

    let store: Store;
    try {
      store = await openStore(path, { lockTimeoutMs: 5_000 });
    } catch (error) {
      assert.fail(`run ${run} (seed ${SEED}): the store does not load after kill -9: ${String(error)}`);
    }
    for (const i of acked) assert.ok((await store.get(`${prefix}-${i}`)), `run ${run} (seed ${SEED}): acknowledged ${prefix}-${i} is missing`);
    const counter = (await store.get('counter'))?.passwordChangedAt ?? -1;
    assert.ok(counter >= last, `run ${run} (seed ${SEED}): counter ${counter} < last acknowledged ${last}`);
    await store.close();
  }
});
