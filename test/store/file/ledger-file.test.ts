// Review regressions for the file ledger (lib/store/file/ledger-file.ts) shared by two processes: each
// "process" is its own ledger object on the same side file, with one lock between them (the store's
// cross-process lock in production). Fake clock; no timing.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createFileLedgers, type FileLedgers } from '../../../lib/store/file/ledger-file.js';
import { resolveThrottlePolicy } from '../../../lib/store/throttle-policy.js';
import { PROTOCOLS } from '../../helpers/https.js';
import { basic, startService } from '../../helpers/service.js';
import { tempDir } from '../../helpers/tmp.js';

async function setup(t: TestContext) {
  const clock = { t: 1_000_000 };
  const path = join(await tempDir(t), 'users.json.ledger');
  // One lock for every "process": a promise chain, as acquireLock serialises them in production.
  let lockTail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = lockTail.then(task);
    lockTail = run.catch(() => undefined);
    return run;
  };
  const open = async (compactBytes?: number): Promise<FileLedgers> => {
    const l = createFileLedgers({
      path,
      policy: resolveThrottlePolicy(),
      now: () => clock.t,
      exclusive,
      ...(compactBytes === undefined ? {} : { compactBytes }),
    });
    await l.load();
    return l;
  };
  return { clock, path, open };
}

/** How many attempts `account` is admitted (reserve, then let go) before it is refused. */
async function admitted(l: FileLedgers, account: string, address: string): Promise<'ok' | 'locked'> {
  const r = await l.throttle.reserve(account, address);
  if (!r.ok) return r.reason === 'locked' ? 'locked' : (assert.fail('nothing is in flight'), 'locked');
  await l.throttle.settle(r.id, account, address, 'none');
  return 'ok';
}

test('P-8: a failure settled while a catch-up sees another process compact is still counted in this process', async (t) => {
  const { open } = await setup(t);
  const a = await open();
  const b = await open(1); // compacts after every append
  for (let i = 0; i < 4; i++) await a.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  // B appends (and so compacts: the file gets a new inode), A has not looked yet.
  await b.throttle.settle('x', 'carol', '10.0.0.9', 'fail');
  // A reserve is queued (its catch-up will start over from B's compacted file) and, before it
  // runs, alice's fifth failure settles in A: counted in memory at once, written under the lock.
  const pending = a.throttle.reserve('dave', '10.0.0.2');
  const fifth = a.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  const r = await pending;
  assert.ok(r.ok);
  await a.throttle.settle(r.id, 'dave', '10.0.0.2', 'none');
  await fifth;
  assert.equal(await admitted(a, 'alice', '10.0.0.1'), 'locked', 'the fifth failure must lock alice in A');
  assert.equal(await admitted(await open(), 'alice', '10.0.0.1'), 'locked', 'and in a fresh process');
});

test('P-8: a compaction that runs while a failure waits for the lock does not count it twice', async (t) => {
  const { path, open } = await setup(t);
  // 120 bytes: the first append (after a 90-byte line) compacts the file to 84 bytes (alice's
  // state and two address events), the second append (35 bytes) does not.
  await writeFile(path, `{"s":"${'z'.repeat(81)}"}\n`, { mode: 0o600 });
  const a = await open(120);
  // Two failures settle at once: the first one's append compacts, from memory that already
  // holds the second; the second's line must then not be appended on top.
  await Promise.all([a.throttle.settle('x', 'alice', '10.0.0.1', 'fail'), a.throttle.settle('x', 'alice', '10.0.0.1', 'fail')]);
  const fresh = await open();
  // Two failures of five: three more are free, in a fresh process as in this one.
  for (let i = 0; i < 2; i++) await fresh.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  assert.equal(await admitted(fresh, 'alice', '10.0.0.1'), 'ok', 'four failures: still free (a double count locks here)');
});

test('P-10: a torn line left by a crash does not swallow the next process\'s nonce claim', async (t) => {
  const { path, open } = await setup(t);
  const a = await open();
  assert.equal(await a.nonces.claim('n1', 1, 2_000_000), true);
  // A crash half-way through an append: no newline.
  await appendFile(path, '{"f":["mallory","10.0.0.');
  const b = await open();
  assert.equal(await b.nonces.claim('n2', 1, 2_000_000), true);
  const restarted = await open();
  assert.equal(await restarted.nonces.claim('n2', 1, 2_000_000), false, 'the claim of n2 must survive a restart');
  assert.equal(await restarted.nonces.claim('n1', 1, 2_000_000), false);
});

test('U-1: the side file stays 0600 after a compaction over a leftover world-readable temporary file', async (t) => {
  const { path, open } = await setup(t);
  const a = await open(1);
  for (const temporary of [`${path}.tmp`, `${path}.${process.pid}.tmp`]) {
    await writeFile(temporary, 'junk', { mode: 0o644 });
    await chmod(temporary, 0o644);
  }
  await a.nonces.claim('n1', 1, 2_000_000);
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.match(await readFile(path, 'utf8'), /"n1"/);
});

test('P-8: once the live state outgrows compactBytes, appends do not rewrite the whole file every time', async (t) => {
  const { path, open } = await setup(t);
  const a = await open(2_000);
  // ~100 live address events (~45 bytes each): more than compactBytes even right after a compaction.
  for (let i = 0; i < 100; i++) await a.throttle.settle('x', undefined, `10.0.${i}.1`, 'fail');
  let rewrites = 0;
  let ino = (await stat(path)).ino;
  for (let i = 0; i < 20; i++) {
    await a.throttle.settle('x', undefined, '10.1.0.1', 'fail');
    const now = (await stat(path)).ino;
    if (now !== ino) rewrites++;
    ino = now;
  }
  assert.ok(rewrites <= 2, `20 appends rewrote the side file ${rewrites} times`);
});

