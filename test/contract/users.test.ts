// End-to-end over real TLS with Node's client: CONTRACT R-1..R-7 (the user resource and user
// administration), U-2's amendment, and P-8 across routes. XML is read with a real parser (saxes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { UserChangedEvent } from '../../lib/index.js';
import { HttpError, problem } from '../../lib/index.js';
import { PROTOCOLS, type Protocol, type Response } from '../helpers/https.js';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openStore } from '../../lib/store/open.js';
import { hashPassword } from '../../lib/users/password-hash.js';
import { basic, FAST_SCRYPT, startService, type Started } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';
import { CURL_PROTOCOL_FLAG, curlSkip } from '../helpers/cli.js';

const execFileP = promisify(execFile);
import { parseXml, type XmlElement } from '../helpers/xml-parse.js';

const ALICE_PW = 'lemon-initial-passphrase-1';
const BOB_PW = 'cedar-initial-passphrase-22';
const ROOT_PW = 'admin-initial-passphrase-3';
const ALICE = basic('alice', ALICE_PW);
const BOB = basic('bob', BOB_PW);
const ROOT = basic('root', ROOT_PW);
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function seed(s: Started): Promise<void> {
  await s.service.users.add('alice', ALICE_PW);
  await s.service.users.add('bob', BOB_PW);
  await s.service.users.add('root', ROOT_PW, { role: 'admin' });
}

async function started(t: import('node:test').TestContext, protocol: Protocol, options: Parameters<typeof startService>[1] = {}): Promise<Started> {
  const s = await startService(t, options, protocol);
  await seed(s);
  return s;
}

function get(s: Started, path: string, authorization?: string, headers: Record<string, string> = {}): Promise<Response> {
  return s.fetch(path, { headers: { ...(authorization === undefined ? {} : { authorization }), ...headers } });
}

function send(s: Started, method: string, path: string, authorization: string | undefined, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return s.fetch(path, {
    method,
    headers: { ...(authorization === undefined ? {} : { authorization }), ...headers },
    ...(text === undefined ? {} : { body: text }),
  });
}

const json = (r: Response): Record<string, unknown> => JSON.parse(r.body) as Record<string, unknown>;
const childText = (e: XmlElement, name: string): string | undefined => e.children.find((c) => c.name === name)?.text;

/** Status, headers (less the per-response ones) and body: what an observer can compare. */
function observable(r: Response): unknown {
  const { 'x-request-id': _id, date: _date, ...headers } = r.headers;
  return { status: r.status, headers, body: r.body };
}

// --- R-1 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-1 GET /user/{name}: the user as JSON, members in order, times RFC 3339 with ms, private, no secrets (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const r = await get(s, '/user/alice', ALICE);
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(r.headers['cache-control'], 'private, no-cache');
  assert.equal(r.headers['vary'], 'Accept');
  assert.equal(r.headers['content-location'], '/user/alice.json');
  assert.equal(r.headers['link'], '</user/alice.xml>; rel="alternate"; type="application/xml"');
  assert.match(String(r.headers['etag']), /^"[A-Za-z0-9_-]+"$/);
  const body = json(r);
  assert.deepEqual(Object.keys(body), ['name', 'role', 'createdAt', 'passwordChangedAt']);
  assert.equal(body['name'], 'alice');
  assert.equal(body['role'], 'user');
  assert.match(String(body['createdAt']), TIME);
  assert.match(String(body['passwordChangedAt']), TIME);
  assert.doesNotMatch(r.body, /scrypt|hash|digest|token/i);
});

