// U-2 (amended 2026-11-27): the user names `.` and `..` are refused at creation, by every route;
// a store that already holds one still loads, and every URL the service writes for such a name
// has its dots percent-encoded, so that a real client (curl, which removes `.` and `..` segments
// as RFC 3986 §5.2.4 says) reaches that user and not `/` or the list of users.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hashPassword } from '../../lib/users/password-hash.js';
import { CURL_PROTOCOL_FLAG, curlSkip, run } from '../helpers/cli.js';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, FAST_SCRYPT, startService, type Started } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const execFileP = promisify(execFile);
const PASSWORD = 'dotted-initial-passphrase-1';
const ROOT = basic('root', PASSWORD);

/** A store file as an older version could have written it: `.`, `..` and an admin. */
async function legacyStore(dir: string): Promise<string> {
  const hash = await hashPassword(PASSWORD, FAST_SCRYPT);
  const user = (name: string, role: string): string => JSON.stringify({ name, role, hash, createdAt: 0, passwordChangedAt: 0 });
  const store = join(dir, 'users.json');
  const text = `{"format":"httpskit-users","version":1,"generation":1,"users":[\n${[user('.', 'user'), user('..', 'user'), user('root', 'admin')].join(',\n')}\n]}\n`;
  await writeFile(store, text, { mode: 0o600 });
  return store;
}

interface Got {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

/**
 * A request by curl, used as a user would: the URL as written, with curl's own dot-segment removal
 * (RFC 3986). (Node's clients take a URL through the WHATWG parser, which also removes `%2E%2E`.)
 */
async function curl(s: Started, protocol: keyof typeof CURL_PROTOCOL_FLAG, path: string, authorization: string, extra: readonly string[] = []): Promise<Got> {
  const ca = join(s.dir, 'ca.pem');
  await writeFile(ca, s.ca);
  const { stdout } = await execFileP('curl', ['-s', '-i', CURL_PROTOCOL_FLAG[protocol], '--cacert', ca, '-H', `authorization: ${authorization}`, ...extra, `${s.url}${path}`]);
  const split = stdout.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = stdout.slice(0, split).split('\r\n');
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const));
  return { status: Number(statusLine.split(' ')[1]), headers, body: stdout.slice(split + 4) };
}

for (const protocol of PROTOCOLS) test(`U-2 a store holding "." and ".." loads; every URL written for them has its dots encoded and curl reaches that user with it (${protocol})`, async (t) => {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return t.skip(skip);
  const dir = await tempDir(t);
  const s = await startService(t, { store: await legacyStore(dir) }, protocol);

  // The literal path is what the service wrote before: curl makes it "/" (404) and "/user/" (the list).
  assert.equal((await curl(s, protocol, '/user/..', basic('..', PASSWORD))).status, 404);
  assert.equal((await curl(s, protocol, '/user/.', basic('.', PASSWORD))).status, 403, '/user/. is the list of users, for admins only');

  for (const [name, encoded] of [['..', '%2E%2E'], ['.', '%2E']] as const) {
    const own = basic(name, PASSWORD);
    const read = await curl(s, protocol, `/user/${encoded}`, own, ['-H', 'accept: application/json']);
    assert.equal(read.status, 200, read.body);
    assert.equal(JSON.parse(read.body).name, name);
    assert.equal(read.headers.get('content-location'), `/user/${encoded}.json`);
    assert.equal(read.headers.get('link'), `</user/${encoded}.xml>; rel="alternate"; type="application/xml"`);
    // Every URL written reaches the user through curl.
    const written = [String(read.headers.get('content-location')), /^<([^>]*)>/.exec(String(read.headers.get('link')))?.[1] ?? ''];
    for (const url of written) {
      const got = await curl(s, protocol, url, own);
      assert.equal(got.status, 200, `${url}: ${got.body}`);
      assert.match(got.body, new RegExp(`"name":"${name.replaceAll('.', '\\.')}"|<name>${name.replaceAll('.', '\\.')}</name>`), url);
    }
    // An admin's change answers with the same URLs, and they reach the user too.
    const patch = ['-X', 'PATCH', '-H', 'content-type: application/merge-patch+json', '-H', 'accept: application/xml', '--data-binary', '{"role":"admin"}'];
    const patched = await curl(s, protocol, `/user/${encoded}`, ROOT, patch);
    assert.equal(patched.status, 200, patched.body);
    assert.equal(patched.headers.get('content-location'), `/user/${encoded}.xml`);
    const again = await curl(s, protocol, String(patched.headers.get('content-location')), ROOT);
    assert.equal(again.status, 200);
    assert.match(again.body, /<role>admin<\/role>/);
  }

  // The page of users lists both; its `next` URL (a query, which no client rewrites) pages on from ".".
  const first = await curl(s, protocol, '/user/?limit=1', ROOT);
  const page = JSON.parse(first.body) as { users: Array<{ name: string }>; next: string };
  assert.deepEqual(page.users.map((u) => u.name), ['.']);
  const second = JSON.parse((await curl(s, protocol, page.next, ROOT)).body) as { users: Array<{ name: string }> };
  assert.deepEqual(second.users.map((u) => u.name), ['..']);
  // The password routes take the encoded segment too.
  const put = await curl(s, protocol, '/user/%2E%2E/password', basic('..', PASSWORD), ['-X', 'PUT', '-H', 'content-type: text/plain', '--data-binary', 'dotted-second-passphrase-2']);
  assert.equal(put.status, 204, put.body);
});

