// The store's files on disk against another local user (CONTRACT U-1, amended 2026-11-22): a
// store, journal, lock or Digest key planted by someone else is refused, never used; files too
// open are narrowed to 0600 or refused; a directory others could write is refused; and every path
// to one store (symbolic links to the file or to its directory) is the same store, with one lock.
// Over real files and real processes: the attacker's files are written as `nobody` (setpriv).
// Its few HTTP requests only show which store the server uses: HTTP/1.1 suffices (H-1 is covered elsewhere).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmod, chown, link, lstat, mkdir, readdir, readFile, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createService } from '../../lib/index.js';
import { openStore } from '../../lib/store/open.js';
import { BIN, exited, run, serve } from '../helpers/cli.js';
import { request } from '../helpers/https.js';
import { basic, FAST_SCRYPT, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';
import { NOBODY_UID, NOGROUP_GID, otherUserSkip, writeAsNobody } from './helpers/other-user.js';

const FAST = ['--scrypt-ln', '10'];
const posix = process.platform !== 'win32';
const asRoot = otherUserSkip();
const PLANTED_PASSWORD = 'planted-passphrase-of-the-attacker';

/** A directory like /tmp: everyone may create files, only a file's owner may rename or delete it. */
async function sharedDir(t: TestContext): Promise<string> {
  const dir = await tempDir(t);
  await chmod(dir, 0o755); // nobody must be able to reach the shared directory inside
  const shared = join(dir, 'shared');
  await mkdir(shared);
  await chmod(shared, 0o1777);
  return shared;
}

/** The bytes of a store holding one admin, mallory, as an attacker would prepare them. */
async function plantedAdminStore(t: TestContext): Promise<{ snapshot: Buffer; journal: Buffer }> {
  const path = join(await tempDir(t), 'users.json');
  const service = createService({ store: path, scrypt: FAST_SCRYPT, log: false });
  await service.users.add('mallory', PLANTED_PASSWORD, { role: 'admin' });
  await service.close();
  return { snapshot: await readFile(path), journal: await readFile(`${path}.journal`) };
}

/** A store of our own, holding alice. */
async function ourStore(path: string, options: { digest?: boolean } = {}): Promise<void> {
  const service = createService({ store: path, scrypt: FAST_SCRYPT, log: false, ...options });
  await service.users.add('alice', 'tangerine-initial-passphrase-1');
  await service.close();
}

function service(store: string, logs: string[] = [], options: { digest?: boolean } = {}) {
  const { cert, key } = testCertificate();
  return createService({ port: 0, store, cert, key, scrypt: FAST_SCRYPT, log: (line) => logs.push(line), ...options });
}

/** listen() must refuse with ERR_STORE_UNSAFE and a message matching `message`. */
async function assertRefused(t: TestContext, store: string, message: RegExp, options: { digest?: boolean } = {}): Promise<void> {
  const s = service(store, [], options);
  t.after(() => s.close(100));
  await assert.rejects(s.listen(), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'ERR_STORE_UNSAFE', error.message);
    assert.match(error.message, message);
    assert.equal(error.message.split('\n').length, 1);
    return true;
  });
}

async function owner(path: string): Promise<{ uid: number; mode: number }> {
  const info = await stat(path);
  return { uid: info.uid, mode: info.mode & 0o777 };
}