test('P-8: a failure a compaction already wrote is not counted again when another process compacts next', async (t) => {
  const { open } = await setup(t);
  const a = await open(1);
  const b = await open(1);
  // Lock order: A's first settle (its compaction writes both of alice's failures), B's settle (it
  // compacts too: A sees a new file), then A's second settle, which must not count its failure
  // on top of the file that already holds it.
  const settled = [a.throttle.settle('x', 'alice', '10.0.0.1', 'fail'), a.throttle.settle('x', 'alice', '10.0.0.1', 'fail')];
  await b.throttle.settle('x', 'carol', '10.0.0.9', 'fail');
  await Promise.all(settled);
  for (let i = 0; i < 2; i++) await a.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  assert.equal(await admitted(a, 'alice', '10.0.0.1'), 'ok', 'four failures: still free (a double count locks here)');
  assert.equal(await admitted(await open(), 'alice', '10.0.0.1'), 'ok', 'and in a fresh process');
});

test('P-10: a count verified just before its nonce expired and claimed just after is still a replay', async (t) => {
  const { clock, open } = await setup(t);
  const a = await open();
  const expiresAt = clock.t + 300_000;
  assert.equal(await a.nonces.claim('n1', 1, expiresAt), true);
  // The replayed header passed the Digest check at expiresAt - 1; the lock came a little later.
  clock.t = expiresAt + 5;
  assert.equal(await a.nonces.claim('n1', 1, expiresAt), false, 'an expired nonce is never claimed');
  assert.equal(await (await open()).nonces.claim('n1', 1, expiresAt), false, 'nor after a restart');
});

test('P-8 (amended): attempts in flight in one process hold their place in the budgets of every process on the store', async (t) => {
  const { clock, open } = await setup(t);
  const a = await open();
  const b = await open();
  // Five guesses at alice in flight on server A: server B may not start a sixth.
  const inFlight = [];
  for (let i = 0; i < 5; i++) {
    const r = await a.throttle.reserve('alice', `10.0.0.${i}`);
    assert.ok(r.ok);
    inFlight.push(r.id);
  }
  assert.deepEqual(await b.throttle.reserve('alice', '10.0.1.1'), { ok: false, reason: 'busy' }, 'account budget across processes');
  // One ends (a success frees the place): B may go.
  await a.throttle.settle(inFlight[0] as string, 'alice', '10.0.0.0', 'none');
  const r = await b.throttle.reserve('alice', '10.0.1.1');
  assert.ok(r.ok, 'a settled attempt frees its place for the other process too');
  // Fifty in flight from one address on A: B may not start the 51st from it.
  for (let i = 0; i < 50; i++) assert.ok((await a.throttle.reserve(`user${i}`, '10.9.9.9')).ok);
  assert.deepEqual(await b.throttle.reserve('bob', '10.9.9.9'), { ok: false, reason: 'busy' }, 'address budget across processes');
  // A crashed process's leases expire.
  clock.t += 30_001;
  assert.ok((await b.throttle.reserve('bob', '10.9.9.9')).ok);
});

for (const protocol of PROTOCOLS) test(`S-6: a side file that cannot be read or written answers 503 with Retry-After, never 500 (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('alice', 'maple-initial-passphrase-1');
  const ledger = `${s.store}.ledger`;
  await rm(ledger, { force: true });
  await mkdir(ledger); // EISDIR on every read and append
  const r = await s.fetch('/user/alice/password', {
    method: 'PUT',
    headers: { authorization: basic('alice', 'not-the-password'), 'content-type': 'text/plain' },
    body: 'a-new-passphrase-for-alice-1',
  });
  assert.equal(r.status, 503);
  assert.equal(r.headers['retry-after'], '1');
});

test('P-12: issuance records of names nobody asks for again are forgotten once their window has passed', async (t) => {
  const { clock, open } = await setup(t);
  const a = await open();
  for (let i = 0; i < 300; i++) assert.equal(await a.issuance.take(`name${i}`, 3, 3_600_000), true);
  clock.t += 3_600_001;
  assert.equal(await a.issuance.take('fresh', 3, 3_600_000), true);
  assert.equal(a.size().issued, 1);
});

test('P-8, P-10, P-12: failures, nonce counts and issuances survive a restart (a new ledger on the same file)', async (t) => {
  const { open, clock } = await setup(t);
  const ledgers = await open();
  for (let i = 0; i < 5; i++) await ledgers.throttle.settle('x', 'alice', '10.0.0.1', 'fail');
  assert.equal(await ledgers.nonces.claim('nonce-1', 1, clock.t + 300_000), true);
  assert.equal(await ledgers.issuance.take('alice', 3, 3_600_000), true);
  const restarted = await open();
  assert.deepEqual(await restarted.throttle.reserve('alice', '10.0.0.2'), { ok: false, reason: 'locked', retryAfterSeconds: 1 });
  assert.equal(await restarted.nonces.claim('nonce-1', 1, clock.t + 300_000), false, 'a used count is refused after a restart');
  assert.equal(await restarted.nonces.claim('nonce-1', 2, clock.t + 300_000), true);
  assert.equal(await restarted.issuance.take('alice', 1, 3_600_000), false);
  await restarted.throttle.settle('x', 'alice', 'nowhere', 'success');
  const again = await open();
  assert.equal((await again.throttle.reserve('alice', '10.0.0.2')).ok, true, 'a success is durable too');
});
