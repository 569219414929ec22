// The command line for R-7 (`user role`) and P-12 (`serve --on-reset-token COMMAND`), run as the
// compiled command with real processes; the delivery command is a real shell script.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PROTOCOLS, request } from '../helpers/https.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, exited, run, serve } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const PW = 'violet-initial-passphrase-8\n';

/** A temp directory holding a store with the user ann, and `serve` on it; killed, then removed, after the test. */
async function serveWithAnn(t: import('node:test').TestContext, args: (dir: string) => Promise<string[]>) {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-test-'));
  const store = join(dir, 'users.json');
  const certDir = join(dir, 'certs');
  let child: ChildProcess | undefined;
  // One hook: the server is gone before its directory is removed.
  t.after(async () => {
    if (child !== undefined) {
      child.kill('SIGKILL');
      await exited(child);
    }
    await rm(dir, { recursive: true, force: true });
  });
  assert.equal((await run(['user', 'add', 'ann', '--store', store], { input: PW, env: FAST })).code, 0);
  const started = await serve(['--port', '0', '--cert-dir', certDir, '--store', store, ...(await args(dir))]);
  child = started.child;
  return { ...started, dir, ca: await readFile(join(certDir, 'localhost-cert.pem')) };
}
const FAST = { HTTPSKIT_SCRYPT_LN: '10' };

test('R-7 user role NAME admin|user: changes the role; the last admin stays; usage errors are exit 2', async (t) => {
  const dir = await tempDir(t);
  const store = ['--store', join(dir, 'users.json')];
  assert.equal((await run(['user', 'add', 'root', '--admin', ...store], { input: PW, env: FAST })).code, 0);
  assert.equal((await run(['user', 'add', 'ann', ...store], { input: PW, env: FAST })).code, 0);
  const promote = await run(['user', 'role', 'ann', 'admin', ...store]);
  assert.equal(promote.code, 0, promote.stderr);
  assert.match((await run(['user', 'list', ...store])).stdout, /^ann\tadmin\t/m);
  assert.equal((await run(['user', 'role', 'root', 'user', ...store])).code, 0);
  const last = await run(['user', 'role', 'ann', 'user', ...store]);
  assert.equal(last.code, 1);
  assert.match(last.stderr, /only admin/);
  assert.match((await run(['user', 'list', ...store])).stdout, /^ann\tadmin\t/m);
  const unknown = await run(['user', 'role', 'nobody', 'admin', ...store]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no user "nobody"/);
  for (const args of [['user', 'role', 'ann'], ['user', 'role', 'ann', 'root'], ['user', 'role', 'ann', 'admin', 'extra']]) {
    const r = await run([...args, ...store]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, /httpskit user role: .*see httpskit user role --help/);
  }
});

