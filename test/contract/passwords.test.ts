// End-to-end over real TLS: CONTRACT P-0..P-8, P-11, U-1..U-4 for the password operations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';

const ALICE_PW = 'lemon-initial-passphrase-1';
const BOB_PW = 'cedar-initial-passphrase-22';
const ADMIN_PW = 'admin-initial-passphrase-3';

async function withUsers(s: Started): Promise<void> {
  await s.service.users.add('alice', ALICE_PW);
  await s.service.users.add('bob', BOB_PW);
  await s.service.users.add('root', ADMIN_PW, { role: 'admin' });
}

function put(s: Started, name: string, authorization: string | undefined, body: string | Buffer, type = 'text/plain; charset=utf-8') {
  return s.fetch(`/user/${encodeURIComponent(name)}/password`, {
    method: 'PUT',
    headers: { ...(authorization === undefined ? {} : { authorization }), 'content-type': type },
    body,
  });
}

function post(s: Started, name: string, body: unknown, type = 'application/json') {
  return s.fetch(`/user/${encodeURIComponent(name)}/resetpassword/`, {
    method: 'POST',
    headers: { 'content-type': type },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

// H-1: every clause holds over HTTP/1.1 and HTTP/2 alike.
for (const protocol of PROTOCOLS) {
  test(`P-2 PUT with Basic: a user changes their own password; 204 (P-7) (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const r = await put(s, 'alice', basic('alice', ALICE_PW), 'lemon-second-passphrase-9');
    assert.equal(r.status, 204);
    assert.equal(r.body, '');
    assert.equal(await s.service.users.verify('alice', 'lemon-second-passphrase-9'), true);
    assert.equal(await s.service.users.verify('alice', ALICE_PW), false);
    const again = await put(s, 'alice', basic('alice', ALICE_PW), 'lemon-third-passphrase-77');
    assert.equal(again.status, 401);
  });

  test(`P-4 a body with a Content-Encoding is refused (415, Accept-Encoding: identity), never taken as its bytes; identity is no coding (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const headers = (coding: string) => ({ authorization: basic('alice', ALICE_PW), 'content-type': 'text/plain; charset=utf-8', 'content-encoding': coding });
    for (const coding of ['gzip', 'br', 'identity, gzip', 'x-unknown']) {
      const r = await s.fetch('/user/alice/password', { method: 'PUT', headers: headers(coding), body: 'lantern-harbor-quiet-evening' });
      assert.equal(r.status, 415, coding);
      assert.equal(r.headers['accept-encoding'], 'identity');
      assert.equal(JSON.parse(r.body).detail, `The body was sent with Content-Encoding ${JSON.stringify(coding)}: send it without a content coding.`);
    }
    assert.equal(await s.service.users.verify('alice', ALICE_PW), true, 'the password is unchanged');
    const posted = await s.fetch('/user/alice/resetpassword', { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: JSON.stringify({ oldpasswd: ALICE_PW, newpasswd: 'lantern-harbor-quiet-evening' }) });
    assert.equal(posted.status, 415);
    const plain = await s.fetch('/user/alice/password', { method: 'PUT', headers: headers('Identity'), body: 'lantern-harbor-quiet-evening' });
    assert.equal(plain.status, 204, plain.body);
    assert.equal(await s.service.users.verify('alice', 'lantern-harbor-quiet-evening'), true);
  });

  test(`P-2 failures: 401 with the Basic challenge; unknown user and wrong password look alike (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const none = await put(s, 'alice', undefined, '');
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Basic realm="httpskit", charset="UTF-8"');
    const wrong = await put(s, 'alice', basic('alice', 'not-her-password-at-all'), 'whatever-new-passphrase');
    const unknown = await put(s, 'zed', basic('zed', 'not-her-password-at-all'), 'whatever-new-passphrase');
    assert.equal(wrong.status, 401);
    const strip = (h: Record<string, unknown>) => {
      const { 'x-request-id': _id, date: _date, ...rest } = h;
      return rest;
    };
    assert.equal(unknown.status, wrong.status);
    assert.deepEqual(strip(unknown.headers), strip(wrong.headers));
    assert.equal(unknown.body, wrong.body);
    assert.equal(JSON.parse(wrong.body).type, '/problems/unauthorized');
    const garbage = await put(s, 'alice', 'Basic !!!not-base64!!!', 'x');
    assert.equal(garbage.status, 400);
    const latin1 = await put(s, 'alice', `Basic ${Buffer.from([0x61, 0x3a, 0xe9]).toString('base64')}`, 'x');
    assert.equal(latin1.status, 400, 'U-4 invalid UTF-8 credentials are refused, not repaired');
  });

  test(`P-0 checks run transport → credentials → body: an empty-body probe gets the challenge (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const probe = await s.fetch('/user/alice/password', { method: 'PUT', headers: { 'content-length': '0' } });
    assert.equal(probe.status, 401);
    assert.ok(probe.headers['www-authenticate']);
    const wrongTypeNoAuth = await put(s, 'alice', undefined, 'x'.repeat(10_000), 'application/octet-stream');
    assert.equal(wrongTypeNoAuth.status, 401);
  });

  test(`P-3 who may change whose password (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const other = await put(s, 'bob', basic('alice', ALICE_PW), 'lemon-sets-bobs-passphrase');
    assert.equal(other.status, 403);
    const ghost = await put(s, 'ghost', basic('alice', ALICE_PW), 'lemon-sets-ghost-passphrase');
    assert.equal(ghost.status, 403, 'same answer whether the target exists or not');
    assert.equal(JSON.parse(ghost.body).type, JSON.parse(other.body).type);
    const admin = await put(s, 'bob', basic('root', ADMIN_PW), 'boss-sets-bobs-passphrase');
    assert.equal(admin.status, 204);
    assert.equal(await s.service.users.verify('bob', 'boss-sets-bobs-passphrase'), true);
    const missing = await put(s, 'ghost', basic('root', ADMIN_PW), 'boss-sets-ghost-passphrase');
    assert.equal(missing.status, 404);
  });

  test(`P-4 PUT body: media type, charset, UTF-8 and size (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const auth = basic('alice', ALICE_PW);
    assert.equal((await put(s, 'alice', auth, 'lemon-new-passphrase-1', 'application/json')).status, 415);
    assert.equal((await put(s, 'alice', auth, 'lemon-new-passphrase-1', 'text/plain; charset=iso-8859-1')).status, 415);
    const noType = await s.fetch('/user/alice/password', { method: 'PUT', headers: { authorization: auth }, body: 'lemon-new-passphrase-1' });
    assert.equal(noType.status, 415);
    // The detail says what was sent, then what to send.
    const json = await put(s, 'alice', auth, 'lemon-new-passphrase-1', 'application/json');
    assert.equal((JSON.parse(json.body) as { detail: string }).detail, 'The body was sent with Content-Type "application/json". Send the new password as text/plain; charset=utf-8.');
    assert.equal((await put(s, 'alice', auth, Buffer.from([0x61, 0xff, 0xfe, 0x62]))).status, 400);
    const big = await put(s, 'alice', auth, 'a'.repeat(4097));
    assert.equal(big.status, 413);
    assert.equal(JSON.parse(big.body).type, '/problems/payload-too-large');
    assert.equal((await put(s, 'alice', auth, 'lemon-plain-text-no-charset', 'text/plain')).status, 204);
  });

  test(`P-5 POST form: old password in the body (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const ok = await post(s, 'alice', { oldpasswd: ALICE_PW, newpasswd: 'lemon-posted-passphrase-5' });
    assert.equal(ok.status, 204);
    assert.equal(await s.service.users.verify('alice', 'lemon-posted-passphrase-5'), true);
    const noSlash = await s.fetch('/user/bob/resetpassword', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ oldpasswd: BOB_PW, newpasswd: 'cedar-posted-passphrase-55' }),
    });
    assert.equal(noSlash.status, 204, 'trailing slash optional');
    const wrong = await post(s, 'alice', { oldpasswd: 'nope-nope-nope-nope', newpasswd: 'lemon-posted-passphrase-6' });
    assert.equal(wrong.status, 403);
    assert.equal(JSON.parse(wrong.body).type, '/problems/invalid-credentials');
    assert.equal(wrong.headers['www-authenticate'], undefined);
    const unknown = await post(s, 'ghost', { oldpasswd: 'nope-nope-nope-nope', newpasswd: 'lemon-posted-passphrase-6' });
    assert.equal(unknown.status, 403);
    assert.equal(unknown.body, wrong.body);
    assert.equal((await post(s, 'alice', '{"oldpasswd": ', 'application/json')).status, 400);
    assert.equal((await post(s, 'alice', { oldpasswd: 'x' })).status, 400);
    assert.equal((await post(s, 'alice', { oldpasswd: 1, newpasswd: 'x' })).status, 400);
    assert.equal((await post(s, 'alice', '["a","b"]')).status, 400);
    assert.equal((await post(s, 'alice', '{"oldpasswd":"\\ud800","newpasswd":"x"}')).status, 400);
    assert.equal((await post(s, 'alice', { oldpasswd: 'a', newpasswd: 'b' }, 'text/plain')).status, 415);
    assert.equal((await post(s, 'alice', 'x'.repeat(5000))).status, 413);
  });

  test(`P-6 policy violations are 422 password-policy with codes (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const auth = basic('alice', ALICE_PW);
    const cases: Array<[string, string]> = [
      ['short-pw', 'too-short'],
      ['x'.repeat(1025), 'too-long'],
      ['lemon-new-passphrase-1\n', 'control-character'],
      ['passwordpassword', 'common-password'],
      ['aaaaaaaaaaaaaaaaaaaa', 'common-password'],
      ['my-name-is-ALICE-really', 'contains-username'],
      [ALICE_PW, 'same-as-current'],
    ];
    for (const [password, code] of cases) {
      const r = await put(s, 'alice', auth, password);
      assert.equal(r.status, 422, code);
      const body = JSON.parse(r.body);
      assert.equal(body.type, '/problems/password-policy');
      assert.ok(body.violations.includes(code), `${code}: ${JSON.stringify(body.violations)}`);
    }
    const form = await post(s, 'alice', { oldpasswd: ALICE_PW, newpasswd: ALICE_PW });
    assert.equal(form.status, 422);
    assert.deepEqual(JSON.parse(form.body).violations, ['same-as-current']);
    const xml = await s.fetch('/user/alice/password', {
      method: 'PUT',
      headers: { authorization: auth, 'content-type': 'text/plain', accept: 'application/problem+xml' },
      body: 'short',
    });
    assert.equal(xml.headers['content-type'], 'application/problem+xml; charset=utf-8');
    assert.match(xml.body, /<violations><i>too-short<\/i>/);
  });

  test(`P-1 plain HTTP: 403 https-required before the body; query strings refused; GET is 405 (${protocol})`, async (t) => {
    const s = await startService(t, { httpPort: 0 }, protocol);
    await withUsers(s);
    const plain = await s.fetchPlain('/user/alice/password', {
      method: 'PUT',
      headers: { authorization: basic('alice', ALICE_PW), 'content-type': 'text/plain' },
      body: 'lemon-over-http-passphrase',
    });
    assert.equal(plain.status, 403);
    assert.equal(JSON.parse(plain.body).type, '/problems/https-required');
    assert.equal(plain.headers['strict-transport-security'], undefined, 'T-4: never HSTS over plain HTTP');
    const plainPost = await s.fetchPlain('/user/alice/resetpassword/', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ oldpasswd: ALICE_PW, newpasswd: 'lemon-over-http-passphrase' }),
    });
    assert.equal(plainPost.status, 403);
    assert.equal(await s.service.users.verify('alice', ALICE_PW), true, 'the password did not change');
    const api = await s.fetchPlain('/api/something.json?param1=x');
    assert.equal(api.status, 200, 'T-3 representations are served over plain HTTP');
    const query = await s.fetch('/user/alice/password?pw=hunter2-secret', {
      method: 'PUT',
      headers: { authorization: basic('alice', ALICE_PW), 'content-type': 'text/plain' },
      body: 'lemon-query-passphrase-1',
    });
    assert.equal(query.status, 400);
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(!s.logs.join('\n').includes('hunter2-secret'), 'the query is not logged');
    for (const method of ['GET', 'HEAD']) {
      const r = await s.fetch('/user/alice/password', { method });
      assert.equal(r.status, 405);
      assert.equal(r.headers['allow'], 'PUT, OPTIONS');
    }
    const r = await s.fetch('/user/alice/resetpassword/', { method: 'GET' });
    assert.equal(r.headers['allow'], 'POST, OPTIONS');
  });

  test(`P-8 throttling: 429 with Retry-After after 5 failures; few hashes for many guesses (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await withUsers(s);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await put(s, 'alice', basic('alice', `wrong-guess-number-${i}`), 'x')).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.equal(statuses[5], 429);
    const limited = await put(s, 'alice', basic('alice', ALICE_PW), 'lemon-new-passphrase-88');
    assert.equal(limited.status, 429, 'even the right password waits out the window');
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal(JSON.parse(limited.body).type, '/problems/too-many-requests');
    const ghost = [];
    for (let i = 0; i < 7; i++) ghost.push((await put(s, 'ghost', basic('ghost', `guess-${i}`), 'x')).status);
    assert.equal(ghost[6], 429, 'unknown accounts are throttled alike');
  });

  test(`P-11 no password or Authorization value reaches the logs (${protocol})`, async (t) => {
    const s = await startService(t, { httpPort: 0 }, protocol);
    await withUsers(s);
    const secrets = ['lemon-logged-passphrase-1', 'wrong-secret-passphrase', ALICE_PW];
    await put(s, 'alice', basic('alice', 'wrong-secret-passphrase'), secrets[0] as string);
    await put(s, 'alice', basic('alice', ALICE_PW), secrets[0] as string);
    await post(s, 'alice', { oldpasswd: 'wrong-secret-passphrase', newpasswd: 'lemon-logged-passphrase-1' });
    await s.fetchPlain('/user/alice/password', { method: 'PUT', headers: { authorization: basic('alice', ALICE_PW) }, body: 'x' });
    await new Promise((r) => setTimeout(r, 20));
    const all = s.logs.join('\n');
    for (const secret of [...secrets, basic('alice', ALICE_PW).slice(6)]) assert.ok(!all.includes(secret), secret);
    const stored = await readFile(s.store, 'utf8').catch(() => '');
    for (const secret of secrets) assert.ok(!stored.includes(secret));
  });

  test(`P-8 a full hashing queue answers 503 overloaded with Retry-After (${protocol})`, async (t) => {
    const s = await startService(t, { hashConcurrency: 1, hashQueueLimit: 0, scrypt: { ln: 14, r: 8, p: 1 } }, protocol);
    await s.service.users.add('alice', ALICE_PW);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => put(s, 'alice', basic('alice', `wrong-guess-in-flight-${i}`), 'x')),
    );
    const statuses = results.map((r) => r.status);
    assert.ok(statuses.includes(503), JSON.stringify(statuses));
    const busy = results.find((r) => r.status === 503);
    assert.equal(busy?.headers['retry-after'], '1');
    assert.equal(JSON.parse(busy?.body ?? '{}').type, '/problems/overloaded');
    for (const st of statuses) assert.ok(st === 401 || st === 503, String(st));
  });

  test(`P-8 cheap failures (malformed Bearer) are throttled per address too (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    const statuses: number[] = [];
    for (let i = 0; i < 55; i++) {
      const r = await s.fetch(`/user/u${i}/password`, { method: 'PUT', headers: { authorization: 'Bearer !!', 'content-type': 'text/plain' }, body: 'x' });
      statuses.push(r.status);
    }
    assert.deepEqual([...new Set(statuses.slice(0, 50))], [401]);
    assert.deepEqual([...new Set(statuses.slice(50))], [429]);
  });

  test(`P-8 concurrent guesses cannot slip through one open window (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await s.service.users.add('alice', ALICE_PW);
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => put(s, 'alice', basic('alice', `concurrent-guess-${i}`), 'x')));
    const counts = (rs: Array<{ status: number }>) => rs.reduce<Record<number, number>>((m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }), {});
    assert.ok((counts(first)[401] ?? 0) <= 5, JSON.stringify(counts(first)));
    await new Promise((r) => setTimeout(r, 1_100));
    const second = await Promise.all(Array.from({ length: 12 }, (_, i) => put(s, 'alice', basic('alice', `later-guess-${i}`), 'x')));
    assert.ok((counts(second)[401] ?? 0) <= 1, `after the window only one guess is checked: ${JSON.stringify(counts(second))}`);
  });
}

test('U-3 a hash below the configured cost is upgraded at the next successful login', async (t) => {
  const weak = await startService(t, { scrypt: { ln: 10, r: 8, p: 1 } });
  await weak.service.users.add('alice', ALICE_PW);
  await weak.service.close();
  const strong = await startService(t, { store: weak.store, scrypt: { ln: 11, r: 8, p: 1 } });
  const { openStore } = await import('../../lib/store/open.js');
  const before = await openStore(weak.store);
  assert.match((await before.get('alice'))?.hash ?? '', /^\$scrypt\$ln=10,r=8,p=1\$/);
  await before.close();
  const wrong = await put(strong, 'alice', basic('alice', 'not-the-right-passphrase'), 'x');
  assert.equal(wrong.status, 401);
  assert.equal(await strong.service.users.verify('alice', ALICE_PW), true);
  const after = await openStore(weak.store);
  assert.match((await after.get('alice'))?.hash ?? '', /^\$scrypt\$ln=11,r=8,p=1\$/, 'upgraded');
  await after.close();
  assert.equal(await strong.service.users.verify('alice', ALICE_PW), true, 'and still verifies');
});

test('T-3 a plain-HTTP password request is refused before the store is opened', async (t) => {
  const { createService } = await import('../../lib/index.js');
  const { writeFile } = await import('node:fs/promises');
  const { tempDir } = await import('../helpers/tmp.js');
  const { createServer } = await import('node:http');
  const { request } = await import('../helpers/https.js');
  const dir = await tempDir(t);
  await writeFile(`${dir}/users.json`, 'not json');
  const service = createService({ store: `${dir}/users.json`, log: false });
  const server = createServer(service.handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const port = (server.address() as import('node:net').AddressInfo).port;
  const r = await request(`http://127.0.0.1:${port}/user/a/password`, { method: 'PUT', body: 'x' });
  assert.equal(r.status, 403);
  assert.equal(JSON.parse(r.body).type, '/problems/https-required');
});