for (const protocol of PROTOCOLS) test(`R-1 the XML representation: <user> root, parsed by a real parser; extension form does not vary (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const r = await get(s, '/user/alice.xml', ALICE);
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/xml; charset=utf-8');
  assert.equal(r.headers['vary'], undefined);
  assert.equal(r.headers['content-location'], undefined);
  assert.equal(r.headers['link'], '</user/alice.json>; rel="alternate"; type="application/json"');
  assert.ok(r.body.startsWith('<?xml version="1.0" encoding="UTF-8"?><user>'));
  const root = parseXml(r.body);
  assert.equal(root.name, 'user');
  assert.deepEqual(root.children.map((c) => c.name), ['name', 'role', 'createdAt', 'passwordChangedAt']);
  assert.equal(childText(root, 'name'), 'alice');
  assert.equal(childText(root, 'role'), 'user');
  assert.match(String(childText(root, 'createdAt')), TIME);
});

for (const protocol of PROTOCOLS) test(`R-1 selection as N-1..N-8: return_type, Accept (text/xml), 406 with Vary, 400 for a bad return_type (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const rt = await get(s, '/user/alice?return_type=xml', ALICE, { accept: 'application/json' });
  assert.equal(rt.headers['content-type'], 'application/xml; charset=utf-8');
  assert.equal(rt.headers['vary'], undefined);
  const textXml = await get(s, '/user/alice', ALICE, { accept: 'text/xml' });
  assert.equal(textXml.headers['content-type'], 'text/xml; charset=utf-8');
  assert.equal(textXml.headers['content-location'], '/user/alice.xml');
  assert.equal(parseXml(textXml.body).name, 'user');
  const none = await get(s, '/user/alice', ALICE, { accept: 'text/html' });
  assert.equal(none.status, 406);
  assert.equal(none.headers['vary'], 'Accept');
  assert.deepEqual(json(none)['available'], ['application/json', 'application/xml', 'text/xml']);
  const bad = await get(s, '/user/alice?return_type=yaml', ALICE);
  assert.equal(bad.status, 400);
  const upper = await get(s, '/user/alice.XML', ALICE);
  assert.equal(upper.headers['content-type'], 'application/xml; charset=utf-8');
});

for (const protocol of PROTOCOLS) test(`R-1 ETag per representation, If-None-Match gives 304 with the same ETag and Vary; HEAD has no body (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const j = await get(s, '/user/alice', ALICE);
  const x = await get(s, '/user/alice', ALICE, { accept: 'application/xml' });
  assert.notEqual(j.headers['etag'], x.headers['etag']);
  const again = await get(s, '/user/alice', ALICE, { 'if-none-match': String(j.headers['etag']) });
  assert.equal(again.status, 304);
  assert.equal(again.body, '');
  assert.equal(again.headers['etag'], j.headers['etag']);
  assert.equal(again.headers['vary'], 'Accept');
  assert.equal(again.headers['cache-control'], 'private, no-cache');
  const head = await s.fetch('/user/alice', { method: 'HEAD', headers: { authorization: ALICE } });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal(head.headers['etag'], j.headers['etag']);
  assert.equal(head.headers['content-length'], j.headers['content-length']);
});

for (const protocol of PROTOCOLS) test(`R-1 the ETag changes when the user changes (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const before = await get(s, '/user/alice', ROOT);
  const patched = await send(s, 'PATCH', '/user/alice', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 200);
  const after = await get(s, '/user/alice', ROOT);
  assert.notEqual(after.headers['etag'], before.headers['etag']);
  assert.equal(patched.headers['etag'], after.headers['etag'], 'the PATCH answer carries the new ETag, as GET does');
  assert.equal((await get(s, '/user/alice', ROOT, { 'if-none-match': String(before.headers['etag']) })).status, 200);
});

// --- R-2 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-2 a user reads themselves; an admin anyone (404 for unknown); anyone else 403 whether the target exists or not (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  assert.equal((await get(s, '/user/alice', ALICE)).status, 200);
  assert.equal((await get(s, '/user/alice', ROOT)).status, 200);
  assert.equal((await get(s, '/user/zed', ROOT)).status, 404);
  const other = await get(s, '/user/alice', BOB);
  const unknown = await get(s, '/user/zed', BOB);
  assert.equal(other.status, 403);
  assert.equal(json(other)['type'], '/problems/forbidden');
  // Enumeration: an existing and an unknown target look alike to a non-admin.
  assert.deepEqual(observable(unknown), observable(other));
  const xmlOther = await get(s, '/user/alice.xml', BOB);
  assert.equal(xmlOther.headers['content-type'], 'application/problem+xml; charset=utf-8');
});

