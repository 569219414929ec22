// The command line, as operators use it: CONTRACT C-1..C-6, with T-2 and U-1 across processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROTOCOLS, request } from '../helpers/https.js';
import { basic, testCertificate } from '../helpers/service.js';
import { BIN, CURL_PROTOCOL_FLAG, curlSkip, exited, run, serve, serveInTemp } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { openStore } from '../../lib/store/open.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';
import { randomBytes } from 'node:crypto';

const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; bin: Record<string, string> };
const FAST = ['--scrypt-ln', '10'];
const execFileP = promisify(execFile);

test('C-1 the first bin entry is the compiled command', () => {
  assert.equal(Object.values(pkg.bin)[0], 'dist/bin/httpskit.js');
});

test('C-4 --help lists commands, flags and their environment variables; --version', async () => {
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  for (const s of ['user add NAME [--admin] [--digest]', 'reset-token NAME', '--http-port', 'HTTPSKIT_PORT', 'HTTPSKIT_TRUST_PROXY', 'HTTPSKIT_DIGEST', 'Exit codes']) {
    assert.ok(help.stdout.includes(s), s);
  }
  const version = await run(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), pkg.version);
});

// --help after a command: that command's usage line and its own options, nothing else.
const commandHelp: ReadonlyArray<readonly [args: readonly string[], usage: string, has: readonly string[], hasNot: readonly string[]]> = [
  [['serve', '--help'], 'Usage: httpskit serve [options]', ['--port N', 'HTTPSKIT_PORT', '--trust-proxy', '--no-hsts', '--digest'], ['--admin', 'user add NAME', 'reset-token NAME']],
  [['user', '--help'], 'Usage: httpskit user COMMAND', ['user add NAME [--admin] [--digest]', 'user passwd NAME', 'user del NAME', 'user list'], ['--port', 'reset-token', 'serve']],
  [['user', 'add', '--help'], 'Usage: httpskit user add NAME [--admin] [--digest]', ['--admin', '--digest', 'HTTPSKIT_DIGEST', '--store', '--min-length', 'standard input'], ['--port', '--host', 'reset-token', 'user list']],
  [['user', 'add', '-h'], 'Usage: httpskit user add NAME [--admin] [--digest]', ['--admin'], ['--port']],
  [['user', 'passwd', '--help'], 'Usage: httpskit user passwd NAME [--digest]', ['--digest', '--store'], ['--admin', '--port']],
  [['user', 'list', '--help'], 'Usage: httpskit user list', ['--store', 'HTTPSKIT_STORE'], ['--digest', '--admin', '--port']],
  [['reset-token', '--help'], 'Usage: httpskit reset-token NAME', ['--store'], ['--port', '--digest', '--admin', 'user add']],
];
for (const [args, usage, has, hasNot] of commandHelp) {
  test(`C-4 ${args.join(' ')} prints that command's usage and options only, exit 0`, async () => {
    const r = await run(args);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.ok(r.stdout.startsWith(`${usage}`), r.stdout.split('\n')[0]);
    for (const s of has) assert.ok(r.stdout.includes(s), `has ${s}`);
    for (const s of hasNot) assert.ok(!r.stdout.includes(s), `has no ${s}`);
  });
}

