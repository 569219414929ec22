// RFC 7616 Digest on the password PUT (P-10, P-0, P-2), with curl as the real client and hand-built headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { hkdfSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { computeHA1, computeResponse, computeUserhash, createDigestAuth, type DigestAlgorithm } from '../../lib/auth/digest.js';
import { openStore } from '../../lib/store/open.js';
import { CURL_PROTOCOL_FLAG, curlSkip, run, serveInTemp } from '../helpers/cli.js';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const execFileP = promisify(execFile);
const PW = 'ivory-initial-passphrase-1';

interface Challenge { realm: string; nonce: string; opaque: string; algorithm: string; stale: boolean }

function challenges(headers: Record<string, unknown>, raw: string[]): Challenge[] {
  void headers;
  const out: Challenge[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() !== 'www-authenticate' || !raw[i + 1]?.startsWith('Digest ')) continue;
    const v = raw[i + 1] as string;
    const get = (k: string) => new RegExp(`${k}="?([^",]*)"?`).exec(v)?.[1] ?? '';
    out.push({ realm: get('realm'), nonce: get('nonce'), opaque: get('opaque'), algorithm: get('algorithm'), stale: /stale=true/.test(v) });
  }
  return out;
}

/** A 401 from the server, with the raw header lines in order. */
async function probe(s: Started, path: string): Promise<{ raw: string[]; list: Challenge[] }> {
  const { request: rawRequest } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = rawRequest(s.url + path, { method: 'PUT', ca: s.ca, agent: false, headers: { 'content-length': '0' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ raw: res.rawHeaders, list: challenges(res.headers, res.rawHeaders) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function digestHeader(o: { user: string; password: string; realm: string; nonce: string; opaque: string; uri: string; nc?: string; algorithm?: DigestAlgorithm; userhash?: boolean; method?: string }): string {
  const algorithm = o.algorithm ?? 'SHA-256';
  const nc = o.nc ?? '00000001';
  const cnonce = 'f00dcafe';
  const ha1 = computeHA1(algorithm, o.user, o.realm, o.password);
  const response = computeResponse(algorithm, ha1, { nonce: o.nonce, nc, cnonce, qop: 'auth', method: o.method ?? 'PUT', uri: o.uri });
  const username = o.userhash === true ? computeUserhash(algorithm, o.user, o.realm) : o.user;
  return `Digest username="${username}", realm="${o.realm}", nonce="${o.nonce}", uri="${o.uri}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}", response="${response}", opaque="${o.opaque}"${o.userhash === true ? ', userhash=true' : ''}`;
}

function put(s: Started, path: string, authorization: string, body: string) {
  return s.fetch(path, { method: 'PUT', headers: { authorization, 'content-type': 'text/plain' }, body });
}

for (const protocol of PROTOCOLS) test(`P-10 challenges: Basic, then Digest SHA-256 before MD5, qop="auth" (${protocol})`, async (t) => {
  const s = await startService(t, { digest: true }, protocol);
  const { raw, list } = await probe(s, '/user/ivan/password');
  const lines = raw.filter((_, i) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === 'www-authenticate');
  assert.equal(lines[0], 'Basic realm="httpskit", charset="UTF-8"');
  assert.deepEqual(list.map((c) => c.algorithm), ['SHA-256', 'MD5']);
  for (const l of lines.slice(1)) assert.match(l, /qop="auth"/);
});

for (const protocol of PROTOCOLS) test(`P-10 hand-built Digest: success, MD5, userhash, replay, wrong uri, wrong realm, malformed, stale (${protocol})`, async (t) => {
  const changes: Array<{ name: string; by: string | null; via: string }> = [];
  const s = await startService(t, { digest: true, onPasswordChanged: ({ name, by, via }) => void changes.push({ name, by, via }) }, protocol);
  await s.service.users.add('ivan', PW);
  const path = '/user/ivan/password';
  let password = PW;
  const next = (() => {
    let n = 1;
    return () => `ivory-digest-passphrase-${++n}`;
  })();
  const fresh = async () => (await probe(s, path)).list[0] as Challenge;

  let c = await fresh();
  let np = next();
  const ok = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path }), np);
  assert.equal(ok.status, 204);
  assert.deepEqual(changes[0], { name: 'ivan', by: 'ivan', via: 'digest' }, 'A-4 the event fires for Digest changes too');
  password = np;
  const replay = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path }), next());
  assert.equal(replay.status, 401, 'a replayed nonce count is refused');
  np = next();
  const nc2 = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path, nc: '00000002' }), np);
  assert.equal(nc2.status, 204, 'the next nonce count is fine');
  password = np;

  c = (await probe(s, path)).list[1] as Challenge;
  assert.equal(c.algorithm, 'MD5');
  np = next();
  const md5 = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path, algorithm: 'MD5' }), np);
  assert.equal(md5.status, 204);
  password = np;

  c = await fresh();
  np = next();
  const hashed = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path, userhash: true }), np);
  assert.equal(hashed.status, 204, 'RFC 7616 userhash');
  password = np;

  c = await fresh();
  const wrongUri = await put(s, path, digestHeader({ user: 'ivan', password, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: '/user/other/password' }), next());
  assert.equal(wrongUri.status, 400);
  const wrongRealm = await put(s, path, digestHeader({ user: 'ivan', password, realm: 'elsewhere', nonce: c.nonce, opaque: c.opaque, uri: path }), next());
  assert.equal(wrongRealm.status, 401);
  const wrongPw = await put(s, path, digestHeader({ user: 'ivan', password: 'not-the-password-x', realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path, nc: '00000005' }), next());
  assert.equal(wrongPw.status, 401);
  assert.ok(!/stale=true/.test(String(wrongPw.headers['www-authenticate'])));
  // No value ends in whitespace: over h2 nghttp2 drops such a field (RFC 9113 §8.2.1), leaving no credentials (401).
  for (const bad of ['Digest', 'Digest username=', 'Digest username="ivan", realm="httpskit"', `Digest ${'a=b, '.repeat(2000)}a=b`, 'Digest username="ivan", qop=auth-int']) {
    const r = await put(s, path, bad, next());
    assert.equal(r.status, 400, bad.slice(0, 40));
  }

  // A nonce the server made ten minutes ago (same secret, earlier clock): stale=true only when the rest is right.
  const secret = Buffer.from(hkdfSync('sha256', await readFile(join(s.dir, 'digest.key')), Buffer.alloc(0), 'httpskit digest nonce', 32));
  const old = createDigestAuth({ realm: 'httpskit', secret, now: () => Date.now() - 600_000 });
  const oldNonce = /nonce="([^"]+)"/.exec(old.challenges()[0] as string)?.[1] as string;
  const stale = await put(s, path, digestHeader({ user: 'ivan', password, realm: 'httpskit', nonce: oldNonce, opaque: c.opaque, uri: path }), next());
  assert.equal(stale.status, 401);
  assert.match(String(stale.headers['www-authenticate']), /stale=true/);
  const staleWrong = await put(s, path, digestHeader({ user: 'ivan', password: 'wrong-password-here', realm: 'httpskit', nonce: oldNonce, opaque: c.opaque, uri: path }), next());
  assert.equal(staleWrong.status, 401);
  assert.ok(!/stale=true/.test(String(staleWrong.headers['www-authenticate'])));
  assert.equal(await s.service.users.verify('ivan', password), true);
});