for (const protocol of PROTOCOLS) test(`U-2 POST /user/ refuses "." and ".." with the 400 of any other bad name (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('root', PASSWORD, { role: 'admin' });
  const create = (name: string) =>
    s.fetch('/user/', { method: 'POST', headers: { authorization: ROOT, 'content-type': 'application/json' }, body: JSON.stringify({ name, password: 'another-initial-passphrase-9' }) });
  const slash = await create('a/b');
  assert.equal(slash.status, 400);
  for (const name of ['.', '..']) {
    const r = await create(name);
    assert.equal(r.status, 400, name);
    assert.equal(JSON.parse(r.body).type, JSON.parse(slash.body).type);
    assert.match(JSON.parse(r.body).detail, /dot-segment/);
  }
  assert.equal((await create('...')).status, 201, 'three dots are no dot segment');
  assert.deepEqual((await s.service.users.list()).map((u) => u.name).sort(), ['...', 'root']);
});

test('U-2 the library refuses "." and ".." with ERR_INVALID_NAME', async (t) => {
  const s = await startService(t);
  for (const name of ['.', '..']) await assert.rejects(s.service.users.add(name, PASSWORD), { code: 'ERR_INVALID_NAME', message: /dot-segment/ });
  assert.deepEqual(await s.service.users.list(), []);
});

test('U-2 user add refuses "." and ".." before the store is created, as any bad name', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  for (const name of ['.', '..']) {
    const r = await run(['user', 'add', name, '--store', store, '--scrypt-ln', '10'], { input: `${PASSWORD}\n` });
    assert.equal(r.code, 1, name);
    assert.equal(r.stderr, `httpskit: invalid user name "${name}" (dot-segment)\n`);
  }
  assert.deepEqual(await readdir(dir), []);
});

// A-5 with U-2's reasoning: an item id `.` or `..` is a segment every URL parser removes (RFC 3986
// §5.2.4; WHATWG URL reads `%2E` as `.` too), so fetch and browsers could never name the item again.
// curl sends `%2E` as it is, as the service's own test client would not (it parses the URL).
for (const protocol of PROTOCOLS) test(`A-5 items "." and "..": a PUT that would create one is 400, a post that returns one is the embedder's bug (500); one that exists is still read and replaced (${protocol})`, async (t) => {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return t.skip(skip);
  const items = new Map<string, unknown>();
  const puts: string[] = [];
  const s = await startService(
    t,
    {
      resources: {
        notes: {
          post: (body: { id: string }) => {
            items.set(body.id, body);
            return { id: body.id, value: body };
          },
          item: {
            get: (id: string) => items.get(id),
            put: (id: string, body: unknown) => {
              puts.push(id);
              items.set(id, body);
              return body;
            },
          },
        },
      },
    },
    protocol,
  );
  const json = { 'content-type': 'application/json' };
  const put = (path: string, body: string) => curl(s, protocol, path, 'Bearer unused', ['-X', 'PUT', '-H', 'content-type: application/json', '--data-binary', body]);
  for (const encoded of ['%2E%2E', '%2e', '%2E.']) {
    const refused = await put(`/api/notes/${encoded}`, '{"n":1}');
    assert.equal(refused.status, 400, refused.body);
    assert.match(JSON.parse(refused.body).detail, /cannot be created with the id "\.\.?"/);
  }
  assert.deepEqual(puts, [], 'put is not called');
  assert.deepEqual([...items.keys()], []);
  // One that exists (made by the application itself) is read and replaced (200: it is not created).
  items.set('.', { n: 0 });
  const read = await curl(s, protocol, '/api/notes/%2E.json', 'Bearer unused');
  assert.equal(read.status, 200, read.body);
  assert.deepEqual(JSON.parse(read.body), { n: 0 });
  const replaced = await put('/api/notes/%2E', '{"n":2}');
  assert.equal(replaced.status, 200, replaced.body);
  assert.deepEqual(puts, ['.']);
  const three = await s.fetch('/api/notes/...', { method: 'PUT', headers: json, body: '{"n":3}' });
  assert.equal(three.status, 201, 'three dots are an id like any other');
  assert.equal(three.headers['location'], '/api/notes/...');
  // A post returning "..": 500 without detail (E-3), and the log names the fault.
  const posted = await s.fetch('/api/notes', { method: 'POST', headers: json, body: '{"id":".."}' });
  assert.equal(posted.status, 500, posted.body);
  assert.equal(posted.headers['location'], undefined);
  assert.ok(s.logs.some((line) => line.includes('post must return') && line.includes('no URL can name those')), s.logs.join('\n'));
});
