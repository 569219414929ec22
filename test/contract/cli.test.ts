// The command line, as operators use it: CONTRACT C-1..C-6, with T-2 and U-1 across processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from '../helpers/https.js';
import { basic, testCertificate } from '../helpers/service.js';
import { BIN, exited, hasCurl, run, serve, serveInTemp } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; bin: Record<string, string> };
const FAST = ['--scrypt-ln', '10'];
const execFileP = promisify(execFile);

test('C-1 the first bin entry is the compiled command', () => {
  assert.equal(Object.values(pkg.bin)[0], 'dist/bin/httpskit.js');
});

test('C-4 --help lists commands, flags and their environment variables; --version', async () => {
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  for (const s of ['user add NAME', 'reset-token NAME', '--http-port', 'HTTPSKIT_PORT', 'HTTPSKIT_TRUST_PROXY', 'HTTPSKIT_DIGEST', 'Exit codes']) {
    assert.ok(help.stdout.includes(s), s);
  }
  const version = await run(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), pkg.version);
});

test('C-4 usage errors exit 2 with one clear line', async () => {
  const cases = [['--bogus'], ['--port', '70000'], ['--port', 'abc'], ['frobnicate'], ['user', 'add'], ['user', 'add', 'a', 'b'], ['user', 'nope', 'x'], ['--cert', 'x.pem'], ['--min-length', '3']];
  for (const args of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, args.join(' '));
    assert.match(r.stderr, /^httpskit: /);
  }
  const env = await run([], { env: { HTTPSKIT_PORT: 'eighty' } });
  assert.equal(env.code, 2);
});

