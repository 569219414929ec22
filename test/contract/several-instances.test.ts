// S-3, S-6: three server processes on one PostgreSQL behind a TLS-terminating proxy that sends
// X-Forwarded-For (--trust-proxy), as an operator would run them. Scrypt runs are counted in the
// servers themselves (helpers/count-scrypt.mjs), so P-8's limits are checked on the hashes that
// really ran, not only on statuses. HTTP/1.1 only (H-1): the proxy (node:https, as nginx to its
// upstreams) speaks it to the instances; the shared store is what is tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeHA1, computeResponse } from '../../lib/auth/digest.js';
import { hashPassword, verifyPassword } from '../../lib/users/password-hash.js';
import { openPostgresStore } from '../../lib/store/postgres/postgres-store.js';
import { exited, run, serve } from '../helpers/cli.js';
import { startForwardingProxy } from '../helpers/forwarding-proxy.js';
import { request, type Response } from '../helpers/https.js';
import { testPostgres } from '../helpers/postgres.js';
import { basic, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres({ own: true });
const COUNTER = fileURLToPath(new URL('../helpers/count-scrypt.mjs', import.meta.url));
const ROOT_PW = 'cluster-admin-secret-words';
const ALICE_PW = 'amber-first-passphrase-ok';
const ALICE_PW_2 = 'amber-second-passphrase';
const ALICE_PW_3 = 'amber-third-passphrase-x';

test('S-3/S-6: three instances on one PostgreSQL behind a TLS-terminating proxy behave as one', { skip: db.skip, timeout: 600_000 }, async (t) => {
  const url = await db.database();
  const dir = await tempDir(t);
  const { cert, key } = testCertificate();
  await writeFile(join(dir, 'cert.pem'), cert);
  await writeFile(join(dir, 'key.pem'), key, { mode: 0o600 });
  const scryptLog = join(dir, 'scrypt.log');
  await writeFile(scryptLog, '');
  const hashes = async () => (await readFile(scryptLog, 'utf8')).split('\n').filter(Boolean).length;
  const common = ['--store', url, '--scrypt-ln', '10', '--min-length', '15'];

  const added = await run(['user', 'add', 'root', '--admin', ...common], { cwd: dir, input: `${ROOT_PW}\n` });
  assert.equal(added.code, 0, added.stderr);
  for (const [name, password] of [
    ['alice', ALICE_PW],
    ['bob', 'bronze-first-passphrase'],
    ['carol', 'coral-first-passphrase'],
  ] as const) {
    const added = await run(['user', 'add', name, ...common], { cwd: dir, input: `${password}\n` });
    assert.equal(added.code, 0, added.stderr);
  }
  // Users for the SIGKILL storm, written straight into the database with the same hash the CLI makes.
  const seeding = await openPostgresStore(url, { cleanupIntervalMs: 0 });
  const stormHash = await hashPassword('storm-passphrase-old', { ln: 10, r: 8, p: 1 });
  for (let i = 0; i < 48; i++) {
    const name = `storm-${i}`;
    await seeding.update(name, () => ({ next: { name, role: 'user', hash: stormHash, createdAt: Date.now(), passwordChangedAt: Date.now() }, result: undefined }));
  }
  await seeding.close();

  const servers: ChildProcess[] = [];
  const urls: string[] = [];
  for (let i = 0; i < 3; i++) {
    const started = await serve(['--port', '0', '--cert', join(dir, 'cert.pem'), '--key', join(dir, 'key.pem'), '--trust-proxy', '127.0.0.1', '--digest', ...common], {
      cwd: dir,
      env: { NODE_OPTIONS: `--import=${COUNTER}`, HTTPSKIT_TEST_SCRYPT_LOG: scryptLog },
    });
    servers.push(started.child);
    urls.push(started.url);
  }
  t.after(() => {
    for (const child of servers) child.kill('SIGKILL');
  });
  const proxy = await startForwardingProxy({ backends: urls, cert, key, ca: cert });
  t.after(() => proxy.close());

  let clientNumber = 0;
  /** A request through the proxy, from a client address of its own unless `client` says otherwise. */
  const send = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string; backend?: number; client?: string } = {}): Promise<Response> =>
    request(proxy.url + path, {
      ca: cert,
      method: init.method ?? 'GET',
      body: init.body ?? '',
      headers: {
        'x-test-client': init.client ?? `10.1.${Math.floor(++clientNumber / 250)}.${clientNumber % 250}`,
        ...(init.backend === undefined ? {} : { 'x-test-backend': String(init.backend) }),
        ...(init.headers ?? {}),
      },
    });
  const putPassword = (name: string, authorization: string, body: string, backend?: number) =>
    send(`/user/${name}/password`, { method: 'PUT', headers: { authorization, 'content-type': 'text/plain' }, body, ...(backend === undefined ? {} : { backend }) });

  await t.test('S-3: a change acknowledged by one instance is seen by the next request to another', async () => {
    const changed = await putPassword('alice', basic('alice', ALICE_PW), ALICE_PW_2, 0);
    assert.equal(changed.status, 204, changed.body);
    // The old password is refused at once elsewhere (no cache), and the new one works there.
    assert.equal((await putPassword('alice', basic('alice', ALICE_PW), 'amber-other-passphrase', 2)).status, 401);
    assert.equal((await putPassword('alice', basic('alice', ALICE_PW_2), ALICE_PW_3, 1)).status, 204);
    assert.equal((await putPassword('alice', basic('alice', ALICE_PW_2), 'amber-other-passphrase', 2)).status, 401);
  });

  await t.test('S-3/P-8: 30 parallel wrong guesses at one account spread over three instances run at most P-8 allows in scrypt', async () => {
    const before = await hashes();
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => putPassword('alice', basic('alice', `wrong-guess-number-${i}`), 'whatever-new-passphrase')));
    const elapsed = (Date.now() - started) / 1000;
    const ran = (await hashes()) - before;
    const statuses = answers.map((a) => a.status);
    assert.ok(statuses.every((s) => s === 401 || s === 429 || s === 503), statuses.join(' '));
    assert.equal(statuses.filter((s) => s === 401).length, ran, 'each 401 is one verification, each refusal none');
    // 5 free failures, then 1 s, 2 s, 4 s … of lock: within `elapsed` seconds at most this many more.
    const allowed = 5 + Math.floor(Math.log2(elapsed + 1)) + 1;
    assert.ok(ran >= 1 && ran <= allowed, `statuses ${statuses.join(' ')}: ${ran} verifications ran in ${elapsed.toFixed(1)} s (allowed ${allowed}); one instance alone allows 5, three unshared would allow 15`);
    assert.ok(statuses.filter((s) => s === 429).length >= 30 - allowed - statuses.filter((s) => s === 503).length);
    assert.ok(proxy.answered.every((n) => n > 0));
  });

  await t.test('S-3/P-9: a reset token works once across instances, even when spent on two at the same instant', async () => {
    for (let round = 0; round < 4; round++) {
      const issued = await run(['reset-token', 'bob', '--store', url], { cwd: dir });
      assert.equal(issued.code, 0, issued.stderr);
      const token = issued.stdout.trim();
      const answers = await Promise.all([0, 1, 2].map((backend) => putPassword('bob', `Bearer ${token}`, `bronze-token-passphrase-${round}-${backend}`, backend)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [204, 401, 401], `round ${round}`);
      assert.equal((await putPassword('bob', `Bearer ${token}`, `bronze-token-passphrase-late-${round}`)).status, 401);
    }
  });

  await t.test('S-3/P-10: a Digest Authorization accepted by one instance is refused when replayed on another', async () => {
    // Added by the CLI before any server recorded Digest on: the secret is written at the next Basic change.
    assert.equal((await putPassword('carol', basic('carol', 'coral-first-passphrase'), 'coral-digest-passphrase', 0)).status, 204);
    const probe = await send('/user/carol/password', { method: 'PUT', backend: 1 });
    // Node joins the WWW-Authenticate fields with ", ": split them again at each scheme.
    const header = [probe.headers['www-authenticate']]
      .flat()
      .flatMap((h) => (h ?? '').split(/,\s*(?=(?:Basic|Digest) )/))
      .find((h) => h.startsWith('Digest ') && h.includes('algorithm=SHA-256'));
    assert.ok(header, JSON.stringify(probe.headers));
    const get = (k: string) => new RegExp(`${k}="([^"]*)"`).exec(header)?.[1] ?? '';
    const path = '/user/carol/password';
    const ha1 = computeHA1('SHA-256', 'carol', get('realm'), 'coral-digest-passphrase');
    const response = computeResponse('SHA-256', ha1, { nonce: get('nonce'), nc: '00000001', cnonce: 'c0ffee', qop: 'auth', method: 'PUT', uri: path });
    const authorization = `Digest username="carol", realm="${get('realm')}", nonce="${get('nonce')}", uri="${path}", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="c0ffee", response="${response}", opaque="${get('opaque')}"`;
    assert.equal((await putPassword('carol', authorization, 'coral-second-passphrase', 2)).status, 204);
    // Accepted again it would be 422 (same as current); a replay is refused before the body (P-0).
    assert.equal((await putPassword('carol', authorization, 'coral-second-passphrase', 0)).status, 401);
    assert.equal((await putPassword('carol', authorization, 'coral-third-passphrase-x', 1)).status, 401);
  });

  await t.test('S-3/U-1: SIGKILL of one instance in the middle of changes loses no acknowledged change', async () => {
    const acknowledged: string[] = [];
    const failures: number[] = [];
    let killed = false;
    const writer = async (lane: number) => {
      for (let i = lane; i < 48; i += 4) {
        const name = `storm-${i}`;
        const answer = await putPassword(name, basic(name, 'storm-passphrase-old'), `storm-passphrase-new-${i}`).catch(() => undefined);
        if (answer?.status === 204) acknowledged.push(name);
        else failures.push(answer?.status ?? 0);
        if (!killed && acknowledged.length >= 8) {
          killed = true;
          servers[1]?.kill('SIGKILL');
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    assert.ok(killed);
    assert.ok(acknowledged.length >= 24, `${acknowledged.length} acknowledged`);
    assert.ok(failures.every((s) => s !== 500), failures.join(' '));
    const victim = servers[1] as ChildProcess;
    if (victim.exitCode === null && victim.signalCode === null) await exited(victim);
    const store = await openPostgresStore(url, { cleanupIntervalMs: 0 });
    try {
      for (const name of acknowledged) {
        const record = await store.get(name);
        assert.ok(record !== undefined && (await verifyPassword(`storm-passphrase-new-${name.slice(6)}`, record.hash)), `${name}'s acknowledged change is in the database`);
      }
    } finally {
      await store.close();
    }
  });

  await t.test('S-6: with the database stopped the instances answer 503 with Retry-After (never 500 or 401), /api/ still serves, and service resumes', async () => {
    const live = [0, 2];
    await db.cluster?.stop();
    try {
      for (const backend of live) {
        const started = Date.now();
        const answer = await putPassword('alice', basic('alice', ALICE_PW_3), 'amber-fourth-passphrase', backend);
        assert.equal(answer.status, 503, answer.body);
        assert.ok(Date.now() - started < 8_000, 'answered within the time-outs');
        assert.match(String(answer.headers['retry-after']), /^\d+$/);
        assert.match(answer.body, /overloaded/);
        assert.equal((await send('/api/something', { backend })).status, 200);
        assert.equal((await send('/readyz', { backend })).status, 503, 'H-3: not ready without the database');
      }
    } finally {
      await db.cluster?.start();
    }
    for (const backend of live) {
      let status = 0;
      // A wrong password is the cheapest question that needs the database: 401 means it answered.
      for (let i = 0; i < 60 && status !== 401; i++) {
        status = (await putPassword('nobody-here', basic('nobody-here', 'not-a-password-at-all'), 'whatever-new-passphrase', backend)).status;
        if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.equal(status, 401, `instance ${backend} recovered`);
      // L-2/H-3: readiness's answer is kept about a second, and a check that began while the
      // database was down ends at its time-out (4 s): ready again within that, not at once.
      let ready = 0;
      for (let i = 0; i < 40 && ready !== 200; i++) {
        ready = (await send('/readyz', { backend })).status;
        if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.equal(ready, 200, `instance ${backend} ready again`);
    }
  });
});