/** `serve` run to its exit; one that starts listening instead is killed and reported as such. */
async function serveOrExit(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  try {
    const { child, output } = await serve(args);
    child.kill('SIGKILL');
    await exited(child);
    return { code: null, stdout: `serve started listening\n${output().stdout}`, stderr: output().stderr };
  } catch (error) {
    const match = /^serve exited with (\d+): ([^]*)$/.exec((error as Error).message);
    if (match === null) throw error;
    return { code: Number(match[1]), stdout: '', stderr: match[2] ?? '' };
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

test('U-1 a store planted by another user in a shared 1777 directory is refused, and left exactly as it was', { skip: asRoot }, async (t) => {
  const shared = await sharedDir(t);
  const store = join(shared, 'users.json');
  const planted = await plantedAdminStore(t);
  await writeAsNobody(store, planted.snapshot);
  await writeAsNobody(`${store}.journal`, planted.journal);

  await assertRefused(t, store, new RegExp(`${escape(store)} is owned by user ${NOBODY_UID} \\(nobody\\), not by user 0`));
  const embedder = service(store);
  t.after(() => embedder.close(100));
  await assert.rejects(embedder.users.list(), { code: 'ERR_STORE_UNSAFE' });
  await assert.rejects(embedder.users.setPassword('alice', 'tangerine-second-passphrase-2'), { code: 'ERR_STORE_UNSAFE' });

  // Nothing was narrowed, chowned, rewritten or added beside it: the operator finds it as planted.
  assert.deepEqual(await owner(store), { uid: NOBODY_UID, mode: 0o666 });
  assert.deepEqual(await owner(`${store}.journal`), { uid: NOBODY_UID, mode: 0o666 });
  assert.deepEqual(await readFile(store), planted.snapshot);
  assert.deepEqual(await readFile(`${store}.journal`), planted.journal);
  assert.deepEqual((await readdir(shared)).sort(), ['users.json', 'users.json.journal']);
});

test('U-1 CLI: a planted store makes every command exit 1 with one line naming the file and the fix', { skip: asRoot }, async (t) => {
  const shared = await sharedDir(t);
  const store = join(shared, 'users.json');
  const planted = await plantedAdminStore(t);
  await writeAsNobody(store, planted.snapshot);
  await writeAsNobody(`${store}.journal`, planted.journal);
  const certDir = join(await tempDir(t), 'certs');

  const runs = {
    'user list': await run(['user', 'list', '--store', store]),
    'user passwd': await run(['user', 'passwd', 'alice', '--store', store, ...FAST], { input: 'tangerine-second-passphrase-2\n' }),
    serve: await serveOrExit(['--port', '0', '--cert-dir', certDir, '--store', store]),
  };
  for (const [what, r] of Object.entries(runs)) {
    assert.equal(r.code, 1, `${what}: ${r.stderr}`);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `${what}: ${r.stderr}`);
    assert.match(lines[0] ?? '', new RegExp(`^httpskit: .*unsafe users store: ${escape(store)} is owned by user ${NOBODY_UID} \\(nobody\\).*sudo -u nobody.*move it away`), what);
    assert.equal(r.stdout.includes('mallory'), false, what);
  }
  assert.deepEqual(await readFile(`${store}.journal`), planted.journal);
  assert.deepEqual(await owner(store), { uid: NOBODY_UID, mode: 0o666 });
});

test('U-1 a side file planted by another user beside our store is refused (journal, lock, temporary file, ledger, Digest key)', { skip: asRoot }, async (t) => {
  const planted = await plantedAdminStore(t);
  const lock = `${JSON.stringify({ pid: 999_999_999, host: hostname(), nonce: 'planted', at: new Date().toISOString() })}\n`;
  const cases = [
    // Absent files someone else may create in a sticky directory: our journal removed by the operator, a lock, a temporary file.
    { file: 'users.json.journal', bytes: planted.journal, mode: 0o666, digest: false },
    { file: 'users.json.lock', bytes: Buffer.from(lock), mode: 0o644, digest: false },
    { file: 'users.json.tmp', bytes: planted.snapshot, mode: 0o600, digest: false },
    // The throttle and nonce ledger: a planted one could lift a lockout or replay a Digest nonce.
    { file: 'users.json.ledger', bytes: Buffer.from('{"a":["alice",0,0]}\n'), mode: 0o666, digest: false },
    // A key the attacker knows would let them read every sealed Digest secret; mode 0600 so ownership alone decides.
    { file: 'digest.key', bytes: Buffer.alloc(32, 7), mode: 0o600, digest: true },
  ];
  for (const c of cases) {
    await t.test(c.file, async (t) => {
      const shared = await sharedDir(t);
      const store = join(shared, 'users.json');
      await ourStore(store);
      await rm(join(shared, c.file), { force: true });
      await writeAsNobody(join(shared, c.file), c.bytes, c.mode);
      await assertRefused(t, store, new RegExp(`${escape(join(shared, c.file))} is owned by user ${NOBODY_UID}`), { digest: c.digest });
      const cli = await run(['user', 'passwd', 'alice', '--store', store, ...FAST, ...(c.digest ? ['--digest'] : [])], { input: 'tangerine-second-passphrase-2\n' });
      assert.equal(cli.code, 1, cli.stderr);
      assert.equal(cli.stderr.trim().split('\n').length, 1);
      assert.ok(cli.stderr.includes(join(shared, c.file)), cli.stderr);
      assert.deepEqual(await readFile(join(shared, c.file)), c.bytes, 'the planted file is left as it was');
    });
  }
});

test('U-1 a journal planted after start (where ours was missing) is refused at the next read, never applied', { skip: asRoot }, async (t) => {
  const shared = await sharedDir(t);
  const store = join(shared, 'users.json');
  await ourStore(store);
  const s = service(store);
  t.after(() => s.close(100));
  await s.listen();
  const planted = await plantedAdminStore(t);
  // Our store's generation is 0, as is the planted journal's, so old code would apply its lines.
  await unlink(`${store}.journal`);
  await writeAsNobody(`${store}.journal`, planted.journal);
  await assert.rejects(s.users.list(), { code: 'ERR_STORE_UNSAFE' });
  await assert.rejects(s.users.verify('mallory', PLANTED_PASSWORD), { code: 'ERR_STORE_UNSAFE' });
});

test('U-1 our own files open to group or others are narrowed to 0600, with a warning naming each', { skip: !posix && 'POSIX modes only' }, async (t) => {
  const shared = await sharedDir(t);
  const store = join(shared, 'users.json');
  await ourStore(store);
  await chmod(store, 0o666);
  await chmod(`${store}.journal`, 0o644);
  const logs: string[] = [];
  const s = service(store, logs);
  t.after(() => s.close(100));
  await s.listen();
  assert.equal((await owner(store)).mode, 0o600);
  assert.equal((await owner(`${store}.journal`)).mode, 0o600);
  const warnings = logs.map((line) => JSON.parse(line) as { level: string; msg: string; file?: string; was?: string }).filter((l) => l.level === 'warn' && l.msg.includes('narrowed'));
  assert.deepEqual(
    warnings.map((w) => [w.file, w.was]),
    [
      [store, '0666'],
      [`${store}.journal`, '0644'],
    ],
  );
  assert.equal((await s.users.list()).length, 1);
});

test('U-1 a store file whose mode cannot be narrowed is refused, not used as is', { skip: asRoot }, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  await ourStore(store);
  await chmod(store, 0o644);
  // An immutable file refuses chmod even to root: the closest a test can get to a chmod that fails.
  const immutable = spawnSync('chattr', ['+i', store], { encoding: 'utf8' });
  if (immutable.error !== undefined || immutable.status !== 0) {
    t.skip(`chattr +i is not available here (${immutable.error?.message ?? immutable.stderr.trim()})`);
    return;
  }
  // Not t.after: the temporary directory's removal, registered first, would run first and fail.
  try {
    await assertRefused(t, store, new RegExp(`${escape(store)} has mode 0644 \\(open to group or others\\) and could not be narrowed to 0600: EPERM`));
    const cli = await run(['user', 'list', '--store', store]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /^httpskit: unsafe users store: .* could not be narrowed to 0600.*chmod 600/);
  } finally {
    spawnSync('chattr', ['-i', store]);
  }
});