test('C-4 failures exit 1 with one clear line: missing cert file, a key that is not PEM', async (t) => {
  const dir = await tempDir(t);
  const missing = await run(['--cert', join(dir, 'nope.pem'), '--key', join(dir, 'nope-key.pem'), '--port', '0', '--store', join(dir, 'u.json')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read the certificate \(--cert\) file .*nope\.pem.*ENOENT/);
  assert.equal(missing.stderr.trim().split('\n').length, 1);
  await writeFile(join(dir, 'cert.pem'), 'not a certificate');
  const notPem = await run(['--cert', join(dir, 'cert.pem'), '--key', join(dir, 'cert.pem'), '--port', '0', '--store', join(dir, 'u.json')]);
  assert.equal(notPem.code, 1);
  assert.match(notPem.stderr, /is not PEM/);
  assert.equal(notPem.stderr.trim().split('\n').length, 1);
  const { cert } = testCertificate();
  await writeFile(join(dir, 'good-cert.pem'), cert);
  const unreadableKey = await run(['--cert', join(dir, 'good-cert.pem'), '--key', dir, '--port', '0', '--store', join(dir, 'u.json')]);
  assert.equal(unreadableKey.code, 1);
  assert.match(unreadableKey.stderr, /cannot read the key \(--key\) file .*EISDIR/);
  assert.equal(unreadableKey.stderr.trim().split('\n').length, 1);
  // A PEM frame around junk (built in pieces, so no key-looking literal sits in the repository).
  await writeFile(join(dir, 'bad-key.pem'), pemFrame('PRIVATE KEY', 'AAAA'));
  const badKey = await run(['--cert', join(dir, 'good-cert.pem'), '--key', join(dir, 'bad-key.pem'), '--port', '0', '--store', join(dir, 'u.json')]);
  assert.equal(badKey.code, 1);
  assert.match(badKey.stderr, /cannot start/);
  assert.equal(badKey.stderr.trim().split('\n').length, 1);
  const corrupt = join(dir, 'corrupt.json');
  await writeFile(corrupt, '{ this is not json');
  const bad = await run(['--port', '0', '--store', corrupt, '--cert-dir', join(dir, 'certs')]);
  assert.equal(bad.code, 1, 'U-1 a store that does not parse stops the server');
  assert.match(bad.stderr, /corrupt|parse/i);
  assert.equal(await readFile(corrupt, 'utf8'), '{ this is not json', 'and it is never overwritten');
});

test('C-3 user add/list/passwd/del and reset-token; passwords only from stdin, never arguments', async (t) => {
  const dir = await tempDir(t);
  const store = ['--store', join(dir, 'users.json'), ...FAST];
  const add = await run(['user', 'add', 'alice', ...store], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const admin = await run(['user', 'add', 'root', '--admin', ...store], { input: 'boss-initial-passphrase-1\r\n' });
  assert.equal(admin.code, 0, admin.stderr);
  const dup = await run(['user', 'add', 'alice', ...store], { input: 'lemon-initial-passphrase-2\n' });
  assert.equal(dup.code, 1);
  const list = await run(['user', 'list', ...store]);
  assert.equal(list.code, 0);
  assert.deepEqual(list.stdout.trim().split('\n').map((l) => l.split('\t').slice(0, 2)), [['alice', 'user'], ['root', 'admin']]);
  assert.ok(!list.stdout.includes('scrypt'), 'no hashes in the listing');
  const weak = await run(['user', 'passwd', 'alice', ...store], { input: 'short\n' });
  assert.equal(weak.code, 1);
  assert.match(weak.stderr, /too-short/);
  const noInput = await run(['user', 'passwd', 'alice', ...store], { input: '' });
  assert.equal(noInput.code, 1);
  assert.match(noInput.stderr, /standard input/);
  const passwd = await run(['user', 'passwd', 'alice', ...store], { input: 'lemon-second-passphrase-2\n' });
  assert.equal(passwd.code, 0, passwd.stderr);
  const token = await run(['reset-token', 'alice', ...store]);
  assert.equal(token.code, 0, token.stderr);
  assert.match(token.stdout.trim(), /^[A-Za-z0-9_-]{43}$/);
  const raw = await readFile(join(dir, 'users.json'), 'utf8').catch(() => '') + (await readFile(join(dir, 'users.json.journal'), 'utf8').catch(() => ''));
  assert.ok(!raw.includes(token.stdout.trim()), 'P-9 only the token hash is stored');
  assert.ok(!raw.includes('lemon-second-passphrase-2'));
  const ghostToken = await run(['reset-token', 'ghost', ...store]);
  assert.equal(ghostToken.code, 1);
  const del = await run(['user', 'del', 'alice', ...store]);
  assert.equal(del.code, 0);
  const delAgain = await run(['user', 'del', 'alice', ...store]);
  assert.equal(delAgain.code, 1);
  const badName = await run(['user', 'add', 'a/b', ...store], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(badName.code, 1);
});

test('C-2 serve: flags and env; the CLI and the server share one store; SIGTERM exits 0 (C-5); JSON logs (C-6)', async (t) => {
  const dir = await tempDir(t);
  const storePath = join(dir, 'users.json');
  const certDir = join(dir, 'certs');
  const { child, url, output } = await serve(['--port', '0', '--cert-dir', certDir, '--http-port', '0'], {
    env: { HTTPSKIT_STORE: storePath, HTTPSKIT_SCRYPT_LN: '10' },
  });
  t.after(() => child.kill('SIGKILL'));
  const ca = await readFile(join(certDir, 'localhost-cert.pem'));
  const r = await request(`${url}/api/something?param1=cli`, { ca });
  assert.equal(r.status, 200);
  // A user added by the CLI while the server runs can change their password over HTTPS at once.
  const add = await run(['user', 'add', 'carol', '--store', storePath, ...FAST], { input: 'cedar-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const change = await request(`${url}/user/carol/password`, {
    ca,
    method: 'PUT',
    headers: { authorization: basic('carol', 'cedar-initial-passphrase-1'), 'content-type': 'text/plain' },
    body: 'cedar-second-passphrase-2',
  });
  assert.equal(change.status, 204);
  const list = await run(['user', 'list', '--store', storePath]);
  assert.match(list.stdout, /^carol\tuser/);
  child.kill('SIGTERM');
  assert.equal(await exited(child), 0);
  const lines = output().stdout.trim().split('\n').map((l) => JSON.parse(l));
  const listening = lines.find((l) => l.msg === 'listening');
  assert.match(listening.httpUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(lines.some((l) => l.level === 'warn' && /DEVELOPMENT/.test(l.msg)), 'T-2 development warning');
  const requests = lines.filter((l) => l.msg === 'request');
  assert.ok(requests.length >= 2);
  assert.ok(!output().stdout.includes('cedar-'), 'P-11 no password in the log');
});

test('P-2/P-5 curl as the client for both forms', async (t) => {
  if (!(await hasCurl())) {
    t.skip('curl is not installed');
    return;
  }
  const dir = await tempDir(t);
  const add = await run(['user', 'add', 'dave', '--store', join(dir, 'users.json'), ...FAST], { input: 'maple-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const { port, cacert } = await serveInTemp(t, dir, FAST);
  const curl = async (args: string[]) => (await execFileP('curl', ['-sS', '--cacert', cacert, '-o', '/dev/null', '-w', '%{http_code}', ...args])).stdout;
  assert.equal(
    await curl(['-u', 'dave:maple-initial-passphrase-1', '-X', 'PUT', '-H', 'Content-Type: text/plain', '--data-binary', 'maple-second-passphrase-2', `https://localhost:${port}/user/dave/password`]),
    '204',
  );
  assert.equal(
    await curl(['-u', 'dave:wrong-passphrase-guess', '-X', 'PUT', '-H', 'Content-Type: text/plain', '--data-binary', 'maple-third-passphrase-3', `https://localhost:${port}/user/dave/password`]),
    '401',
  );
  assert.equal(
    await curl([
      '-X', 'POST', '-H', 'Content-Type: application/json',
      '--data', '{"oldpasswd":"maple-second-passphrase-2","newpasswd":"maple-third-passphrase-3"}',
      `https://localhost:${port}/user/dave/resetpassword/`,
    ]),
    '204',
  );
  assert.equal(await curl(['-H', 'Accept: application/xml', `https://localhost:${port}/api/something?param1=curl`]), '200');
});

test('C-3 on a terminal the password is prompted twice without echo', async (t) => {
  const hasScript = await execFileP('script', ['--version']).then(() => true, () => false);
  if (!hasScript) {
    t.skip('util-linux `script` (to give the command a terminal) is not installed');
    return;
  }
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const onTerminal = (name: string, first: string, second: string) =>
    new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', `"${process.execPath}" "${BIN}" user add ${name} --store "${store}" --scrypt-ln 10`, '/dev/null'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let output = '';
      let typed = 0;
      child.stdout.on('data', (d: Buffer) => {
        output += d.toString();
        // Type each answer once its prompt has appeared.
        if (typed === 0 && output.includes('New password:')) child.stdin.write(`${first}\r`), (typed = 1);
        if (typed === 1 && output.includes('Repeat new password:')) child.stdin.write(`${second}\r`), (typed = 2);
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
  const ok = await onTerminal('tina', 'walnut-tty-passphrase-1', 'walnut-tty-passphrase-1');
  assert.equal(ok.code, 0, ok.output);
  assert.ok(!ok.output.includes('walnut-tty-passphrase-1'), 'not echoed');
  assert.match(ok.output, /added user "tina"/);
  const mismatch = await onTerminal('tony', 'walnut-tty-passphrase-1', 'walnut-tty-passphrase-2');
  assert.equal(mismatch.code, 1);
  assert.match(mismatch.output, /do not match/);
  const list = await run(['user', 'list', '--store', store]);
  assert.deepEqual(list.stdout.trim().split('\n').map((l) => l.split('\t')[0]), ['tina']);
});

function pemFrame(label: string, body: string): string {
  const dashes = '-'.repeat(5);
  return `${dashes}BEGIN ${label}${dashes}\n${body}\n${dashes}END ${label}${dashes}\n`;
}