// Each usage error: exit 2, one line on stderr naming what the user typed, never a library option name.
const LIBRARY_NAMES = /trustProxy|minPasswordLength|scrypt\.ln|hstsMaxAge|httpPort|certDir|ERR_/;
const usageErrors: ReadonlyArray<readonly [args: readonly string[], env: Record<string, string>, line: RegExp]> = [
  [['--frobnicate'], {}, /^httpskit: unknown option --frobnicate \(see httpskit serve --help\)$/],
  [['user', 'list', '--frobnicate=1'], {}, /^httpskit: unknown option --frobnicate \(see httpskit user list --help\)$/],
  [['--frob', 'bar', 'user', 'list'], {}, /^httpskit: unknown option --frob /],
  [['-x'], {}, /^httpskit: unknown option -x /],
  [['--admin'], {}, /^httpskit: --admin does not apply to serve /],
  [['serve', '--admin'], {}, /^httpskit: --admin does not apply to serve /],
  [['user', 'list', '--digest'], {}, /^httpskit: --digest does not apply to user list /],
  [['user', 'passwd', 'bob', '--admin'], {}, /^httpskit: --admin does not apply to user passwd /],
  [['reset-token', 'bob', '--port', '1'], {}, /^httpskit: --port does not apply to reset-token /],
  [['user'], {}, /^httpskit user: missing command \(add, passwd, del, list[,)]/],
  [['user', 'nope', 'x'], {}, /^httpskit user: unknown command "nope" \(add, passwd, del, list[,)]/],
  [['frobnicate'], {}, /^httpskit: unknown command "frobnicate" \(serve, user, reset-token[,)]/],
  [['user', 'add'], {}, /^httpskit user add: missing NAME /],
  [['user', 'add', 'a', 'b'], {}, /^httpskit user add: unexpected argument "b" /],
  [['serve', 'x'], {}, /^httpskit serve: unexpected argument "x" /],
  [['--port'], {}, /^httpskit: --port needs a value /],
  [['--port', '--store', 'x'], {}, /^httpskit: --port needs a value /],
  [['--port', '70000'], {}, /^httpskit: --port must be an integer from 0 to 65535, got 70000 /],
  [['--port', 'abc'], {}, /^httpskit: --port must be a whole number, got "abc" /],
  [['--metrics-port', '8443'], {}, /^httpskit: --metrics-port: 8443 is also the HTTPS port; each listener needs a port of its own \(see httpskit serve --help\)$/],
  [['--port', '9000', '--http-port', '9000'], {}, /^httpskit: --http-port: 9000 is also the HTTPS port; /],
  [['--http-port', '9001'], { HTTPSKIT_METRICS_PORT: '9001' }, /^httpskit: HTTPSKIT_METRICS_PORT: 9001 is also the plain HTTP port; /],
  [['--digest=yes'], {}, /^httpskit: --digest takes no value, got "yes" /],
  [['--trust-proxy', 'notanip'], {}, /^httpskit: --trust-proxy\b.*"notanip"/],
  [['--min-length', '3'], {}, /^httpskit: --min-length must be an integer from 8 to 64, got 3 /],
  [['user', 'add', 'bob', '--min-length', '3'], {}, /^httpskit: --min-length must be an integer from 8 to 64, got 3 \(see httpskit user add --help\)$/],
  [['--scrypt-ln', '30'], {}, /^httpskit: --scrypt-ln "30": /],
  [['--host', '999.1.1.1'], {}, /^httpskit: --host must be an IP address or a host name, got "999\.1\.1\.1" /],
  [['--host', 'bad_host!'], {}, /^httpskit: --host must be an IP address or a host name, got "bad_host!" /],
  [['--cert', 'x.pem'], {}, /^httpskit: --cert needs a key too /],
  [['--store', ''], {}, /^httpskit: --store must not be empty /],
  [['--cert', '', '--key', 'k.pem'], {}, /^httpskit: --cert must not be empty /],
  [['--key', ''], {}, /^httpskit: --key must not be empty /],
  // Not a file path: a URL of another scheme (its password not shown), a near miss of :memory:.
  [['user', 'list', '--store', 'mysql://app:s3cret@db/users'], {}, /^httpskit: --store: a "mysql:" URL is no store this service knows; .*"mysql:\/\/app:\*\*\*@db\/users"/],
  [['--store', ':memory'], {}, /^httpskit: --store: ":memory" is no store; the store in memory is :memory: /],
  // Near misses of a PostgreSQL URL and URLs that do not parse: refused as usage errors, no password shown (S-1, P-11).
  [['user', 'list', '--store', 'postgres:/app:s3cret@db:5432/users'], {}, /^httpskit: --store: postgres:\/app:\*\*\*@db:5432\/users is no PostgreSQL URL; one starts with postgres:\/\/ /],
  [['user', 'list', '--store', 'postgresql:app:s3cret@db/users'], {}, /^httpskit: --store: postgresql:app:\*\*\*@db\/users is no PostgreSQL URL/],
  [['user', 'list', '--store', 'postgres//app:s3cret@db/users'], {}, /^httpskit: --store: postgres\/\/app:\*\*\*@db\/users is no PostgreSQL URL/],
  [['user', 'list', '--store', ' postgres://app:s3cret@db/users'], {}, /^httpskit: --store: the PostgreSQL URL " postgres:\/\/app:\*\*\*@db\/users" has white space around it/],
  [['user', 'list'], { HTTPSKIT_STORE: 'postgres://app:s3cret@127.0.0.1:notaport/users' }, /^httpskit: HTTPSKIT_STORE: postgres:\/\/app:\*\*\*@127\.0\.0\.1:notaport\/users is no URL \(a port is a number up to 65535/],
  [['user', 'list', '--store', 'postgres://app:p@ss-s3cret@127.0.0.1:99999/users'], {}, /^httpskit: --store: postgres:\/\/app:\*\*\*@127\.0\.0\.1:99999\/users is no URL /],
  [['user', 'list', '--store', 'postgres://app:s3cret/x@[::1/users'], {}, /^httpskit: --store: postgres:\/\/app:\*\*\*@\[::1\/users is no URL /],
  [[], { HTTPSKIT_PORT: 'eighty' }, /^httpskit: HTTPSKIT_PORT must be a whole number, got "eighty" /],
  [[], { HTTPSKIT_PORT: '99999' }, /^httpskit: HTTPSKIT_PORT must be an integer from 0 to 65535, got 99999 /],
  [[], { HTTPSKIT_TRUST_PROXY: 'notanip' }, /^httpskit: HTTPSKIT_TRUST_PROXY\b.*"notanip"/],
  [[], { HTTPSKIT_MIN_LENGTH: '3' }, /^httpskit: HTTPSKIT_MIN_LENGTH must be an integer from 8 to 64, got 3 /],
  [[], { HTTPSKIT_HOST: '999.1.1.1' }, /^httpskit: HTTPSKIT_HOST must be an IP address or a host name, got "999\.1\.1\.1" /],
  [[], { HTTPSKIT_KEY: 'k.pem' }, /^httpskit: HTTPSKIT_KEY needs a certificate too /],
  [['user', 'add', 'bob'], { HTTPSKIT_SCRYPT_LN: 'x' }, /^httpskit: HTTPSKIT_SCRYPT_LN must be a whole number, got "x" /],
  // Boolean variables take exactly what the message says: 1, true, 0 or false.
  ...['maybe', 'yes', 'on', 'no', 'TRUE', ' 1'].flatMap((value) => [
    [[], { HTTPSKIT_DIGEST: value }, new RegExp(`^httpskit: HTTPSKIT_DIGEST must be 1, true, 0 or false, got "${value}" `)] as const,
    [[], { HTTPSKIT_NO_HSTS: value }, new RegExp(`^httpskit: HTTPSKIT_NO_HSTS must be 1, true, 0 or false, got "${value}" `)] as const,
  ]),
  [['user', 'add', 'bob'], { HTTPSKIT_DIGEST: 'maybe' }, /^httpskit: HTTPSKIT_DIGEST must be 1, true, 0 or false, got "maybe" \(see httpskit user add --help\)$/],
];
test('C-4 usage errors exit 2 with one clear line naming the flag or variable the user typed', async (t) => {
  const dir = await tempDir(t);
  for (const [args, env, line] of usageErrors) {
    const what = `${Object.entries(env).map(([k, v]) => `${k}=${v} `).join('')}${args.join(' ')}`;
    const r = await run(args, { env, cwd: dir, input: 'lemon-initial-passphrase-1\n' });
    assert.equal(r.code, 2, `${what}: ${r.stderr}`);
    assert.equal(r.stderr.split('\n').length, 2, `${what}: one line: ${r.stderr}`);
    assert.match(r.stderr.trim(), line, what);
    assert.doesNotMatch(r.stderr, LIBRARY_NAMES, what);
    assert.doesNotMatch(r.stderr, /s3cret/, `${what}: a password is never shown`);
  }
  assert.deepEqual(await readdir(dir), [], 'a usage error creates nothing (no store, no certificate)');
});

test('C-4 `user` alone prints the user commands on stdout and one error line on stderr', async () => {
  const r = await run(['user']);
  assert.equal(r.code, 2);
  assert.match(r.stdout, /^Usage: httpskit user COMMAND/);
  assert.ok(r.stdout.includes('user add NAME [--admin] [--digest]'));
  assert.equal(r.stderr.trim().split('\n').length, 1);
});

test('C-2 boolean variables: 1/true turn a flag on, 0/false/empty leave it off (HTTPSKIT_NO_HSTS, HTTPSKIT_DIGEST)', async (t) => {
  for (const [value, on] of [['1', true], ['true', true], ['0', false], ['false', false], ['', false]] as const) {
    const dir = await tempDir(t);
    const { cacert, url } = await serveInTemp(t, dir, FAST, { HTTPSKIT_NO_HSTS: value, HTTPSKIT_DIGEST: value });
    const ca = await readFile(cacert);
    const r = await request(`${url}/api/something`, { ca });
    assert.equal(r.status, 200);
    assert.equal(r.headers['strict-transport-security'] === undefined, on, `HTTPSKIT_NO_HSTS=${value}`);
    const challenge = await request(`${url}/user/nobody/password`, { ca, method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(challenge.status, 401);
    assert.equal(/Digest/.test(String(challenge.headers['www-authenticate'])), on, `HTTPSKIT_DIGEST=${value}`);
  }
});

test('U-1 a read-only command on a store that does not exist exits 1, says so, and creates nothing', async (t) => {
  const dir = await tempDir(t);
  const missing = join(dir, 'no', 'such', 'dir', 'users.json');
  const cases: ReadonlyArray<readonly [args: readonly string[], env: Record<string, string>]> = [
    [['user', 'list', '--store', missing], {}],
    [['user', 'list'], { HTTPSKIT_STORE: missing }],
    [['user', 'passwd', 'alice', '--store', missing, ...FAST], {}],
    [['user', 'del', 'alice', '--store', missing], {}],
    [['reset-token', 'alice', '--store', missing], {}],
  ];
  for (const [args, env] of cases) {
    const r = await run(args, { env, input: 'lemon-initial-passphrase-1\n' });
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.split('\n').length, 2, r.stderr);
    assert.ok(r.stderr.startsWith(`httpskit: no user store at ${missing} `), r.stderr);
  }
  // The relative default, from another working directory.
  const cwd = join(dir, 'empty');
  await mkdir(cwd);
  const byDefault = await run(['user', 'list'], { cwd });
  assert.equal(byDefault.code, 1);
  assert.ok(byDefault.stderr.includes(join(cwd, 'data', 'users.json')), byDefault.stderr);
  assert.deepEqual(await readdir(dir), ['empty']);
  assert.deepEqual(await readdir(cwd), []);
  // A command that writes creates the store; then reading it works.
  const add = await run(['user', 'add', 'alice', '--store', missing, ...FAST], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const list = await run(['user', 'list', '--store', missing]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^alice\tuser\t/);
});

test('U-2 user add refuses a bad name before the store is created, naming the name and the rule (a name that looks like another through an invisible Hangul filler too)', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  for (const [name, rule] of [['a/b', 'forbidden-character'], ['alice\u3164', 'invisible-character']] as const) {
    const r = await run(['user', 'add', name, '--store', store, ...FAST], { input: 'lemon-initial-passphrase-1\n' });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `httpskit: invalid user name "${name}" (${rule})\n`);
  }
  assert.deepEqual(await readdir(dir), []);
});

test(
  'U-2 (amended) user add refuses a name ending in .json or .xml',
  async (t) => {
    const dir = await tempDir(t);
    const store = join(dir, 'users.json');
    for (const name of ['report.json', 'Report.XML']) {
      const r = await run(['user', 'add', name, '--store', store, ...FAST], { input: 'lemon-initial-passphrase-1\n' });
      assert.equal(r.code, 1, name);
      assert.equal(r.stderr.split('\n').length, 2, r.stderr);
      assert.ok(r.stderr.startsWith(`httpskit: invalid user name "${name}" (`), r.stderr);
    }
    assert.deepEqual(await readdir(dir), []);
  },
);

test('C-2 a start that cannot listen leaves no new development certificate, keeps one that was there, and drops no Digest secret (P-10)', async (t) => {
  const dir = await tempDir(t);
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.after(() => blocker.close());
  const port = String((blocker.address() as AddressInfo).port);
  const certDir = join(dir, 'certs');
  const storePath = join(dir, 'users.json');
  const args = ['--port', port, '--cert-dir', certDir, '--store', storePath, ...FAST];
  // A Digest user, as a Digest server on that port would have them (P-10).
  const add = await run(['user', 'add', 'dora', '--digest', '--store', storePath, ...FAST], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const hasSecret = async (): Promise<boolean> => {
    const store = await openStore(storePath);
    try {
      return (await store.get('dora'))?.digest !== undefined;
    } finally {
      await store.close();
    }
  };
  assert.equal(await hasSecret(), true);
  const busy = await run(args);
  assert.equal(busy.code, 1, busy.stderr);
  assert.match(busy.stderr, /^httpskit: cannot start: .*EADDRINUSE.*\n$/);
  assert.deepEqual(await readdir(certDir).catch((error: NodeJS.ErrnoException) => error.code), 'ENOENT', 'no certificate, nor the directory made for it');
  const fresh = await run(['--port', port, '--cert-dir', join(dir, 'a', 'b', 'certs'), '--store', join(dir, 'a', 'users.json'), ...FAST]);
  assert.equal(fresh.code, 1);
  assert.match(fresh.stderr, /^httpskit: cannot start: .*EADDRINUSE.*\n$/);
  assert.deepEqual(await readdir(dir).then((names) => names.filter((n) => n === 'a')), [], 'the busy port is found before a store or a certificate directory is made');
  assert.equal(await hasSecret(), true, 'a start without --digest that failed drops no Digest secret');
  // A certificate made by an earlier, successful start stays.
  const { cacert } = await serveInTemp(t, dir, FAST);
  const before = await readFile(cacert, 'utf8');
  const again = await run(args);
  assert.equal(again.code, 1);
  assert.equal(await readFile(cacert, 'utf8'), before);
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
  const store = ['--store', join(dir, 'users.json')];
  const hashing = [...store, ...FAST];
  // C-2: values are checked before anything is written: a refused password leaves no store behind.
  const refused = await run(['user', 'add', 'alice', ...hashing], { input: 'short\n' });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /too-short/);
  assert.deepEqual(await readdir(dir), [], 'no store was created for a refused password');
  const add = await run(['user', 'add', 'alice', ...hashing], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const admin = await run(['user', 'add', 'root', '--admin', ...hashing], { input: 'boss-initial-passphrase-1\r\n' });
  assert.equal(admin.code, 0, admin.stderr);
  const dup = await run(['user', 'add', 'alice', ...hashing], { input: 'lemon-initial-passphrase-2\n' });
  assert.equal(dup.code, 1);
  const list = await run(['user', 'list', ...store]);
  assert.equal(list.code, 0);
  assert.deepEqual(list.stdout.trim().split('\n').map((l) => l.split('\t').slice(0, 2)), [['alice', 'user'], ['root', 'admin']]);
  assert.ok(!list.stdout.includes('scrypt'), 'no hashes in the listing');
  const weak = await run(['user', 'passwd', 'alice', ...hashing], { input: 'short\n' });
  assert.equal(weak.code, 1);
  assert.match(weak.stderr, /too-short/);
  const noInput = await run(['user', 'passwd', 'alice', ...hashing], { input: '' });
  assert.equal(noInput.code, 1);
  assert.match(noInput.stderr, /standard input/);
  const passwd = await run(['user', 'passwd', 'alice', ...hashing], { input: 'lemon-second-passphrase-2\n' });
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
  const badName = await run(['user', 'add', 'a/b', ...hashing], { input: 'lemon-initial-passphrase-1\n' });
  assert.equal(badName.code, 1);
});

// H-1: the served port speaks both protocols; what the command sets up holds for each.
for (const protocol of PROTOCOLS) test(`C-2 serve: flags and env; the CLI and the server share one store; SIGTERM exits 0 (C-5); JSON logs (C-6) (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const storePath = join(dir, 'users.json');
  const certDir = join(dir, 'certs');
  const { child, url, output } = await serve(['--port', '0', '--cert-dir', certDir, '--http-port', '0'], {
    env: { HTTPSKIT_STORE: storePath, HTTPSKIT_SCRYPT_LN: '10' },
  });
  t.after(() => child.kill('SIGKILL'));
  const ca = await readFile(join(certDir, 'localhost-cert.pem'));
  const r = await request(`${url}/api/something?param1=cli`, { ca, protocol });
  assert.equal(r.status, 200);
  // A user added by the CLI while the server runs can change their password over HTTPS at once.
  const add = await run(['user', 'add', 'carol', '--store', storePath, ...FAST], { input: 'cedar-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const change = await request(`${url}/user/carol/password`, {
    ca,
    protocol,
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

for (const protocol of PROTOCOLS) test(`P-2/P-5 curl as the client for both forms (${protocol})`, async (t) => {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return t.skip(skip);
  const dir = await tempDir(t);
  const add = await run(['user', 'add', 'dave', '--store', join(dir, 'users.json'), ...FAST], { input: 'maple-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const { port, cacert } = await serveInTemp(t, dir, FAST);
  const curl = async (args: string[]) =>
    (await execFileP('curl', ['-sS', CURL_PROTOCOL_FLAG[protocol], '--cacert', cacert, '-o', '/dev/null', '-w', '%{http_version} %{http_code}', ...args])).stdout.replace(protocol === 'h2' ? /^2 / : /^1\.1 /, '');
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

test('C-6 a reader that goes away (`httpskit serve | head -1`, `user list | head -0`) ends no server and fails no command', async (t) => {
  const dir = await tempDir(t);
  const certDir = join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  const { child, url, output } = await serve(['--port', '0', '--http-port', '0', '--cert-dir', certDir, '--store', join(dir, 'users.json')]);
  t.after(() => child.kill('SIGKILL'));
  // The log's reader closes: the next lines written to it fail with EPIPE.
  child.stdout?.destroy();
  const ca = await readFile(join(certDir, 'localhost-cert.pem'));
  for (let i = 0; i < 5; i++) {
    const r = await request(`${url}/api/something.json?param1=${i}`, { ca });
    assert.equal(r.status, 200, `request ${i}`);
    // Past the log's batching delay, so that the lines of each request are written (and fail).
    await new Promise((resolve) => setTimeout(resolve, 120));
  }
  assert.equal(child.exitCode, null, `the server is still running: ${output().stderr}`);
  child.kill('SIGTERM');
  assert.equal(await exited(child), 0);
  assert.doesNotMatch(output().stderr, /EPIPE|Unhandled/);

  const store = ['--store', join(dir, 'users.json')];
  assert.equal((await run(['user', 'add', 'alice', ...store, ...FAST], { input: 'lemon-initial-passphrase-1\n' })).code, 0);
  const list = spawn(process.execPath, [BIN, 'user', 'list', ...store], { stdio: ['ignore', 'pipe', 'pipe'] });
  list.stdout.destroy();
  let stderr = '';
  list.stderr.on('data', (d) => (stderr += d));
  assert.equal(await exited(list), 0, stderr);
  assert.equal(stderr, '');
});

test('C-2 serve checks what it can before it writes: a key not of its certificate, a host that does not resolve, a --cert-dir or --digest-key that cannot be used leave no store and no certificate behind (exit 1, one line)', async (t) => {
  const dir = await tempDir(t);
  const one = createSelfSignedCertificate();
  const other = createSelfSignedCertificate();
  await writeFile(join(dir, 'a.crt'), one.cert);
  await writeFile(join(dir, 'b.key'), other.key, { mode: 0o600 });
  await writeFile(join(dir, 'a-file'), 'not a directory');
  await mkdir(join(dir, 'a-dir'));
  await writeFile(join(dir, 'open.key'), randomBytes(32), { mode: 0o644 });
  await mkdir(join(dir, 'open-dir'));
  await chmod(join(dir, 'open-dir'), 0o777);
  const cases: [string[], RegExp][] = [
    [['--cert', 'a.crt', '--key', 'b.key'], /the key does not belong to the certificate/],
    [['--host', 'nosuchhost.invalid'], /host "nosuchhost\.invalid" does not resolve/],
    [['--cert-dir', 'a-file'], /a-file" is not a directory/],
    [['--digest', '--digest-key', 'a-dir'], /digest key .*a-dir is not a regular file/],
    ...(process.platform === 'win32'
      ? []
      : ([
          [['--digest', '--digest-key', 'open.key'], /open to group or others/],
          [['--cert-dir', 'open-dir'], /unsafe development certificate: the development certificate's directory .*open-dir is writable by others/],
        ] as [string[], RegExp][])),
  ];
  for (const [args, message] of cases) {
    const r = await run(['serve', '--port', '0', '--scrypt-ln', '10', ...args], { cwd: dir });
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    const left = (await readdir(dir)).sort();
    assert.deepEqual(left, ['a-dir', 'a-file', 'a.crt', 'b.key', 'open-dir', 'open.key'], `${args.join(' ')} left ${left.join(', ')}`);
  }
});
