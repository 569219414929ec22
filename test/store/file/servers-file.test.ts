// S-4 on a file store: the settings of the servers running on it (`<store>.servers`). A server
// that starts beside a running one with other settings is refused, naming the difference; with
// none running (the others stopped, or were killed) nothing holds it; a CLI command reads the
// running servers' settings to follow them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../lib/store/open.js';
import type { SharedSettings } from '../../../lib/store/store.js';
import { tempDir } from '../../helpers/tmp.js';

const PLAIN: SharedSettings = { realm: 'httpskit', digest: false, digestKeyFingerprint: null, minPasswordLength: 15 };
const DIGEST: SharedSettings = { ...PLAIN, digest: true, digestKeyFingerprint: 'fp-1' };

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

test('S-4 file store: the first server records its settings, an equal one agrees, one that differs is refused naming the difference and the running server; once it stops, anything starts', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const first = await openStore(path);
  const second = await openStore(path);
  t.after(() => Promise.all([first.close(), second.close()]));
  assert.equal(await first.settings?.read(), undefined, 'no server running');
  assert.equal(await first.settings?.agree(DIGEST), 'recorded');
  assert.deepEqual(await second.settings?.read(), DIGEST, 'a CLI command follows the running server');
  await assert.rejects(second.settings!.agree({ ...PLAIN, minPasswordLength: 12 }), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'ERR_STORE_SETTINGS');
    assert.match(error.message, new RegExp(`a server running on this store \\(pid ${process.pid}\\) has true, this one false`));
    assert.match(error.message, /Digest on or off.*the Digest key's fingerprint.*the minimum password length/);
    return true;
  });
  assert.equal(await second.settings?.agree({ ...DIGEST }), 'agreed');
  await first.settings?.leave();
  assert.deepEqual(await first.settings?.read(), DIGEST, 'the second still runs');
  await second.settings?.leave();
  assert.equal(await first.settings?.read(), undefined);
  assert.equal(await exists(`${path}.servers`), false, 'no file left once none runs');
  // Digest turned off on a restart of a lone server: it starts.
  assert.equal(await second.settings?.agree(PLAIN), 'recorded');
});

test('S-4 file store: a server killed with -9 holds nothing (its process is gone); closing a store signs its server off', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const dead = spawnSync(process.execPath, ['-e', '']).pid as number;
  await writeFile(`${path}.servers`, `${JSON.stringify({ format: 'httpskit-servers', version: 1, servers: [{ id: 'gone', pid: dead, host: hostname(), settings: DIGEST }] })}\n`, { mode: 0o600 });
  const store = await openStore(path);
  assert.equal(await store.settings?.read(), undefined);
  assert.equal(await store.settings?.agree(PLAIN), 'recorded');
  const file = JSON.parse(await readFile(`${path}.servers`, 'utf8')) as { servers: Array<{ pid: number }> };
  assert.deepEqual(file.servers.map((s) => s.pid), [process.pid], 'the dead one is forgotten');
  await store.close();
  assert.equal(await exists(`${path}.servers`), false);
});

test('S-4 file store: a pid used again by another process (a container\'s pid 1 after a kill -9 and a restart) is not the server recorded with it', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  // This very process, recorded as started at another time: the pid runs, but not that server.
  await writeFile(`${path}.servers`, `${JSON.stringify({ format: 'httpskit-servers', version: 1, servers: [{ id: 'before', pid: process.pid, start: '1', host: hostname(), settings: DIGEST }] })}\n`, { mode: 0o600 });
  const store = await openStore(path);
  t.after(() => store.close());
  assert.equal(await store.settings?.read(), undefined);
  assert.equal(await store.settings?.agree(PLAIN), 'recorded');
  const file = JSON.parse(await readFile(`${path}.servers`, 'utf8')) as { servers: Array<{ id: string; start?: string }> };
  assert.equal(file.servers.length, 1);
  assert.notEqual(file.servers[0]?.id, 'before');
  assert.match(String(file.servers[0]?.start), /^\d+$/, 'its own start is recorded');
  // Another store of this same process, recorded with the right start, does run.
  const other = await openStore(path);
  t.after(() => other.close());
  await assert.rejects(other.settings!.agree(DIGEST), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'ERR_STORE_SETTINGS');
    assert.match(error.message, /\(if no server is running on it, delete .*users\.json\.servers\)$/);
    return true;
  });
});

test('S-4 file store: a servers file others may write is not trusted (ERR_STORE_UNSAFE)', { skip: process.platform === 'win32' ? 'no POSIX modes' : false }, async (t) => {
  const path = join(await tempDir(t), 'users.json');
  await writeFile(`${path}.servers`, `${JSON.stringify({ format: 'httpskit-servers', version: 1, servers: [] })}\n`);
  await chmod(`${path}.servers`, 0o666);
  const store = await openStore(path);
  t.after(() => store.close());
  for (const refused of [store.settings!.read(), store.settings!.agree(PLAIN)]) {
    await assert.rejects(refused, (error: Error & { code?: string }) => error.code === 'ERR_STORE_UNSAFE' && /may be written by group or others.*delete it if no server is running/.test(error.message));
  }
});

test('S-4 file store: a server on another host counts as running until it stops', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  await writeFile(`${path}.servers`, `${JSON.stringify({ format: 'httpskit-servers', version: 1, servers: [{ id: 'far', pid: 1, host: `not-${hostname()}`, settings: DIGEST }] })}\n`, { mode: 0o600 });
  const store = await openStore(path);
  t.after(() => store.close());
  await assert.rejects(store.settings!.agree(PLAIN), /a server running on this store \(pid 1 on not-/);
});

test('S-4 file store: a servers file that is not one is ERR_STORE_CORRUPT, saying to delete it if no server runs', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  for (const text of ['{', '[]', '{"format":"httpskit-servers","version":1,"servers":[{"id":"x"}]}']) {
    await writeFile(`${path}.servers`, text, { mode: 0o600 });
    const store = await openStore(path);
    await assert.rejects(store.settings!.agree(PLAIN), (error: Error & { code?: string }) => error.code === 'ERR_STORE_CORRUPT' && /if none is running, delete it/.test(error.message));
    await store.close();
  }
});
