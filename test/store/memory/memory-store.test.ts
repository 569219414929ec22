// U-6 / A-10: `store: ':memory:'` keeps users, tokens and every ledger in the process's memory and
// writes no file; each service gets its own store. (Its behaviour as a Store is the conformance
// suite's: ../conformance-memory.test.ts.)
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createService } from '../../../lib/index.js';
import { resolveConfig } from '../../../lib/config.js';
import { request } from '../../helpers/https.js';
import { FAST_SCRYPT, testCertificate } from '../../helpers/service.js';
import { tempDir } from '../../helpers/tmp.js';
import { run, serve } from '../../helpers/cli.js';

const PASSWORD = 'correct horse battery staple';

/** Runs the test from an empty working directory, so a file written by default lands there. */
async function inEmptyDirectory(t: TestContext): Promise<string> {
  const dir = await tempDir(t);
  const before = process.cwd();
  process.chdir(dir);
  t.after(() => process.chdir(before));
  return dir;
}

function basic(name: string, password: string): string {
  return `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
}

test("A-10: a service on ':memory:' with a given certificate creates no file, through listen(), requests and close()", async (t) => {
  const dir = await inEmptyDirectory(t);
  const { cert, key } = testCertificate();
  const service = createService({ store: ':memory:', port: 0, cert, key, scrypt: FAST_SCRYPT, minPasswordLength: 8 });
  t.after(() => service.close(0));
  await service.users.add('alice', PASSWORD, { role: 'admin' });
  const { url } = await service.listen();
  const ca = cert;
  const read = await request(`${url}/user/alice`, { ca, headers: { authorization: basic('alice', PASSWORD) } });
  assert.equal(read.status, 200);
  const changed = await request(`${url}/user/alice/password`, {
    ca,
    method: 'PUT',
    headers: { authorization: basic('alice', PASSWORD), 'content-type': 'text/plain' },
    body: 'a new and long enough password',
  });
  assert.equal(changed.status, 204);
  // P-8 on the memory ledger: the sixth wrong password in a row is throttled.
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await request(`${url}/user/alice`, { ca, headers: { authorization: basic('alice', 'wrong password') } })).status);
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  await service.close(0);
  assert.deepEqual(await readdir(dir), []);
});

test("U-6: a second service on ':memory:' does not see the first's users; Digest on keeps its key in memory too", async (t) => {
  const dir = await inEmptyDirectory(t);
  const first = createService({ store: ':memory:', scrypt: FAST_SCRYPT, digest: true });
  const second = createService({ store: ':memory:', scrypt: FAST_SCRYPT, digest: true });
  t.after(() => Promise.all([first.close(0), second.close(0)]));
  await first.users.add('alice', PASSWORD);
  assert.equal(await first.users.verify('alice', PASSWORD), true);
  assert.deepEqual((await second.users.list()).map((u) => u.name), []);
  assert.equal(await second.users.verify('alice', PASSWORD), false);
  const token = await first.users.issueResetToken('alice');
  assert.equal(typeof token.token, 'string');
  await Promise.all([first.close(0), second.close(0)]);
  assert.deepEqual(await readdir(dir), []);
});

test("U-6: the configuration takes ':memory:' as it is (not a path)", () => {
  const config = resolveConfig({ store: ':memory:' });
  assert.equal(config.store, ':memory:');
  assert.equal(config.digestKeyInMemory, true);
  assert.equal(config.digestKeyBesideStore, false);
});

test("U-6: the CLI serves a throwaway server on --store :memory: and writes nothing; a user command says there is nothing to read", async (t) => {
  const dir = await tempDir(t);
  const { cert, key } = testCertificate();
  // The certificate comes from outside the working directory, which must stay empty.
  const certs = await tempDir(t);
  await writeFile(join(certs, 'cert.pem'), cert);
  await writeFile(join(certs, 'key.pem'), key);
  const server = await serve(['--store', ':memory:', '--port', '0', '--cert', join(certs, 'cert.pem'), '--key', join(certs, 'key.pem')], { cwd: dir });
  t.after(() => server.child.kill());
  const health = await request(`${server.url}/healthz`, { ca: cert });
  assert.equal(health.status, 200);
  const ready = await request(`${server.url}/readyz`, { ca: cert });
  assert.equal(ready.status, 200);
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  assert.deepEqual(await readdir(dir), []);
  const listed = await run(['user', 'list', '--store', ':memory:'], { cwd: dir });
  assert.notEqual(listed.code, 0);
  assert.match(listed.stderr, /:memory:/);
  assert.deepEqual(await readdir(dir), []);
});