test('U-1 a store in a directory another user could write (or above one) is refused, and nothing is created', { skip: asRoot }, async (t) => {
  const cases: { name: string; setup: (dir: string) => Promise<string>; culprit: (dir: string) => string; problem: RegExp }[] = [
    { name: 'store directory 0777, no sticky bit', setup: async (d) => (await chmod(d, 0o777), join(d, 'users.json')), culprit: (d) => d, problem: /writable by others \(mode 0777\) without the sticky bit/ },
    {
      name: 'a directory above it 0777, no sticky bit',
      setup: async (d) => (await chmod(d, 0o777), await mkdir(join(d, 'private'), { mode: 0o700 }), join(d, 'private', 'users.json')),
      culprit: (d) => d,
      problem: /above the users store, is writable by others/,
    },
    { name: 'store directory owned by nobody', setup: async (d) => (await chown(d, NOBODY_UID, NOGROUP_GID), join(d, 'users.json')), culprit: (d) => d, problem: /is owned by user 65534 \(nobody\), who could replace/ },
    {
      name: 'store directory group-writable by another group',
      setup: async (d) => (await chown(d, 0, NOGROUP_GID), await chmod(d, 0o775), join(d, 'users.json')),
      culprit: (d) => d,
      problem: /writable by group 65534 \(mode 0775\)/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const dir = join(await tempDir(t), 'store');
      await mkdir(dir, { mode: 0o700 });
      const store = await c.setup(dir);
      await assertRefused(t, store, new RegExp(`${escape(c.culprit(dir))}.*${c.problem.source}`));
      const cli = await run(['user', 'add', 'alice', '--store', store, ...FAST], { input: 'tangerine-initial-passphrase-1\n' });
      assert.equal(cli.code, 1, cli.stderr);
      assert.equal(cli.stderr.trim().split('\n').length, 1);
      assert.match(cli.stderr, c.problem);
      await assert.rejects(stat(store), { code: 'ENOENT' }, 'no store was created there');
      // Nor a directory for one inside it.
      const nested = join(dir, 'new', 'users.json');
      const deeper = await run(['user', 'add', 'alice', '--store', nested, ...FAST], { input: 'tangerine-initial-passphrase-1\n' });
      assert.equal(deeper.code, 1, deeper.stderr);
      await assert.rejects(stat(join(dir, 'new')), { code: 'ENOENT' }, 'no directory was created there');
    });
  }
});

