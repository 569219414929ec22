// S-4 on a file store (store.md: two servers on one machine may share it). A server started beside
// a running one with other settings refuses to start and names the difference, and changes
// nothing: before, a server without --digest beside a Digest server dropped every user's Digest
// secret, and the Digest server's users were then refused (401, then 429). CLI commands follow the
// running servers' settings; with none running, a server starts with whatever it is given, and a
// server without --digest drops the secrets (P-10) as it always has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openStore } from '../../lib/store/open.js';
import { exited, hasCurl, run, serve } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const curlMissing = (await hasCurl()) ? false : 'curl is not installed';

test('S-4 file store: a server without --digest beside a running Digest server is refused and drops nothing; CLI commands follow the Digest server; once it stops, a server without --digest starts and drops the secrets', { skip: curlMissing }, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const certDir = join(dir, 'certs');
  await mkdir(certDir);
  const cli = (args: string[], input = '') => run([...args, '--store', store, '--scrypt-ln', '10'], { cwd: dir, input });
  assert.equal((await cli(['user', 'add', 'alice'], 'orchid long enough phrase\n')).code, 0);
  const digestServer = await serve(['--port', '0', '--cert-dir', certDir, '--store', store, '--digest', '--scrypt-ln', '10'], { cwd: dir });
  t.after(() => digestServer.child.kill('SIGKILL'));
  const port = new URL(digestServer.url).port;
  const curlDigest = async (user: string, password: string): Promise<string> => {
    const { stdout } = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', join(certDir, 'localhost-cert.pem'), '--digest', '-u', `${user}:${password}`, `https://localhost:${port}/user/${user}`]);
    return stdout;
  };
  // The secret is written on the next successful Basic login (P-10).
  const basic = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', join(certDir, 'localhost-cert.pem'), '-u', 'alice:orchid long enough phrase', `https://localhost:${port}/user/alice`]);
  assert.equal(basic.stdout, '200');
  assert.equal(await curlDigest('alice', 'orchid long enough phrase'), '200');

  // A second server without --digest: refused, one line naming the difference and the running server.
  const refused = await run(['serve', '--port', '0', '--cert-dir', certDir, '--store', store, '--scrypt-ln', '10'], { cwd: dir });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, new RegExp(`Digest on or off: a server running on this store \\(pid ${String(digestServer.child.pid)}\\) has true, this one false`));
  assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
  // And with --digest but another minimum length.
  const shorter = await run(['serve', '--port', '0', '--cert-dir', certDir, '--store', store, '--digest', '--min-length', '12', '--scrypt-ln', '10'], { cwd: dir });
  assert.equal(shorter.code, 1, shorter.stderr);
  assert.match(shorter.stderr, /the minimum password length: a server running on this store .* has 15, this one 12/);
  // Nothing was dropped: Digest still works, over and over (no 401s counted as failures).
  for (let i = 0; i < 6; i++) assert.equal(await curlDigest('alice', 'orchid long enough phrase'), '200');

  // CLI commands without --digest follow the running Digest server: their users can use Digest at once.
  assert.equal((await cli(['user', 'add', 'bob'], 'maple long enough phrase\n')).code, 0);
  assert.equal(await curlDigest('bob', 'maple long enough phrase'), '200');
  assert.equal((await cli(['user', 'passwd', 'alice'], 'orchid second long phrase\n')).code, 0);
  assert.equal(await curlDigest('alice', 'orchid second long phrase'), '200');

  // The Digest server stops: its record goes with it, and a server without --digest now starts
  // and drops the secrets (P-10: they exist only while Digest is on).
  digestServer.child.kill('SIGTERM');
  assert.equal(await exited(digestServer.child), 0);
  assert.equal(await stat(`${store}.servers`).then(() => true, () => false), false, 'no server recorded as running');
  const plain = await serve(['--port', '0', '--cert-dir', certDir, '--store', store, '--scrypt-ln', '10'], { cwd: dir });
  t.after(() => plain.child.kill('SIGKILL'));
  plain.child.kill('SIGTERM');
  await exited(plain.child);
  const opened = await openStore(store);
  t.after(() => opened.close());
  assert.equal((await opened.get('alice'))?.digest, undefined);
  assert.equal((await opened.get('bob'))?.digest, undefined);
});