test('A-11 user del: the only admin is deleted only with --force (exit 1 naming the flag otherwise); other users and a second admin go as before', async (t) => {
  const dir = await tempDir(t);
  const store = ['--store', join(dir, 'users.json')];
  assert.equal((await run(['user', 'add', 'root', '--admin', ...store], { input: PW, env: FAST })).code, 0);
  assert.equal((await run(['user', 'add', 'ann', ...store], { input: PW, env: FAST })).code, 0);
  const refused = await run(['user', 'del', 'root', ...store]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /"root" is the only admin; make another user admin first, or pass --force/);
  assert.match((await run(['user', 'list', ...store])).stdout, /^root\tadmin\t/m);
  assert.equal((await run(['user', 'del', 'ann', ...store])).code, 0, 'a user who is not an admin goes without --force');
  // With a second admin, either may go.
  assert.equal((await run(['user', 'add', 'bea', '--admin', ...store], { input: PW, env: FAST })).code, 0);
  assert.equal((await run(['user', 'del', 'bea', ...store])).code, 0);
  const forced = await run(['user', 'del', 'root', '--force', ...store]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(forced.stderr, /deleted user "root"/);
  assert.equal((await run(['user', 'list', ...store])).stdout, '');
  const misplaced = await run(['user', 'list', '--force', ...store]);
  assert.equal(misplaced.code, 2);
  assert.match(misplaced.stderr, /--force does not apply to user list/);
});

// H-1: the served port speaks both protocols; the hook runs the same for either.
for (const protocol of PROTOCOLS) test(`P-12 serve --on-reset-token COMMAND: a real script gets the event on stdin; the token works; unknown users get nothing (${protocol})`, async (t) => {
  let out = '';
  const s = await serveWithAnn(t, async (dir) => {
    out = join(dir, 'delivered');
    const script = join(dir, 'deliver.sh');
    await writeFile(script, '#!/bin/sh\ncat >> "$1"\n');
    await chmod(script, 0o755);
    return ['--on-reset-token', `${script} ${out}`];
  });
  const unknown = await request(`${s.url}/user/nobody/resettoken`, { method: 'POST', ca: s.ca, protocol });
  const known = await request(`${s.url}/user/ann/resettoken`, { method: 'POST', ca: s.ca, protocol });
  assert.equal(known.status, 202);
  assert.equal(unknown.status, 202);
  for (let i = 0; i < 200 && !existsSync(out); i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise((r) => setTimeout(r, 100));
  const lines = (await readFile(out, 'utf8')).split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, 'one token, for ann only');
  const event = JSON.parse(lines[0] as string) as { name: string; token: string; expiresAt: string };
  assert.equal(event.name, 'ann');
  assert.match(event.expiresAt, /Z$/);
  const put = await request(`${s.url}/user/ann/password`, {
    method: 'PUT',
    ca: s.ca,
    protocol,
    headers: { authorization: `Bearer ${event.token}`, 'content-type': 'text/plain' },
    body: 'violet-second-passphrase-9',
  });
  assert.equal(put.status, 204);
});

for (const protocol of PROTOCOLS) test(`P-12 serve --on-reset-token with a failing command: the caller still gets 202; the failure is logged without the token (${protocol})`, async (t) => {
  const s = await serveWithAnn(t, async (dir) => {
    const script = join(dir, 'fail.sh');
    await writeFile(script, '#!/bin/sh\ncat >/dev/null\necho "leaked to stderr" >&2\nexit 7\n');
    await chmod(script, 0o755);
    return ['--on-reset-token', script];
  });
  const r = await request(`${s.url}/user/ann/resettoken`, { method: 'POST', ca: s.ca, protocol });
  assert.equal(r.status, 202);
  assert.equal(r.body, '');
  let logged: Record<string, unknown> | undefined;
  for (let i = 0; i < 200 && logged === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    logged = s.output().stdout.split('\n').filter((l) => l.includes('onResetToken hook failed')).map((l) => JSON.parse(l) as Record<string, unknown>)[0];
  }
  assert.ok(logged, 'the failure is logged');
  assert.match(JSON.stringify(logged), /exit code 7/);
  assert.doesNotMatch(s.output().stdout + s.output().stderr, /leaked to stderr/, "the command's own output is not passed on");
  assert.doesNotMatch(s.output().stdout, /"token"/);
});

test('U-6 every command but serve refuses --store :memory: (what it wrote would be gone when it ends), a usage error (exit 2) naming the flag or variable, creating nothing', async (t) => {
  const dir = await tempDir(t);
  for (const args of [
    ['user', 'add', 'ghost'],
    ['user', 'add', 'ghost', '--admin'],
    ['user', 'passwd', 'ghost'],
    ['user', 'del', 'ghost'],
    ['user', 'role', 'ghost', 'admin'],
    ['user', 'list'],
    ['reset-token', 'ghost'],
  ]) {
    for (const how of [{ args: ['--store', ':memory:'], env: {} }, { args: [], env: { HTTPSKIT_STORE: ':memory:' } }]) {
      const r = await run([...args, ...how.args], { cwd: dir, input: PW, env: { ...FAST, ...how.env } });
      assert.equal(r.code, 2, `${args.join(' ')} ${how.args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^httpskit: ${how.args.length > 0 ? '--store' : 'HTTPSKIT_STORE'}: a :memory: store holds no users outside the server that made it`), args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  }
  assert.equal(existsSync(join(dir, 'data')), false, 'nothing written');
});

test('user passwd of a user who does not exist says so before it waits for a password (exit 1)', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  assert.equal((await run(['user', 'add', 'ann', '--store', store], { input: PW, env: FAST })).code, 0);
  // Its standard input stays open and says nothing, as a terminal waiting for someone to type.
  const child = spawn(process.execPath, [BIN, 'user', 'passwd', 'ghost', '--store', store], { stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await Promise.race([exited(child), new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 10_000))]);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /no user "ghost"/);
});