for (const protocol of PROTOCOLS) test(`R-2 / P-2 authentication: no or wrong credentials are 401 with the challenge; unknown user and wrong password alike (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const none = await get(s, '/user/alice');
  assert.equal(none.status, 401);
  assert.equal(none.headers['www-authenticate'], 'Basic realm="httpskit", charset="UTF-8"');
  const wrong = await get(s, '/user/alice', basic('alice', 'not-her-password-at-all'));
  const unknown = await get(s, '/user/alice', basic('zed', 'not-her-password-at-all'));
  assert.equal(wrong.status, 401);
  assert.deepEqual(observable(unknown), observable(wrong));
});

for (const protocol of PROTOCOLS) test(`R: a reset token (Bearer) never authorises the user routes: 401 with the usual challenges (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const { token } = await s.service.users.issueResetToken('alice');
  const r = await get(s, '/user/alice', `Bearer ${token}`);
  assert.equal(r.status, 401);
  assert.equal(r.headers['www-authenticate'], 'Basic realm="httpskit", charset="UTF-8"');
  const del = await send(s, 'DELETE', '/user/bob', `Bearer ${token}`);
  assert.equal(del.status, 401);
  assert.equal((await get(s, '/user/bob', ROOT)).status, 200);
});

for (const protocol of PROTOCOLS) test(`R / T-3: over plain HTTP every R route is 403 https-required, before credentials are looked at (${protocol})`, async (t) => {
  const s = await started(t, protocol, { httpPort: 0 });
  for (const [method, path] of [['GET', '/user/alice'], ['GET', '/user/alice.xml?return_type=nope'], ['GET', '/user/'], ['POST', '/user/'], ['DELETE', '/user/bob'], ['PATCH', '/user/bob']] as const) {
    const r = await s.fetchPlain(path, { method, headers: { authorization: ROOT, accept: 'text/html' } });
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.match(r.body, /\/problems\/https-required/);
  }
  assert.equal((await get(s, '/user/bob', ROOT)).status, 200, 'nothing was deleted');
});

for (const protocol of PROTOCOLS) test(`R-1 with Digest (--digest): curl --digest reads the user; the XML form too (${protocol})`, async (t) => {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return t.skip(skip);
  const s = await started(t, protocol, { digest: true });
  const ca = join(s.dir, 'ca.pem');
  await writeFile(ca, s.ca);
  const curl = (path: string) => execFileP('curl', ['-s', CURL_PROTOCOL_FLAG[protocol], '--cacert', ca, '--digest', '-u', `alice:${ALICE_PW}`, '-w', '\n%{http_code}', `${s.url}${path}`]);
  const { stdout } = await curl('/user/alice');
  const [body, status] = stdout.split('\n');
  assert.equal(status, '200');
  assert.equal(JSON.parse(String(body)).name, 'alice');
  const xml = await curl('/user/alice.xml?return_type=json');
  assert.equal(xml.stdout.split('\n').pop(), '200');
  assert.equal(parseXml(xml.stdout.slice(0, xml.stdout.lastIndexOf('\n'))).name, 'user');
});

// --- R-3 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-3 GET /user/ pages users by name with limit/after, Link rel="next" and the same URL in next (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  for (const name of ['carol', 'Zoe', 'émile']) await s.service.users.add(name, 'plum-initial-passphrase-9');
  const seen: string[] = [];
  let path: string | null = '/user/?limit=2';
  let pages = 0;
  while (path !== null) {
    const r = await get(s, path, ROOT);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(r.headers['cache-control'], 'private, no-cache');
    assert.equal(r.headers['content-location'], undefined, 'R-3: a page has no Content-Location');
    const body = json(r) as { users: Array<Record<string, unknown>>; next: string | null };
    assert.deepEqual(Object.keys(body), ['users', 'next']);
    for (const u of body.users) assert.deepEqual(Object.keys(u), ['name', 'role', 'createdAt', 'passwordChangedAt']);
    seen.push(...body.users.map((u) => String(u['name'])));
    if (body.next === null) assert.equal(r.headers['link'], undefined);
    else assert.equal(r.headers['link'], `<${body.next}>; rel="next"`);
    path = body.next;
    pages++;
  }
  // UTF-16 code-unit order: upper case before lower case, 'é' (U+00E9) last.
  assert.deepEqual(seen, ['Zoe', 'alice', 'bob', 'carol', 'root', 'émile']);
  assert.equal(pages, 3);
  const first = json(await get(s, '/user/?limit=2', ROOT));
  assert.equal(first['next'], '/user/?after=alice&limit=2');
  const rest = json(await get(s, '/user/?after=root', ROOT)) as { users: Array<{ name: string }>; next: null };
  assert.deepEqual(rest.users.map((u) => u.name), ['émile']);
  assert.equal(rest.next, null);
});

