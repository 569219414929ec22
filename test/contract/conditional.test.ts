// End-to-end over real TLS: CONTRACT E-4 (RFC 9110 §13) on every route, with E-1/E-2's 412
// `precondition-failed` problem. Regression tests of the security issue: `If-Match` was ignored,
// so `GET` answered 200 and `PUT /user/alice/password` changed the password under a false one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';
import { parseXml } from '../helpers/xml-parse.js';

const ALICE_PW = 'lemon-initial-passphrase-1';
const NEW_PW = 'lemon-second-passphrase-9';
const ADMIN_PW = 'admin-initial-passphrase-3';

function put(s: Started, name: string, headers: Record<string, string>, body = NEW_PW) {
  return s.fetch(`/user/${name}/password`, {
    method: 'PUT',
    headers: { authorization: basic(name, ALICE_PW), 'content-type': 'text/plain; charset=utf-8', ...headers },
    body,
  });
}

function post(s: Started, name: string, headers: Record<string, string>, oldpasswd = ALICE_PW) {
  return s.fetch(`/user/${name}/resetpassword/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ oldpasswd, newpasswd: NEW_PW }),
  });
}

function assert412(r: { status: number; headers: Record<string, unknown>; body: string }): void {
  assert.equal(r.status, 412, r.body);
  assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
  const p = JSON.parse(r.body);
  assert.equal(p.type, '/problems/precondition-failed');
  assert.equal(p.title, 'Precondition Failed');
  assert.equal(p.status, 412);
}

/** The password alice has now, told by which one verifies. */
async function alicePassword(s: Started): Promise<string> {
  if (await s.service.users.verify('alice', ALICE_PW)) return 'old';
  if (await s.service.users.verify('alice', NEW_PW)) return 'new';
  return 'neither';
}

for (const protocol of PROTOCOLS) test(`E-4 representations: If-Match is evaluated with strong comparison against every representation (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  const json = await s.fetch('/api/something?param1=a');
  const xml = await s.fetch('/api/something?param1=a', { headers: { accept: 'application/xml' } });
  const textXml = await s.fetch('/api/something?param1=a', { headers: { accept: 'text/xml' } });
  const jsonTag = String(json.headers['etag']);
  const xmlTag = String(xml.headers['etag']);
  const textTag = String(textXml.headers['etag']);
  assert.equal(new Set([jsonTag, xmlTag, textTag]).size, 3);

  await t.test('E-4 GET with a false If-Match: 412 precondition-failed, not 200', async () => {
    const r = await s.fetch('/api/something?param1=a', { headers: { 'if-match': '"nope"' } });
    assert412(r);
    assert.match(String(r.headers['vary']), /Accept/);
  });
  await t.test('E-4 HEAD with a false If-Match: 412 without a body', async () => {
    const r = await s.fetch('/api/something?param1=a', { method: 'HEAD', headers: { 'if-match': '"nope"' } });
    assert.equal(r.status, 412);
    assert.equal(r.body, '');
  });
  await t.test('E-4 If-Match naming any representation of the current state holds', async () => {
    for (const [accept, tag] of [
      ['application/json', jsonTag],
      ['application/json', xmlTag],
      ['application/xml', jsonTag],
      ['text/xml', xmlTag],
      ['application/xml', textTag],
      ['application/json', `"nope", ${textTag}`],
      ['application/json', '*'],
    ] as const) {
      const r = await s.fetch('/api/something?param1=a', { headers: { accept, 'if-match': tag } });
      assert.equal(r.status, 200, `${accept} If-Match: ${tag}`);
    }
    for (const path of ['/api/something.xml?param1=a', '/api/something?param1=a&return_type=xml']) {
      const r = await s.fetch(path, { headers: { 'if-match': jsonTag } });
      assert.equal(r.status, 200, path);
      assert.equal(r.headers['etag'], xmlTag);
    }
  });
  await t.test('E-4 a weak tag, another state’s tag or an unparsable list never matches If-Match', async () => {
    for (const [path, tag] of [
      ['/api/something?param1=a', `W/${jsonTag}`],
      ['/api/something?param1=b', jsonTag],
      ['/api/something.json?param1=b', xmlTag],
      ['/api/something?param1=a', jsonTag.slice(1, -1)],
      ['/api/something?param1=a', `*, ${jsonTag}`],
    ] as const) {
      assert412(await s.fetch(path, { headers: { 'if-match': tag } }));
    }
  });
  await t.test('E-4 §13.2.2 order: a false If-Match wins over a matching If-None-Match; a true one lets it give 304', async () => {
    assert412(await s.fetch('/api/something?param1=a', { headers: { 'if-match': '"nope"', 'if-none-match': jsonTag } }));
    const r = await s.fetch('/api/something?param1=a', { headers: { 'if-match': xmlTag, 'if-none-match': jsonTag } });
    assert.equal(r.status, 304);
    assert.equal(r.headers['etag'], jsonTag);
  });
  await t.test('E-4 If-Unmodified-Since is ignored: these representations have no modification date', async () => {
    const r = await s.fetch('/api/something?param1=a', { headers: { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' } });
    assert.equal(r.status, 200);
  });
  await t.test('E-4 §13.2.1: a response that would not be 2xx ignores the preconditions (404, 406, 400, 405)', async () => {
    const h = { 'if-match': '"nope"' };
    assert.equal((await s.fetch('/api/nothing', { headers: h })).status, 404);
    assert.equal((await s.fetch('/api/something.yaml', { headers: h })).status, 404);
    assert.equal((await s.fetch('/api/something', { headers: { ...h, accept: 'image/png' } })).status, 406);
    assert.equal((await s.fetch('/api/something?return_type=yaml', { headers: h })).status, 400);
    assert.equal((await s.fetch('/api/something', { method: 'DELETE', headers: h })).status, 405);
  });
  await t.test('E-1 the 412 follows the request’s XML choice', async () => {
    const r = await s.fetch('/api/something.xml?param1=a', { headers: { 'if-match': '"nope"' } });
    assert.equal(r.status, 412);
    assert.equal(r.headers['content-type'], 'application/problem+xml; charset=utf-8');
    const doc = parseXml(r.body);
    assert.equal(doc.ns, 'urn:ietf:rfc:7807');
    assert.equal(doc.children.find((c) => c.name === 'type')?.text, '/problems/precondition-failed');
  });
});

for (const protocol of PROTOCOLS) test(`E-4 PUT /user/{name}/password: a false precondition changes nothing (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('alice', ALICE_PW);
  await s.service.users.add('root', ADMIN_PW, { role: 'admin' });
  const changedAt = (await s.service.users.list()).find((u) => u.name === 'alice')?.passwordChangedAt as Date;
  const before = new Date(changedAt.getTime() - 60_000).toUTCString();

  await t.test('E-4 If-Match: "nope" → 412, and the password is unchanged (was 204)', async () => {
    assert412(await put(s, 'alice', { 'if-match': '"nope"' }));
    assert.equal(await alicePassword(s), 'old');
  });
  await t.test('E-4 any entity-tag list is false (no representation is served), weak or strong or unparsable', async () => {
    for (const tag of ['W/"x"', '"x", "y"', '', 'garbage']) assert412(await put(s, 'alice', { 'if-match': tag }));
    assert.equal(await alicePassword(s), 'old');
  });
  await t.test('E-4 If-Unmodified-Since before the last change → 412; If-None-Match: * → 412 (it exists)', async () => {
    assert412(await put(s, 'alice', { 'if-unmodified-since': before }));
    assert412(await put(s, 'alice', { 'if-none-match': '*' }));
    assert.equal(await alicePassword(s), 'old');
  });
  await t.test('E-4 §13.2.1: authentication and authorization come first (401, 403, 404 ignore the preconditions)', async () => {
    const h = { 'if-match': '"nope"' };
    const unauthenticated = await put(s, 'alice', { ...h, authorization: basic('alice', 'wrong-password-entirely') });
    assert.equal(unauthenticated.status, 401);
    const other = await s.fetch('/user/root/password', {
      method: 'PUT',
      headers: { ...h, authorization: basic('alice', ALICE_PW), 'content-type': 'text/plain' },
      body: NEW_PW,
    });
    assert.equal(other.status, 403);
    const missing = await s.fetch('/user/nobody/password', {
      method: 'PUT',
      headers: { 'if-match': '*', authorization: basic('root', ADMIN_PW), 'content-type': 'text/plain' },
      body: NEW_PW,
    });
    assert.equal(missing.status, 404);
  });
  await t.test('E-4 preconditions come before the body: 412, not 415 or 422', async () => {
    assert412(await put(s, 'alice', { 'if-match': '"nope"', 'content-type': 'application/json' }));
    assert412(await put(s, 'alice', { 'if-match': '"nope"' }, 'short'));
  });
  await t.test('E-4 true conditions let the change happen: If-Unmodified-Since at the change, invalid dates ignored, If-Match: *', async () => {
    const at = changedAt.toUTCString();
    const r = await put(s, 'alice', { 'if-unmodified-since': at, 'if-none-match': '"x"' });
    assert.equal(r.status, 204, r.body);
    assert.equal(await alicePassword(s), 'new');
    // Back to the old password, by the admin, under If-Match: * (the date is ignored when If-Match is present).
    const back = await s.fetch('/user/alice/password', {
      method: 'PUT',
      headers: { 'if-match': '*', 'if-unmodified-since': before, authorization: basic('root', ADMIN_PW), 'content-type': 'text/plain' },
      body: ALICE_PW,
    });
    assert.equal(back.status, 204, back.body);
    const ignored = await put(s, 'alice', { 'if-unmodified-since': '2020-01-01' });
    assert.equal(ignored.status, 204, ignored.body);
    assert.equal(await alicePassword(s), 'new');
  });
  await t.test('E-4 the previous change’s date no longer holds after a newer change', async () => {
    // The last change was within this second or later than `before`; a date a minute ago is stale.
    assert412(await s.fetch('/user/alice/password', {
      method: 'PUT',
      headers: { 'if-unmodified-since': before, authorization: basic('alice', NEW_PW), 'content-type': 'text/plain' },
      body: 'lemon-third-passphrase-77',
    }));
    assert.equal(await alicePassword(s), 'new');
  });
});

for (const protocol of PROTOCOLS) test(`E-4 POST /user/{name}/resetpassword/: a false precondition changes nothing (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('alice', ALICE_PW);
  const changedAt = (await s.service.users.list()).find((u) => u.name === 'alice')?.passwordChangedAt as Date;

  assert412(await post(s, 'alice', { 'if-match': '"nope"' }));
  assert412(await post(s, 'alice', { 'if-unmodified-since': new Date(changedAt.getTime() - 60_000).toUTCString() }));
  assert.equal(await alicePassword(s), 'old');
  // The old password is the credential: a wrong one is 403 whatever the preconditions say.
  assert.equal((await post(s, 'alice', { 'if-match': '"nope"' }, 'not-her-password-at-all')).status, 403);
  const r = await post(s, 'alice', { 'if-match': '*' });
  assert.equal(r.status, 204, r.body);
  assert.equal(await alicePassword(s), 'new');
});
