// S-3, S-6: three server processes on one PostgreSQL behind a TLS-terminating proxy that sends
// X-Forwarded-For (--trust-proxy), as an operator would run them. Scrypt runs are counted in the
// servers themselves (helpers/count-scrypt.mjs), so P-8's limits are checked on the hashes that
// really ran, not only on statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeHA1, computeResponse } from '../../lib/auth/digest.js';
import { openPostgresStore } from '../../lib/users/postgres/postgres-store.js';
import { exited, run, serve } from '../helpers/cli.js';
import { startForwardingProxy } from '../helpers/forwarding-proxy.js';
import { request, type Response } from '../helpers/https.js';
import { testPostgres } from '../helpers/postgres.js';
import { basic, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres({ own: true });
const COUNTER = fileURLToPath(new URL('../helpers/count-scrypt.mjs', import.meta.url));
const ROOT_PW = 'root-passphrase-for-the-cluster';
const ALICE_PW = 'alice-first-passphrase-ok';

test('S-3/S-6: three instances on one PostgreSQL behind a TLS-terminating proxy behave as one', { skip: db.skip, timeout: 300_000 }, async (t) => {
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
  const alice = await run(['user', 'add', 'alice', ...common], { cwd: dir, input: `${ALICE_PW}\n` });
  assert.equal(alice.code, 0, alice.stderr);

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
    const changed = await putPassword('alice', basic('alice', ALICE_PW), 'alice-second-passphrase', 0);
    assert.equal(changed.status, 204, changed.body);
    assert.equal((await send('/user/alice', { headers: { authorization: basic('alice', 'alice-second-passphrase') }, backend: 1 })).status, 200);
    assert.equal((await send('/user/alice', { headers: { authorization: basic('alice', ALICE_PW) }, backend: 2 })).status, 401);
    const created = await send('/user/', { method: 'POST', headers: { authorization: basic('root', ROOT_PW), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bob', password: 'bob-first-passphrase-x' }), backend: 2 });
    assert.equal(created.status, 201, created.body);
    assert.equal((await send('/user/bob', { headers: { authorization: basic('root', ROOT_PW) }, backend: 0 })).status, 200);
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
    assert.ok(ran >= 5 && ran <= allowed, `${ran} verifications ran in ${elapsed.toFixed(1)} s (allowed ${allowed}); one instance alone allows 5, three unshared would allow 15`);
    assert.ok(statuses.filter((s) => s === 429).length >= 30 - allowed - statuses.filter((s) => s === 503).length);
    assert.ok(proxy.answered.every((n) => n > 0));
  });

  await t.test('S-3/P-9: a reset token works once across instances, even when spent on two at the same instant', async () => {
    for (let round = 0; round < 4; round++) {
      const issued = await run(['reset-token', 'bob', ...common], { cwd: dir });
      assert.equal(issued.code, 0, issued.stderr);
      const token = issued.stdout.trim();
      const answers = await Promise.all([0, 1, 2].map((backend) => putPassword('bob', `Bearer ${token}`, `bob-token-passphrase-${round}-${backend}`, backend)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [204, 401, 401], `round ${round}`);
      assert.equal((await putPassword('bob', `Bearer ${token}`, `bob-token-passphrase-late-${round}`)).status, 401);
    }
  });

  await t.test('S-3/P-10: a Digest Authorization accepted by one instance is refused when replayed on another', async () => {
    const created = await send('/user/', { method: 'POST', headers: { authorization: basic('root', ROOT_PW), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'carol', password: 'carol-first-passphrase' }), backend: 0 });
    assert.equal(created.status, 201, created.body);
    const probe = await send('/user/carol/password', { method: 'PUT', backend: 1 });
    const header = [probe.headers['www-authenticate']].flat().find((h) => h?.startsWith('Digest ') && h.includes('SHA-256'));
    assert.ok(header, JSON.stringify(probe.headers));
    const get = (k: string) => new RegExp(`${k}="([^"]*)"`).exec(header)?.[1] ?? '';
    const path = '/user/carol/password';
    const ha1 = computeHA1('SHA-256', 'carol', get('realm'), 'carol-first-passphrase');
    const response = computeResponse('SHA-256', ha1, { nonce: get('nonce'), nc: '00000001', cnonce: 'c0ffee', qop: 'auth', method: 'PUT', uri: path });
    const authorization = `Digest username="carol", realm="${get('realm')}", nonce="${get('nonce')}", uri="${path}", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="c0ffee", response="${response}", opaque="${get('opaque')}"`;
    assert.equal((await putPassword('carol', authorization, 'carol-second-passphrase', 2)).status, 204);
    // Accepted again it would be 422 (same as current); a replay is refused before the body (P-0).
    assert.equal((await putPassword('carol', authorization, 'carol-second-passphrase', 0)).status, 401);
    assert.equal((await putPassword('carol', authorization, 'carol-third-passphrase-x', 1)).status, 401);
  });

  await t.test('S-3/U-1: SIGKILL of one instance in the middle of changes loses no acknowledged change', async () => {
    const acknowledged: string[] = [];
    const failures: number[] = [];
    let killed = false;
    const writer = async (lane: number) => {
      for (let i = 0; i < 12; i++) {
        const name = `storm-${lane}-${i}`;
        const answer = await send('/user/', { method: 'POST', headers: { authorization: basic('root', ROOT_PW), 'content-type': 'application/json' }, body: JSON.stringify({ name, password: `storm-passphrase-${lane}-${i}` }) }).catch(() => undefined);
        if (answer?.status === 201) acknowledged.push(name);
        else failures.push(answer?.status ?? 0);
        if (!killed && acknowledged.length >= 10) {
          killed = true;
          servers[1]?.kill('SIGKILL');
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    assert.ok(killed);
    assert.ok(failures.every((s) => s !== 500), failures.join(' '));
    await exited(servers[1] as ChildProcess);
    const store = await openPostgresStore(url, { cleanupIntervalMs: 0 });
    try {
      const names = new Set((await store.list()).map((u) => u.name));
      assert.deepEqual(acknowledged.filter((n) => !names.has(n)), [], 'every acknowledged change is in the database');
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
        const answer = await putPassword('alice', basic('alice', 'alice-second-passphrase'), 'alice-third-passphrase', backend);
        assert.equal(answer.status, 503, answer.body);
        assert.ok(Date.now() - started < 8_000, 'answered within the time-outs');
        assert.match(String(answer.headers['retry-after']), /^\d+$/);
        assert.match(answer.body, /overloaded/);
        const read = await send('/user/alice', { headers: { authorization: basic('alice', 'alice-second-passphrase') }, backend });
        assert.equal(read.status, 503, read.body);
        assert.equal((await send('/api/something', { backend })).status, 200);
        assert.equal((await send('/readyz', { backend })).status, 503);
      }
    } finally {
      await db.cluster?.start();
    }
    for (const backend of live) {
      let status = 0;
      for (let i = 0; i < 60 && status !== 200; i++) {
        status = (await send('/user/alice', { headers: { authorization: basic('alice', 'alice-second-passphrase') }, backend })).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.equal(status, 200, `instance ${backend} recovered`);
    }
  });
});
