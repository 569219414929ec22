// P-8 (amended) on the file store with real server processes: a server alone on its store keeps
// its attempts in flight in memory and writes nothing for a login that succeeds; a second server
// that joins sees the first one's attempts in flight before it admits any of its own; a server that
// signs off or dies stops counting. The second server is a real child process
// (test/fixtures/ledger-peer.ts) holding attempts in flight.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { processStart } from '../../../lib/fs/process-exists.js';
import { PeerTable } from '../../../lib/store/file/ledger-peers.js';
import { openStore, type Store } from '../../../lib/store/open.js';
import { tempDir } from '../../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PEER = fileURLToPath(new URL('../../fixtures/ledger-peer.ts', import.meta.url));

/** A server process holding five attempts at alice in flight, once it says so. */
async function startPeer(t: TestContext, path: string): Promise<{ child: ChildProcess; line: (text: string) => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', PEER, path, 'alice', '5'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  const seen: string[] = [];
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  lines.on('line', (text) => {
    seen.push(text);
    for (const w of waiters.filter((w) => w.text === text)) w.resolve();
  });
  const line = (text: string): Promise<void> =>
    seen.includes(text)
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          waiters.push({ text, resolve });
          child.once('exit', (code) => reject(new Error(`the peer exited (${String(code)}) before "${text}"`)));
        });
  await line('holding');
  return { child, line };
}

async function ledgerSize(path: string): Promise<number> {
  return (await stat(`${path}.ledger`)).size;
}

/** One attempt that succeeds, start to end. */
async function login(store: Store, account: string): Promise<void> {
  const r = await store.throttle.reserve(account, '192.0.2.1');
  assert.ok(r.ok, `an attempt at ${account} is admitted`);
  await store.throttle.settle(r.id, account, '192.0.2.1', 'success');
}

async function open(t: TestContext, path: string, warnings: string[] = []): Promise<Store> {
  const store = await openStore(path, { hooks: { onWarning: (message) => warnings.push(message) } });
  t.after(() => store.close());
  return store;
}

test('P-8: a server alone on its store writes nothing to the side file for logins that succeed; a failure is written', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const store = await open(t, path);
  await login(store, 'alice'); // the first one announces the server
  const before = await ledgerSize(path);
  for (let i = 0; i < 20; i++) await login(store, 'alice');
  assert.equal(await ledgerSize(path), before, 'twenty successful logins, not one byte written');
  const r = await store.throttle.reserve('alice', '192.0.2.1');
  assert.ok(r.ok);
  await store.throttle.settle(r.id, 'alice', '192.0.2.1', 'fail');
  assert.ok((await ledgerSize(path)) > before, 'a failure must survive a restart: it is written');
});

test('P-8 (amended): attempts in flight on a server that joined first count on the next one, until its process is gone', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const peer = await startPeer(t, path); // joined alone: its five attempts are in its memory only
  const store = await open(t, path);
  assert.deepEqual(await store.throttle.reserve('alice', '192.0.2.9'), { ok: false, reason: 'busy' }, "the peer's five attempts in flight fill alice's budget here too");
  assert.ok((await store.throttle.reserve('bob', '192.0.2.9')).ok, 'other accounts are not affected');
  peer.child.kill('SIGKILL');
  // The leases would expire after 30 s; a process found gone frees them within about a second.
  let freed = false;
  for (let i = 0; i < 100 && !freed; i++) {
    const r = await store.throttle.reserve('alice', '192.0.2.9');
    if (r.ok) {
      freed = true;
      await store.throttle.settle(r.id, 'alice', '192.0.2.9', 'success');
    } else await sleep(100);
  }
  assert.ok(freed, "a killed server's attempts stop counting once its process is gone");
  const before = await ledgerSize(path);
  for (let i = 0; i < 5; i++) await login(store, 'carol');
  assert.equal(await ledgerSize(path), before, 'alone again: nothing written for successful logins');
});

test('P-8 (amended): a server that signs off frees its place at once and leaves the others alone again', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const peer = await startPeer(t, path);
  const store = await open(t, path);
  assert.deepEqual(await store.throttle.reserve('alice', '192.0.2.9'), { ok: false, reason: 'busy' });
  // While both serve, this server's attempts are written for the peer to count.
  const before = await ledgerSize(path);
  await login(store, 'dave');
  assert.ok((await ledgerSize(path)) > before, 'with a peer on the store, an attempt in flight is written');
  peer.child.stdin!.write('leave\n');
  await peer.line('left');
  const r = await store.throttle.reserve('alice', '192.0.2.9');
  assert.ok(r.ok, 'the attempts of a server that signed off no longer count');
  await store.throttle.settle(r.id, 'alice', '192.0.2.9', 'success');
  const after = await ledgerSize(path);
  for (let i = 0; i < 5; i++) await login(store, 'erin');
  assert.equal(await ledgerSize(path), after, 'alone again: nothing written');
});

test('P-8 (amended): a server that does not answer a newcomer is waited for a bounded time, and the operator is told', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const peer = await startPeer(t, path);
  peer.child.kill('SIGSTOP'); // alive, but it cannot write out its attempts in flight
  const warnings: string[] = [];
  const store = await open(t, path, warnings);
  const r = await store.throttle.reserve('bob', '192.0.2.9');
  assert.ok(r.ok, 'the newcomer serves after the bounded wait');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0] ?? '', /1 other server\(s\) on this store did not answer within 2000 ms/);
});

test('P-8: a peer whose pid now belongs to a process started since (a kill -9, then the pid used again) is gone; one with its own start, or none recorded, is alive', () => {
  const table = new PeerTable();
  table.add('reused', { pid: process.pid, host: table.host, start: '1' });
  table.add('same', { pid: process.pid, host: table.host, start: processStart(process.pid) });
  table.add('older', { pid: process.pid, host: table.host });
  const gone: string[] = [];
  assert.deepEqual([...table.live((id) => gone.push(id)).keys()], ['same', 'older']);
  assert.deepEqual(gone, ['reused']);
});