for (const protocol of PROTOCOLS) test(`R-3 the XML page: <users><user>…</user>…<next>…</next></users>, parsed by a real parser (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const r = await get(s, '/user/?limit=2&return_type=xml', ROOT);
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/xml; charset=utf-8');
  const root = parseXml(r.body);
  assert.equal(root.name, 'users');
  assert.deepEqual(root.children.map((c) => c.name), ['user', 'user', 'next']);
  assert.equal(childText(root.children[0] as XmlElement, 'name'), 'alice');
  assert.equal(childText(root.children[1] as XmlElement, 'role'), 'user');
  assert.equal(childText(root, 'next'), '/user/?after=bob&limit=2');
  const last = parseXml((await get(s, '/user/?after=bob', ROOT, { accept: 'application/xml' })).body);
  assert.deepEqual(last.children.map((c) => c.name), ['user', 'next']);
  assert.equal(last.children[1]?.attributes['xsi:nil'], 'true');
});

for (const protocol of PROTOCOLS) test(`R-3 admins only (403 for a user, 401 without credentials); bad limit, repeated parameters: 400 (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  assert.equal((await get(s, '/user/', ALICE)).status, 403);
  assert.equal((await get(s, '/user/')).status, 401);
  assert.equal((await get(s, '/user', ROOT)).status, 200, 'the trailing slash is optional');
  for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'limit=1.5', 'limit=', 'limit=1&limit=2', 'after=a&after=b', 'return_type=yaml', 'after=%zz']) {
    const r = await get(s, `/user/?${q}`, ROOT);
    assert.equal(r.status, 400, q);
    assert.equal(json(r)['type'], '/problems/bad-request');
  }
  assert.equal(json(await get(s, '/user/?limit=1000', ROOT))['next'], null);
  const negotiated = await get(s, '/user/', ROOT, { accept: 'text/html' });
  assert.equal(negotiated.status, 406);
  assert.equal(negotiated.headers['vary'], 'Accept');
});

// --- R-4 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-4 POST /user/ creates a user: 201, Location, the R-1 representation; the new user can sign in (${protocol})`, async (t) => {
  const events: UserChangedEvent[] = [];
  const s = await started(t, protocol, { onUserChanged: (e) => void events.push(e) });
  const r = await send(s, 'POST', '/user/', ROOT, { name: 'carol', password: 'garnet-initial-passphrase-5' }, { 'content-type': 'application/json' });
  assert.equal(r.status, 201);
  assert.equal(r.headers['location'], '/user/carol');
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  const body = json(r);
  assert.deepEqual(Object.keys(body), ['name', 'role', 'createdAt', 'passwordChangedAt']);
  assert.equal(body['role'], 'user');
  assert.equal((await get(s, '/user/carol', basic('carol', 'garnet-initial-passphrase-5'))).status, 200);
  const admin = await send(s, 'POST', '/user', ROOT, { name: 'dora', password: 'garnet-initial-passphrase-6', role: 'admin' }, { 'content-type': 'application/json', accept: 'application/xml' });
  assert.equal(admin.status, 201);
  assert.equal(childText(parseXml(admin.body), 'role'), 'admin');
  assert.equal(events.length, 2);
  assert.deepEqual({ ...events[0], at: undefined }, { name: 'carol', change: 'created', by: 'root', at: undefined });
  assert.ok(events[0]?.at instanceof Date);
});