test('U-1 a symlinked store file is the same store: journal, lock and Digest key live beside the real file', { skip: !posix && 'symbolic links' }, async (t) => {
  const real = join(await tempDir(t), 'real');
  const other = join(await tempDir(t), 'other');
  await mkdir(real, { mode: 0o700 });
  await mkdir(other, { mode: 0o700 });
  await ourStore(join(real, 'users.json'));
  const link = join(other, 'users.json');
  await symlink(join(real, 'users.json'), link);

  const viaLink = createService({ store: link, digest: true, scrypt: FAST_SCRYPT, log: false });
  await viaLink.users.add('bob', 'cobalt-initial-passphrase-12');
  await viaLink.close();
  assert.ok((await lstat(link)).isSymbolicLink(), 'the link is still a link');
  assert.deepEqual(await readdir(other), ['users.json'], 'no journal, lock or Digest key beside the link');
  assert.equal((await stat(join(real, 'digest.key'))).size, 32, 'the default Digest key is beside the real file, where a server via the real path looks');
  assert.match(await readFile(join(real, 'users.json.journal'), 'utf8'), /"name":"bob"/);
  const viaReal = await openStore(join(real, 'users.json'));
  assert.deepEqual((await viaReal.list()).map((u) => u.name), ['alice', 'bob']);
  await viaReal.close();

  // One lock: held at the real file, it holds the link's openers too.
  const lock = join(real, 'users.json.lock');
  await writeFile(lock, `${JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'test', at: new Date().toISOString() })}\n`, { mode: 0o600 });
  await assert.rejects(openStore(link, { lockTimeoutMs: 200 }), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'ERR_STORE_LOCKED');
    assert.ok(error.message.includes(`lock file ${lock}`), error.message);
    return true;
  });
  await unlink(lock);
});