for (const protocol of PROTOCOLS) test(`P-10 the Digest secret is written on the next Basic login, encrypted, and dropped when Digest is off (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const before = await startService(t, { store }, protocol);
  await before.service.users.add('ivan', PW);
  await before.service.close();
  const on = await startService(t, { store, digest: true }, protocol);
  const path = '/user/ivan/password';
  let c = (await probe(on, path)).list[0] as Challenge;
  const early = await put(on, path, digestHeader({ user: 'ivan', password: PW, realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path }), 'ivory-second-passphrase-2');
  assert.equal(early.status, 401, 'no Digest secret yet for a user made while Digest was off');
  const basicLogin = await put(on, path, basic('ivan', PW), 'ivory-second-passphrase-2');
  assert.equal(basicLogin.status, 204);
  c = (await probe(on, path)).list[0] as Challenge;
  const now = await put(on, path, digestHeader({ user: 'ivan', password: 'ivory-second-passphrase-2', realm: c.realm, nonce: c.nonce, opaque: c.opaque, uri: path }), 'ivory-third-passphrase-3');
  assert.equal(now.status, 204);
  const files = (await readFile(store, 'utf8').catch(() => '')) + (await readFile(`${store}.journal`, 'utf8').catch(() => ''));
  assert.ok(files.includes('"digest"'));
  assert.ok(!files.includes(computeHA1('SHA-256', 'ivan', 'httpskit', 'ivory-third-passphrase-3')), 'HA1 is never stored in clear');
  await on.service.close();
  const off = await startService(t, { store }, protocol);
  await off.fetch('/api/something');
  await off.service.close();
  const reopened = await openStore(store);
  assert.equal((await reopened.get('ivan'))?.digest, undefined, 'dropped when Digest is turned off');
  await reopened.close();
});

for (const protocol of PROTOCOLS) test(`P-10/P-0 curl --digest as the real client (${protocol})`, async (t) => {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return t.skip(skip);
  const dir = await tempDir(t);
  const { storePath, cacert, port } = await serveInTemp(t, dir, ['--digest', '--scrypt-ln', '10']);
  const add = await run(['user', 'add', 'judy', '--store', storePath, '--digest', '--scrypt-ln', '10'], { input: 'jade-initial-passphrase-1\n' });
  assert.equal(add.code, 0, add.stderr);
  const curl = async (user: string, body: string) =>
    (
      await execFileP('curl', [
        '-sS', CURL_PROTOCOL_FLAG[protocol], '--cacert', cacert, '-o', '/dev/null', '-w', '%{http_code}',
        '--digest', '-u', user, '-X', 'PUT', '-H', 'Content-Type: text/plain', '--data-binary', body,
        `https://localhost:${port}/user/judy/password`,
      ])
    ).stdout;
  assert.equal(await curl('judy:jade-initial-passphrase-1', 'jade-second-passphrase-2'), '204');
  assert.equal(await curl('judy:jade-initial-passphrase-1', 'jade-third-passphrase-3'), '401');
  assert.equal(await curl('judy:jade-second-passphrase-2', 'jade-third-passphrase-3'), '204');
});