for (const protocol of PROTOCOLS) test(`R-4 refusals: 409 exists, 400 names (U-2 amended), 422 policy, 415, 400 JSON, 403 non-admin, 401 (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const post = (body: unknown, auth: string | null = ROOT, type = 'application/json') => send(s, 'POST', '/user/', auth ?? undefined, body, { 'content-type': type });
  const exists = await post({ name: 'alice', password: 'another-initial-passphrase-1' });
  assert.equal(exists.status, 409);
  assert.equal(json(exists)['type'], '/problems/conflict');
  for (const name of ['a.json', 'b.XML', 'a/b', 'a:b', '', ' x', 'a'.repeat(65)]) {
    const r = await post({ name, password: 'another-initial-passphrase-1' });
    assert.equal(r.status, 400, JSON.stringify(name));
    assert.equal(json(r)['type'], '/problems/bad-request');
    assert.ok(String(json(r)['detail']).length > 0);
  }
  const weak = await post({ name: 'erin', password: 'qz7-vb' });
  assert.equal(weak.status, 422);
  assert.equal(json(weak)['type'], '/problems/password-policy');
  assert.deepEqual(json(weak)['violations'], ['too-short']);
  const wrongType = await post({ name: 'erin', password: 'garnet-initial-passphrase-7' }, ROOT, 'text/plain');
  assert.equal(wrongType.status, 415);
  assert.match(String(json(wrongType)['detail']), /^The body was sent with Content-Type "text\/plain"\. Send \{"name"/);
  assert.equal((await post('{"name":', ROOT)).status, 400);
  assert.equal((await post({ name: 'erin', password: 'garnet-initial-passphrase-7', role: 'root' })).status, 400);
  assert.equal((await post({ name: 'erin', password: 'garnet-initial-passphrase-7', admin: true })).status, 400);
  assert.equal((await post({ name: 'erin', password: 7 })).status, 400);
  assert.equal((await post({ name: 'erin', password: 'garnet-initial-passphrase-7' }, ALICE)).status, 403);
  assert.equal((await post({ name: 'erin', password: 'garnet-initial-passphrase-7' }, null)).status, 401);
  assert.equal((await get(s, '/user/erin', ROOT)).status, 404, 'nothing refused was created');
});

// --- R-5 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-5 DELETE /user/{name}: 204, then 404; the reset tokens die with the user (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const { token } = await s.service.users.issueResetToken('bob');
  const r = await send(s, 'DELETE', '/user/bob', ROOT);
  assert.equal(r.status, 204);
  assert.equal(r.body, '');
  assert.equal((await get(s, '/user/bob', ROOT)).status, 404);
  assert.equal((await send(s, 'DELETE', '/user/bob', ROOT)).status, 404);
  // A new bob does not inherit the old one's token.
  await s.service.users.add('bob', 'cedar-second-passphrase-8');
  const put = await s.fetch('/user/bob/password', { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: 'cedar-stolen-passphrase-3' });
  assert.equal(put.status, 401);
});

for (const protocol of PROTOCOLS) test(`R-5 the last admin cannot be deleted (409); admins only (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  assert.equal((await send(s, 'DELETE', '/user/alice', BOB)).status, 403);
  assert.equal((await send(s, 'DELETE', '/user/zed', BOB)).status, 403);
  const last = await send(s, 'DELETE', '/user/root', ROOT);
  assert.equal(last.status, 409);
  assert.equal(json(last)['type'], '/problems/conflict');
  assert.equal((await get(s, '/user/root', ROOT)).status, 200);
  // With a second admin, the first may go.
  assert.equal((await send(s, 'PATCH', '/user/alice', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' })).status, 200);
  assert.equal((await send(s, 'DELETE', '/user/root', ALICE)).status, 204);
  assert.equal((await send(s, 'DELETE', '/user/alice', ALICE)).status, 409);
});

// --- R-6 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-6 PATCH with application/merge-patch+json changes the role: 200 with the representation (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const r = await send(s, 'PATCH', '/user/bob', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json', accept: 'application/xml' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/xml; charset=utf-8');
  assert.equal(childText(parseXml(r.body), 'role'), 'admin');
  assert.equal((await get(s, '/user/', BOB)).status, 200, 'bob is an admin now');
  const back = await send(s, 'PATCH', '/user/bob', ROOT, { role: 'user' }, { 'content-type': 'application/merge-patch+json; charset=utf-8' });
  assert.equal(json(back)['role'], 'user');
  assert.equal((await get(s, '/user/', BOB)).status, 403, 'a demotion counts from the next request');
});

for (const protocol of PROTOCOLS) test(`R-6 refusals: 415 for other types, 422 naming any other member or a bad role, 409 for the last admin, 404, 403 (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const patch = (path: string, body: unknown, type = 'application/merge-patch+json', auth = ROOT) => send(s, 'PATCH', path, auth, body, { 'content-type': type });
  assert.equal((await patch('/user/bob', { role: 'admin' }, 'application/json')).status, 415);
  const other = await patch('/user/bob', { role: 'admin', name: 'robert' });
  assert.equal(other.status, 422);
  assert.equal(json(other)['member'], 'name');
  assert.match(String(json(other)['detail']), /"name"/);
  assert.equal((await patch('/user/bob', { password: 'x' })).status, 422);
  assert.equal((await patch('/user/bob', { role: 'root' })).status, 422);
  assert.equal((await patch('/user/bob', { role: null })).status, 422);
  assert.equal((await patch('/user/bob', [])).status, 422);
  assert.equal((await patch('/user/bob', 'nope')).status, 400);
  const last = await patch('/user/root', { role: 'user' });
  assert.equal(last.status, 409);
  assert.equal(json(last)['type'], '/problems/conflict');
  assert.equal((await patch('/user/zed', { role: 'admin' })).status, 404);
  assert.equal((await patch('/user/bob', { role: 'admin' }, 'application/merge-patch+json', ALICE)).status, 403);
  assert.equal(json(await get(s, '/user/bob', ROOT))['role'], 'user', 'nothing refused was changed');
  const empty = await patch('/user/bob', {});
  assert.equal(empty.status, 200);
  assert.equal(json(empty)['role'], 'user');
});

for (const protocol of PROTOCOLS) test(`E-4 / R-5 / R-6: If-Match with the user\'s ETag makes PATCH and DELETE safe against lost updates (412) (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const read = await get(s, '/user/bob', ROOT);
  const readXml = await get(s, '/user/bob.xml', ROOT);
  const etag = String(read.headers['etag']);
  // Someone else changes bob in between.
  assert.equal((await send(s, 'PATCH', '/user/bob', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' })).status, 200);
  const stale = await send(s, 'PATCH', '/user/bob', ROOT, { role: 'user' }, { 'content-type': 'application/merge-patch+json', 'if-match': etag });
  assert.equal(stale.status, 412);
  assert.equal(json(stale)['type'], '/problems/precondition-failed');
  assert.equal(json(await get(s, '/user/bob', ROOT))['role'], 'admin', 'the stale PATCH did nothing');
  assert.equal((await send(s, 'DELETE', '/user/bob', ROOT, undefined, { 'if-match': etag })).status, 412);
  assert.equal((await send(s, 'DELETE', '/user/bob', ROOT, undefined, { 'if-match': String(readXml.headers['etag']) })).status, 412);
  // The current ETag of any representation holds, and so does *.
  const fresh = await get(s, '/user/bob.xml', ROOT);
  const ok = await send(s, 'PATCH', '/user/bob', ROOT, { role: 'user' }, { 'content-type': 'application/merge-patch+json', 'if-match': String(fresh.headers['etag']) });
  assert.equal(ok.status, 200);
  assert.equal((await send(s, 'DELETE', '/user/bob', ROOT, undefined, { 'if-match': `W/${String(ok.headers['etag'])}` })).status, 412, 'a weak tag never matches If-Match');
  assert.equal((await send(s, 'DELETE', '/user/bob', ROOT, undefined, { 'if-match': String(ok.headers['etag']) })).status, 204);
  assert.equal((await send(s, 'DELETE', '/user/alice', ROOT, undefined, { 'if-match': '*' })).status, 204);
});

for (const protocol of PROTOCOLS) test(`E-4 two concurrent writes with the same If-Match: exactly one is performed, the other gets 412 (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  for (let round = 0; round < 3; round++) {
    const etag = String((await get(s, '/user/bob', ROOT)).headers['etag']);
    const role = round % 2 === 0 ? 'admin' : 'user';
    const [a, b] = await Promise.all([
      send(s, 'PATCH', '/user/bob', ROOT, { role }, { 'content-type': 'application/merge-patch+json', 'if-match': etag }),
      send(s, 'PATCH', '/user/bob', ROOT, { role }, { 'content-type': 'application/merge-patch+json', 'if-match': etag }),
    ]);
    // Both asked for the same new role: the second finds it already set (no write) but the ETag stale.
    assert.deepEqual([a.status, b.status].sort(), [200, 412], `round ${round}`);
  }
  const etag = String((await get(s, '/user/bob', ROOT)).headers['etag']);
  const [del, patch] = await Promise.all([
    send(s, 'DELETE', '/user/bob', ROOT, undefined, { 'if-match': etag }),
    // bob is an admin after the rounds: this PATCH is a real change.
    send(s, 'PATCH', '/user/bob', ROOT, { role: 'user' }, { 'content-type': 'application/merge-patch+json', 'if-match': etag }),
  ]);
  const statuses = [del.status, patch.status];
  assert.ok(
    (del.status === 204 && (patch.status === 412 || patch.status === 404)) || (patch.status === 200 && del.status === 412),
    `one write, never both: ${statuses.join(', ')}`,
  );
});

// --- R-7 ------------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`R-7 OPTIONS without credentials and 405 with the right Allow on every R path (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  const cases: ReadonlyArray<readonly [string, string]> = [
    ['/user/alice', 'GET, PATCH, DELETE, HEAD, OPTIONS'],
    ['/user/', 'GET, POST, HEAD, OPTIONS'],
  ];
  for (const [path, allow] of cases) {
    const o = await s.fetch(path, { method: 'OPTIONS' });
    assert.equal(o.status, 204, path);
    assert.equal(o.headers['allow'], allow, path);
    const r = await s.fetch(path, { method: 'PUT', headers: { authorization: ROOT } });
    assert.equal(r.status, 405, path);
    assert.equal(r.headers['allow'], allow, path);
  }
});

for (const protocol of PROTOCOLS) test(`R-7 each change writes one audit line (who, what, which user, from where; never a password) and fires onUserChanged (${protocol})`, async (t) => {
  const events: UserChangedEvent[] = [];
  const s = await started(t, protocol, { onUserChanged: (e) => void events.push(e) });
  const pw = 'garnet-initial-passphrase-4';
  await send(s, 'POST', '/user/', ROOT, { name: 'frank', password: pw }, { 'content-type': 'application/json' });
  await send(s, 'PATCH', '/user/frank', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' });
  await send(s, 'PATCH', '/user/frank', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' }); // no change
  await send(s, 'DELETE', '/user/frank', ROOT);
  await send(s, 'DELETE', '/user/frank', ROOT); // 404: no change
  const audit = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'user changed');
  assert.deepEqual(
    audit.map(({ change, name, by, address }) => ({ change, name, by, address })),
    [
      { change: 'created', name: 'frank', by: 'root', address: '127.0.0.1' },
      { change: 'role', name: 'frank', by: 'root', address: '127.0.0.1' },
      { change: 'deleted', name: 'frank', by: 'root', address: '127.0.0.1' },
    ],
  );
  assert.equal(audit[1]?.['role'], 'admin');
  assert.ok(!s.logs.some((l) => l.includes(pw)), 'no password in any log line');
  assert.ok(!s.logs.some((l) => l.includes(ROOT.slice(6))), 'no Authorization value in any log line');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events.map((e) => [e.change, e.name, e.by]), [['created', 'frank', 'root'], ['role', 'frank', 'root'], ['deleted', 'frank', 'root']]);
});

for (const protocol of PROTOCOLS) test(`R-7 / A-4 an onUserChanged hook that throws is logged and does not undo the change (${protocol})`, async (t) => {
  const s = await started(t, protocol, {
    onUserChanged: () => {
      throw new Error('hook broke');
    },
  });
  const r = await send(s, 'POST', '/user/', ROOT, { name: 'gus', password: 'garnet-initial-passphrase-44' }, { 'content-type': 'application/json' });
  assert.equal(r.status, 201);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(s.logs.some((l) => l.includes('onUserChanged hook failed')));
  assert.equal((await get(s, '/user/gus', ROOT)).status, 200);
});

// --- P-8 across routes ----------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`P-8 one budget per account whichever route the guesses come through (GET /user/{name}, then PUT password) (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  for (let i = 0; i < 5; i++) assert.equal((await get(s, '/user/alice', basic('alice', `wrong-guess-${i}`))).status, 401);
  // The sixth guess, on another route and with the right password, is throttled: the account's budget is spent.
  const put = await s.fetch('/user/alice/password', { method: 'PUT', headers: { authorization: ALICE, 'content-type': 'text/plain' }, body: 'lemon-second-passphrase-9' });
  assert.equal(put.status, 429);
  assert.ok(Number(put.headers['retry-after']) >= 1);
  const read = await get(s, '/user/alice', ALICE);
  assert.equal(read.status, 429);
});

// --- U-2 amended ------------------------------------------------------------------------------------

for (const protocol of PROTOCOLS) test(`U-2 /user/a%2Ejson is the user a.json, not an extension; /user/a.json is a as JSON (${protocol})`, async (t) => {
  const s = await started(t, protocol);
  await s.service.users.add('a', 'plain-a-initial-passphrase-1', { role: 'admin' });
  const viaExtension = await get(s, '/user/a.json', ROOT);
  assert.equal(viaExtension.status, 200);
  assert.equal(json(viaExtension)['name'], 'a');
  const encoded = await get(s, '/user/a%2Ejson', ROOT);
  assert.equal(encoded.status, 404, 'no user "a.json" (and it is not the extension form of "a")');
  const yaml = await get(s, '/user/alice.yaml', ROOT);
  assert.equal(yaml.status, 404, 'only .json/.xml are extensions: "alice.yaml" is a name');
});

for (const protocol of PROTOCOLS) test(`U-2 a store that already holds a.json still loads; the user is reached as /user/a%2Ejson, reads and changes work (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  // Written straight into the store, as an older version (before the amendment) could have.
  const legacy = await openStore(store);
  const phc = await hashPassword('legacy-initial-passphrase-1', FAST_SCRYPT);
  await legacy.update('a.json', () => ({ next: { name: 'a.json', role: 'user', hash: phc, createdAt: 0, passwordChangedAt: 0 }, result: undefined }));
  await legacy.close();
  const s = await started(t, protocol, { store });
  const own = basic('a.json', 'legacy-initial-passphrase-1');
  const r = await get(s, '/user/a%2Ejson', own);
  assert.equal(r.status, 200);
  assert.equal(json(r)['name'], 'a.json');
  assert.equal(r.headers['content-location'], '/user/a.json.json', 'the extension form of a.json');
  assert.equal(json(await get(s, '/user/a.json.json', own))['name'], 'a.json');
  const page = json(await get(s, '/user/', ROOT)) as { users: Array<{ name: string }> };
  assert.ok(page.users.some((u) => u.name === 'a.json'));
  const put = await s.fetch('/user/a.json/password', { method: 'PUT', headers: { authorization: own, 'content-type': 'text/plain' }, body: 'legacy-second-passphrase-2' });
  assert.equal(put.status, 204, 'the password routes take the whole segment as the name');
  const patched = await send(s, 'PATCH', '/user/a%2Ejson', ROOT, { role: 'admin' }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 200);
  assert.equal(json(patched)['name'], 'a.json');
  assert.equal((await send(s, 'DELETE', '/user/a%2Ejson', ROOT)).status, 204);
  // Creating such a name anew is refused, by every route.
  assert.equal((await send(s, 'POST', '/user/', ROOT, { name: 'a.json', password: 'legacy-initial-passphrase-1' }, { 'content-type': 'application/json' })).status, 400);
  await assert.rejects(s.service.users.add('b.xml', 'legacy-initial-passphrase-1'), { code: 'ERR_INVALID_NAME' });
});

// --- an embedder's resource that needs the caller --------------------------------------------

for (const protocol of PROTOCOLS) test(`A-2 / R-1 an embedder\'s loader asks context.authenticate(): same machinery, private, 401/403 as thrown (${protocol})`, async (t) => {
  const s = await started(t, protocol, {
    resources: {
      whoami: async (query, context) => {
        const caller = await context.authenticate();
        if (query.get('admin') === '1' && caller.role !== 'admin') throw new HttpError(problem(403, 'forbidden'));
        return { name: caller.name, role: caller.role };
      },
    },
    httpPort: 0,
  });
  const r = await get(s, '/api/whoami', ALICE, { accept: 'application/xml' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['cache-control'], 'private, no-cache');
  assert.equal(r.headers['vary'], 'Accept');
  assert.equal(r.headers['content-location'], '/api/whoami.xml');
  const root = parseXml(r.body);
  assert.equal(root.name, 'whoami');
  assert.equal(childText(root, 'name'), 'alice');
  assert.equal((await get(s, '/api/whoami')).status, 401);
  assert.equal((await get(s, '/api/whoami?admin=1', ALICE)).status, 403);
  assert.equal((await get(s, '/api/whoami?admin=1', ROOT)).status, 200);
  const plain = await s.fetchPlain('/api/whoami', { headers: { authorization: ALICE } });
  assert.equal(plain.status, 403, 'no credentials in clear');
  assert.equal(JSON.parse(plain.body).type, '/problems/https-required');
  // A loader that does not ask stays public and cacheable.
  assert.equal((await get(s, '/api/something')).headers['cache-control'], undefined);
});