test('U-1 server via the real path, CLI via a link to the file or to its directory: one store, one lock', { skip: !posix && 'symbolic links' }, async (t) => {
  const base = await tempDir(t);
  const real = join(base, 'real');
  await mkdir(real, { mode: 0o700 });
  const store = join(real, 'users.json');
  await ourStore(store);
  await mkdir(join(base, 'links'), { mode: 0o700 });
  const fileLink = join(base, 'links', 'users.json');
  await symlink(store, fileLink);
  const dirLink = join(base, 'real-dir');
  await symlink(real, dirLink);
  const certDir = join(base, 'certs');
  await mkdir(certDir);
  const server = await serve(['--port', '0', '--cert-dir', certDir, '--store', store, ...FAST]);
  t.after(() => server.child.kill('SIGKILL'));
  const ca = await readFile(join(certDir, 'localhost-cert.pem'), 'utf8');

  // A user the CLI adds through the file link signs in at the server.
  const added = await run(['user', 'add', 'bob', '--store', fileLink, ...FAST], { input: 'cobalt-initial-passphrase-12\n' });
  assert.equal(added.code, 0, added.stderr);
  const changed = await request(`${server.url}/user/bob/password`, {
    method: 'PUT',
    ca,
    headers: { authorization: basic('bob', 'cobalt-initial-passphrase-12'), 'content-type': 'text/plain' },
    body: 'cobalt-second-passphrase-345',
  });
  assert.equal(changed.status, 204);
  // The server's change is what the CLI sees through the directory link.
  const before = await run(['user', 'passwd', 'bob', '--store', dirLink.concat('/users.json'), ...FAST], { input: 'cobalt-third-passphrase-6789\n' });
  assert.equal(before.code, 0, before.stderr);
  const third = await request(`${server.url}/user/bob/password`, {
    method: 'PUT',
    ca,
    headers: { authorization: basic('bob', 'cobalt-third-passphrase-6789'), 'content-type': 'text/plain' },
    body: 'cobalt-fourth-passphrase-0123',
  });
  assert.equal(third.status, 204, 'the server sees the password the CLI set through the link');

  // The lock is shared: while it is held at the real file, a CLI through the link waits.
  const lock = `${store}.lock`;
  const holdLock = async (): Promise<void> => {
    const now = new Date();
    await writeFile(lock, `${JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'test', at: now.toISOString() })}\n`, { mode: 0o600, flag: 'w' });
  };
  await holdLock();
  const child = spawn(process.execPath, [BIN, 'user', 'add', 'carol', '--store', fileLink, ...FAST], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.end('saffron-initial-passphrase-1\n');
  await sleep(2_000);
  assert.equal(child.exitCode, null, `the CLI finished while the lock was held: ${stderr}`);
  assert.equal((await readFile(`${store}.journal`, 'utf8')).includes('"carol"'), false);
  await unlink(lock);
  assert.equal(await exited(child), 0, stderr);
  assert.match(await readFile(`${store}.journal`, 'utf8'), /"name":"carol"/);
  assert.deepEqual(await readdir(join(base, 'links')), ['users.json']);
});

test('U-1 a dangling symlink creates its target, and stays a link', { skip: !posix && 'symbolic links' }, async (t) => {
  const base = await tempDir(t);
  const target = join(base, 'real', 'nested', 'users.json');
  await mkdir(join(base, 'links'), { mode: 0o700 });
  const link = join(base, 'links', 'users.json');
  await symlink(join('..', 'real', 'nested', 'users.json'), link); // relative, as `ln -s` users write them
  const added = await run(['user', 'add', 'dave', '--store', link, ...FAST], { input: 'walnut-initial-passphrase-1\n' });
  assert.equal(added.code, 0, added.stderr);
  assert.ok((await lstat(link)).isSymbolicLink(), 'the link was not replaced');
  assert.deepEqual(await readdir(join(base, 'links')), ['users.json']);
  assert.equal((await owner(target)).mode, 0o600);
  assert.equal((await stat(join(base, 'real', 'nested'))).mode & 0o777, 0o700);
  const listed = await run(['user', 'list', '--store', target]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^dave\tuser\t/);
});

/**
 * A service on a store with ann, before its first failed login (which makes the ledger), and a
 * file of ours a shell reads later (`rc.sh`): what an attacker would point a planted file at.
 */
async function beforeTheLedger(t: TestContext) {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const s = createService({ store, scrypt: FAST_SCRYPT, log: false });
  t.after(() => s.close(100));
  await s.users.add('ann', 'velvet-harbor-lantern-42');
  const target = join(dir, 'rc.sh');
  await writeFile(target, 'echo hello\n');
  const failedLogin = (name = 'ann') => s.fetch('https://localhost/user/ann.json', { headers: { authorization: basic(name, 'a-wrong-passphrase') } });
  return { ledger: `${store}.ledger`, target, failedLogin };
}

test('U-1 a side file planted as a symbolic link after start (the ledger, made at the first failed login) is never followed: nothing is written through it', { skip: !posix && 'symbolic links' }, async (t) => {
  const { ledger, target, failedLogin } = await beforeTheLedger(t);
  await symlink(target, ledger);
  const res = await failedLogin('$(id>pwned)');
  assert.equal(res.status, 503, 'the store refuses the link: the request cannot be answered');
  assert.equal(await readFile(target, 'utf8'), 'echo hello\n', 'nothing appended through the link');
  assert.equal((await lstat(ledger)).isSymbolicLink(), true, 'the link is left for the operator to see');
});

test('U-1 a FIFO or a hard link planted where a side file is made later is refused at once, never opened for writing nor waited on', { skip: !posix && 'POSIX files' }, async (t) => {
  const { ledger, target, failedLogin } = await beforeTheLedger(t);
  // A hard link to a file of ours: the same regular file, ours, with two names.
  await link(target, ledger);
  assert.equal((await failedLogin()).status, 503);
  assert.equal(await readFile(target, 'utf8'), 'echo hello\n', 'nothing appended through the hard link');
  await unlink(ledger);
  // A FIFO: opening it to write would wait for a reader for ever.
  assert.equal(spawnSync('mkfifo', [ledger]).status, 0);
  const started = performance.now();
  assert.equal((await failedLogin()).status, 503);
  assert.ok(performance.now() - started < 5_000, 'answered at once');
});
