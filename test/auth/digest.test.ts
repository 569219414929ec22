import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { parseAuthParams } from '../../lib/auth/credentials.js';
import {
  computeHA1,
  computeResponse,
  computeUserhash,
  createDigestAuth,
  parseDigest,
} from '../../lib/auth/digest.js';
import type { DigestAlgorithm, DigestAuth, DigestLookup, DigestParams, DigestVerdict } from '../../lib/auth/digest.js';

const run = promisify(execFile);

// ---------------------------------------------------------------------------
// Vectors

const RFC = {
  username: 'Mufasa',
  password: 'Circle of Life',
  realm: 'http-auth@example.org',
  method: 'GET',
  uri: '/dir/index.html',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  nc: '00000001',
  qop: 'auth',
} as const;

const responseVectors: ReadonlyArray<readonly [DigestAlgorithm, string]> = [
  ['MD5', '8ca523f5e9506fed4657c9700eebdbec'],
  ['SHA-256', '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1'],
];

for (const [algorithm, expected] of responseVectors) {
  test(`P-10 RFC 7616 §3.9.1 worked example, ${algorithm} response`, () => {
    const ha1 = computeHA1(algorithm, RFC.username, RFC.realm, RFC.password);
    assert.equal(computeResponse(algorithm, ha1, RFC), expected);
  });
}

// Computed independently with coreutils: printf '%s' 'Mufasa:http-auth@example.org:Circle of Life' | sha256sum
const hashVectors: ReadonlyArray<readonly [label: string, actual: () => string, expected: string]> = [
  ['HA1 SHA-256', () => computeHA1('SHA-256', 'Mufasa', RFC.realm, 'Circle of Life'), '7987c64c30e25f1b74be53f966b49b90f2808aa92faf9a00262392d7b4794232'],
  ['HA1 MD5', () => computeHA1('MD5', 'Mufasa', RFC.realm, 'Circle of Life'), '3d78807defe7de2157e2b0b6573a855f'],
  ['userhash SHA-256', () => computeUserhash('SHA-256', 'Mufasa', RFC.realm), 'a947aad205e80e429958a387394944c6b496301e79f89d35a4cc23b6ee12b5b6'],
  ['userhash MD5', () => computeUserhash('MD5', 'Mufasa', RFC.realm), '4238f3a16167373febb9bc4d43db9cc4'],
  // RFC 7616 §3.9.2's user, hashed over UTF-8 as §3.4.4 says (the RFC's own numbers are for SHA-512-256).
  ['userhash of a non-ASCII name is over UTF-8', () => computeUserhash('SHA-256', 'Jäsøn Doe', 'api@example.org'), '5a1a8a47df5c298551b9b42ba9b05835174a5bd7d511ff7fe9191d8e946fc4e7'],
];

for (const [label, actual, expected] of hashVectors) {
  test(`P-10 ${label}`, () => {
    assert.equal(actual(), expected);
  });
}

// ---------------------------------------------------------------------------
// A tiny Digest client, so tests exercise the server side end to end.

interface Answer {
  readonly username?: string;
  readonly password?: string;
  readonly method?: string;
  readonly uri?: string;
  readonly nc?: string;
  readonly cnonce?: string;
  readonly userhash?: boolean;
  readonly realm?: string;
  readonly nonce?: string;
}

function challengeParams(challenge: string): ReadonlyMap<string, string> {
  assert.ok(challenge.startsWith('Digest '));
  const params = parseAuthParams(challenge.slice('Digest '.length));
  assert.ok(params !== undefined, `challenge does not parse: ${challenge}`);
  return new Map([...params].map(([name, param]) => [name, param.value]));
}

function answer(challenge: string, options: Answer = {}): string {
  const params = challengeParams(challenge);
  const algorithm = params.get('algorithm') as DigestAlgorithm;
  const realm = options.realm ?? params.get('realm') ?? '';
  const username = options.username ?? 'alice';
  const password = options.password ?? 'correct horse battery staple';
  const method = options.method ?? 'GET';
  const uri = options.uri ?? '/x';
  const nonce = options.nonce ?? params.get('nonce') ?? '';
  const nc = options.nc ?? '00000001';
  const cnonce = options.cnonce ?? 'cnonce-1';
  const userhash = options.userhash ?? false;
  const ha1 = computeHA1(algorithm, username, realm, password);
  const response = computeResponse(algorithm, ha1, { nonce, nc, cnonce, qop: 'auth', method, uri });
  const sentName = userhash ? computeUserhash(algorithm, username, realm) : username;
  return (
    `Digest username="${sentName}", realm="${realm}", uri="${uri}", algorithm=${algorithm}, nonce="${nonce}", ` +
    `nc=${nc}, cnonce="${cnonce}", qop=auth, response="${response}", opaque="${params.get('opaque') ?? ''}", ` +
    `userhash=${String(userhash)}`
  );
}

function parsed(header: string): DigestParams {
  const params = parseDigest(header);
  assert.ok(typeof params === 'object', `header does not parse: ${header}`);
  return params;
}

const REALM = 'httpskit';
const USERS: ReadonlyMap<string, string> = new Map([
  ['alice', 'correct horse battery staple'],
  ['Jäsøn Doe', 'Secret, or not?'],
]);

/** The lookup an application would write: resolves userhashes to names, returns HA1 for the algorithm. */
const lookup: DigestLookup = (username, userhash, algorithm) => {
  for (const [name, password] of USERS) {
    if (userhash ? computeUserhash(algorithm, name, REALM) === username : name === username) {
      return { name, ha1: computeHA1(algorithm, name, REALM, password) };
    }
  }
  return undefined;
};

function setup(options: { ttl?: number; max?: number; secret?: Buffer; realm?: string } = {}): {
  auth: DigestAuth;
  clock: { now: number };
} {
  const clock = { now: 1_700_000_000_000 };
  const auth = createDigestAuth({
    realm: options.realm ?? REALM,
    secret: options.secret ?? Buffer.alloc(32, 7),
    nonceTtlMs: options.ttl ?? 300_000,
    now: () => clock.now,
  });
  return { auth, clock };
}

// Replay protection is the nonce ledger's (NonceLedger.claim: a count is good once, higher counts
// only); these tests pair the verifier with a ledger of that rule kept in a map, as the
// authenticator pairs it with the store's (tested in test/users/throttle.test.ts and end to end).
const claims = new WeakMap<DigestAuth, Map<string, number>>();

/** The verdict's result and name (an ok verdict also carries the nonce, its count and expiry). */
function pick(verdict: DigestVerdict): { result: string; username?: string } {
  return verdict.result === 'ok' ? { result: verdict.result, username: verdict.username } : { result: verdict.result };
}

function verify(auth: DigestAuth, header: string, request: { method?: string; uri?: string } = {}): DigestVerdict {
  const verdict = auth.verify(parsed(header), { method: request.method ?? 'GET', uri: request.uri ?? '/x' }, lookup);
  if (verdict.result !== 'ok') return verdict;
  const used = claims.get(auth) ?? new Map<string, number>();
  claims.set(auth, used);
  if ((used.get(verdict.nonce) ?? 0) >= verdict.count) return { result: 'invalid' };
  used.set(verdict.nonce, verdict.count);
  return verdict;
}

function sha256Challenge(auth: DigestAuth, stale?: boolean): string {
  const [first] = auth.challenges(stale);
  assert.ok(first !== undefined);
  return first;
}

// ---------------------------------------------------------------------------
// Challenges

test('P-10 challenges: SHA-256 first, then MD5, qop="auth", userhash, one shared fresh nonce', () => {
  const { auth } = setup();
  const challenges = auth.challenges();
  assert.equal(challenges.length, 2);
  const [sha, md5] = challenges.map(challengeParams);
  assert.ok(sha && md5);
  assert.equal(sha.get('algorithm'), 'SHA-256');
  assert.equal(md5.get('algorithm'), 'MD5');
  for (const params of [sha, md5]) {
    assert.equal(params.get('realm'), REALM);
    assert.equal(params.get('qop'), 'auth');
    assert.equal(params.get('userhash'), 'true');
    assert.equal(params.get('charset'), 'UTF-8');
    assert.equal(params.has('stale'), false);
    assert.match(params.get('nonce') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(params.get('opaque') ?? '', /^[A-Za-z0-9_-]{22}$/);
  }
  assert.equal(sha.get('nonce'), md5.get('nonce'));
  assert.match(challenges[0] ?? '', /^Digest realm="httpskit", qop="auth", algorithm=SHA-256, nonce="[^"]+", opaque="[^"]+", charset=UTF-8, userhash=true$/);
  assert.notEqual(challengeParams(sha256Challenge(auth)).get('nonce'), sha.get('nonce'));
});

test('P-10 challenges(true) adds stale=true to each', () => {
  const { auth } = setup();
  for (const challenge of auth.challenges(true)) assert.equal(challengeParams(challenge).get('stale'), 'true');
});

// ---------------------------------------------------------------------------
// Verification and the nonce lifecycle, with a fake clock

test('P-10 fresh nonce, right password → ok, for both algorithms', () => {
  const { auth } = setup();
  for (const index of [0, 1]) {
    const challenge = auth.challenges()[index] ?? '';
    assert.deepEqual(pick(verify(auth, answer(challenge))), { result: 'ok', username: 'alice' });
  }
});

test('P-10 userhash: the hashed name is resolved by the lookup and the real name comes back', () => {
  const { auth } = setup();
  for (const index of [0, 1]) {
    const challenge = auth.challenges()[index] ?? '';
    const header = answer(challenge, { userhash: true, username: 'Jäsøn Doe', password: 'Secret, or not?' });
    assert.match(header, /username="[0-9a-f]{32,64}"/);
    assert.deepEqual(pick(verify(auth, header)), { result: 'ok', username: 'Jäsøn Doe' });
  }
});

test('P-10 a lookup that returns a bare HA1 string: the name is the one sent', () => {
  const { auth } = setup();
  const header = answer(sha256Challenge(auth));
  const ha1 = computeHA1('SHA-256', 'alice', REALM, 'correct horse battery staple');
  assert.deepEqual(pick(auth.verify(parsed(header), { method: 'GET', uri: '/x' }, () => ha1)), { result: 'ok', username: 'alice' });
  // upper-case hex from the store is fine too
  const again = answer(sha256Challenge(auth));
  assert.deepEqual(pick(auth.verify(parsed(again), { method: 'GET', uri: '/x' }, () => ha1.toUpperCase())), { result: 'ok', username: 'alice' });
});

test('P-10 a non-ASCII name sent as raw UTF-8 octets verifies', () => {
  const { auth } = setup();
  const header = answer(sha256Challenge(auth), { username: 'Jäsøn Doe', password: 'Secret, or not?' });
  // what Node hands over: one char per octet
  const wire = Buffer.from(header, 'utf8').toString('latin1');
  assert.deepEqual(pick(verify(auth, wire)), { result: 'ok', username: 'Jäsøn Doe' });
});

const failures: ReadonlyArray<readonly [label: string, make: (challenge: string) => string, request: { method?: string; uri?: string }, expected: DigestVerdict['result']]> = [
  ['wrong password → invalid', (c) => answer(c, { password: 'wrong' }), {}, 'invalid'],
  ['unknown user → invalid', (c) => answer(c, { username: 'mallory' }), {}, 'invalid'],
  ['userhash of an unknown user → invalid', (c) => answer(c, { username: 'mallory', userhash: true }), {}, 'invalid'],
  ['userhash=true but a plain name → invalid', (c) => answer(c).replace('userhash=false', 'userhash=true'), {}, 'invalid'],
  ['other realm → invalid', (c) => answer(c, { realm: 'elsewhere' }), {}, 'invalid'],
  ['uri is not the request-target → bad-request (RFC 7616 §3.4.6)', (c) => answer(c, { uri: '/y' }), {}, 'bad-request'],
  ['uri differs only by query → bad-request', (c) => answer(c, { uri: '/x?a=1' }), {}, 'bad-request'],
  ['response computed for another method → invalid', (c) => answer(c, { method: 'PUT' }), {}, 'invalid'],
  ['opaque altered → invalid', (c) => answer(c).replace(/opaque="[^"]*"/, 'opaque="other"'), {}, 'invalid'],
  ['nc of zero → invalid', (c) => answer(c, { nc: '00000000' }), {}, 'invalid'],
  ['random nonce → invalid', (c) => answer(c, { nonce: randomBytes(32).toString('base64url') }), {}, 'invalid'],
  ['RFC example nonce → invalid', (c) => answer(c, { nonce: RFC.nonce }), {}, 'invalid'],
  ['nonce with one MAC bit flipped → invalid', (c) => answer(c, { nonce: flipLastByte(challengeParams(c).get('nonce') ?? '') }), {}, 'invalid'],
  ['nonce with the timestamp moved forward → invalid', (c) => answer(c, { nonce: bumpTimestamp(challengeParams(c).get('nonce') ?? '') }), {}, 'invalid'],
  ['nonce with padding added → invalid', (c) => answer(c, { nonce: `${challengeParams(c).get('nonce') ?? ''}=` }), {}, 'invalid'],
];

for (const [label, make, request, expected] of failures) {
  test(`P-10 ${label}`, () => {
    const { auth } = setup();
    assert.equal(verify(auth, make(sha256Challenge(auth)), request).result, expected);
  });
}

function flipLastByte(nonce: string): string {
  const bytes = Buffer.from(nonce, 'base64url');
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
  return bytes.toString('base64url');
}

function bumpTimestamp(nonce: string): string {
  const bytes = Buffer.from(nonce, 'base64url');
  bytes.writeBigUInt64BE(bytes.readBigUInt64BE(0) + 1_000_000n, 0);
  return bytes.toString('base64url');
}

test('P-10 opaque may be left out by the client', () => {
  const { auth } = setup();
  const header = answer(sha256Challenge(auth)).replace(/, opaque="[^"]*"/, '');
  assert.equal(verify(auth, header).result, 'ok');
});

test('P-10 a nonce from another secret or another realm is not ours → invalid', () => {
  const ours = setup();
  const otherSecret = setup({ secret: Buffer.alloc(32, 8) });
  const otherRealm = setup({ realm: 'other' });
  const header = answer(sha256Challenge(ours.auth));
  assert.equal(verify(otherSecret.auth, header).result, 'invalid');
  // same secret, other realm: answer it for the other realm so only the nonce is foreign
  const nonce = challengeParams(sha256Challenge(ours.auth)).get('nonce') ?? '';
  const forOther = answer(sha256Challenge(otherRealm.auth), { nonce });
  assert.equal(verify(otherRealm.auth, forOther).result, 'invalid');
  assert.equal(verify(ours.auth, header).result, 'ok');
});

test('P-10 expired nonce with a correct response → stale; with a wrong one → invalid', () => {
  const { auth, clock } = setup({ ttl: 1_000 });
  const challenge = sha256Challenge(auth);
  clock.now += 1_000;
  assert.equal(verify(auth, answer(challenge)).result, 'ok', 'exactly at the TTL is still fresh');
  clock.now += 1;
  assert.equal(verify(auth, answer(challenge, { nc: '00000002' })).result, 'stale');
  assert.equal(verify(auth, answer(challenge, { nc: '00000003', password: 'wrong' })).result, 'invalid');
  assert.equal(verify(auth, answer(challenge, { nc: '00000004', username: 'mallory' })).result, 'invalid');
  // and the fresh challenge sent with stale=true works
  assert.equal(verify(auth, answer(sha256Challenge(auth, true))).result, 'ok');
});

test('P-10 a nonce from the future (clock stepped back) → stale, not ok', () => {
  const { auth, clock } = setup();
  const challenge = sha256Challenge(auth);
  clock.now -= 1;
  assert.equal(verify(auth, answer(challenge)).result, 'stale');
});

test('P-10 nonce counts: increasing is ok, repeated or lower is a replay → invalid', () => {
  const { auth } = setup();
  const challenge = sha256Challenge(auth);
  const first = answer(challenge, { nc: '00000001' });
  assert.equal(verify(auth, first).result, 'ok');
  assert.equal(verify(auth, first).result, 'invalid', 'exact replay');
  assert.equal(verify(auth, answer(challenge, { nc: '00000002', cnonce: 'other' })).result, 'ok');
  assert.equal(verify(auth, answer(challenge, { nc: '00000002', cnonce: 'third' })).result, 'invalid', 'same nc, new cnonce');
  assert.equal(verify(auth, answer(challenge, { nc: '0000000A' })).result, 'ok', 'gaps are fine');
  assert.equal(verify(auth, answer(challenge, { nc: '00000009' })).result, 'invalid', 'lower than the highest seen');
  assert.equal(verify(auth, answer(challenge, { nc: 'ffffffff' })).result, 'ok');
  // Other nonces keep their own counters.
  assert.equal(verify(auth, answer(sha256Challenge(auth), { nc: '00000001' })).result, 'ok');
});

test('P-10 a replay attempt with a wrong response does not disturb the counter', () => {
  const { auth } = setup();
  const challenge = sha256Challenge(auth);
  assert.equal(verify(auth, answer(challenge, { nc: '00000005', password: 'wrong' })).result, 'invalid');
  assert.equal(verify(auth, answer(challenge, { nc: '00000001' })).result, 'ok');
});

test('P-10 unknown users cost a response computation too (no early return before hashing)', () => {
  const { auth } = setup();
  let calls = 0;
  const counting: DigestLookup = (...args) => {
    calls++;
    return lookup(...args);
  };
  const header = answer(sha256Challenge(auth), { username: 'mallory' });
  assert.equal(auth.verify(parsed(header), { method: 'GET', uri: '/x' }, counting).result, 'invalid');
  assert.equal(calls, 1);
});

test('P-10 createDigestAuth checks its options (programmer input)', () => {
  const secret = Buffer.alloc(32);
  assert.throws(() => createDigestAuth({ realm: 'a"b', secret }), TypeError);
  assert.throws(() => createDigestAuth({ realm: '', secret }), TypeError);
  assert.throws(() => createDigestAuth({ realm: 'r', secret: Buffer.alloc(8) }), TypeError);
  assert.throws(() => createDigestAuth({ realm: 'r', secret, nonceTtlMs: 0 }), RangeError);
  assert.throws(() => createDigestAuth({ realm: 'r', secret, nonceTtlMs: 1.5 }), RangeError);
});

test('P-10 a lookup returning something that is not an HA1 is a programming error', () => {
  const { auth } = setup();
  const params = parsed(answer(sha256Challenge(auth)));
  assert.throws(() => auth.verify(params, { method: 'GET', uri: '/x' }, () => 'not-hex'), TypeError);
  const md5Ha1 = computeHA1('MD5', 'alice', REALM, 'x');
  assert.throws(() => auth.verify(params, { method: 'GET', uri: '/x' }, () => md5Ha1), TypeError);
});

// ---------------------------------------------------------------------------
// Real curl (7.88 is what the contract names)

async function curlVersion(): Promise<string | undefined> {
  try {
    const { stdout } = await run('curl', ['--version']);
    return stdout.split('\n')[0];
  } catch {
    return undefined;
  }
}

interface Seen {
  readonly algorithm: DigestAlgorithm;
  readonly userhash: boolean;
  readonly verdict: DigestVerdict['result'];
}

/** A throwaway plain-HTTP server: 401 with both challenges, or 200 once Digest verifies. */
async function digestServer(t: import('node:test').TestContext, expireAfterFirstAttempt = false): Promise<{ url: string; seen: Seen[] }> {
  const clock = { now: 1_700_000_000_000 };
  const auth = createDigestAuth({ realm: REALM, secret: randomBytes(32), nonceTtlMs: 60_000, now: () => clock.now });
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const params = parseDigest(req.headers.authorization);
    if (params === 'malformed') {
      res.writeHead(400).end();
      return;
    }
    let stale = false;
    if (params !== undefined) {
      if (expireAfterFirstAttempt && seen.length === 0) clock.now += 60_001;
      const verdict = auth.verify(params, { method: req.method ?? '', uri: req.url ?? '' }, lookup);
      seen.push({ algorithm: params.algorithm, userhash: params.userhash, verdict: verdict.result });
      if (verdict.result === 'ok') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello ${verdict.username}`);
        return;
      }
      if (verdict.result === 'bad-request') {
        res.writeHead(400).end();
        return;
      }
      stale = verdict.result === 'stale';
    }
    res.setHeader('WWW-Authenticate', auth.challenges(stale));
    res.writeHead(401).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/x?y=1`, seen };
}

async function curl(url: string, user: string, ...extra: string[]): Promise<{ status: string; body: string }> {
  // -w prints the status after the body; the password on argv is fine for a throwaway test user.
  const { stdout } = await run('curl', ['--silent', '--show-error', '--digest', '-u', user, '-w', '\n%{http_code}', ...extra, url]);
  const cut = stdout.lastIndexOf('\n');
  return { body: stdout.slice(0, cut), status: stdout.slice(cut + 1) };
}

test('P-10 real curl --digest: right password → 200 over SHA-256 with userhash; wrong → 401', async (t) => {
  const version = await curlVersion();
  if (version === undefined) {
    t.skip('curl is not installed; the Digest interop test needs it');
    return;
  }
  t.diagnostic(version);

  const ok = await digestServer(t);
  const good = await curl(ok.url, 'alice:correct horse battery staple');
  assert.equal(good.status, '200');
  assert.equal(good.body, 'hello alice');
  assert.deepEqual(ok.seen, [{ algorithm: 'SHA-256', userhash: true, verdict: 'ok' }]);
  t.diagnostic(`curl answered the first challenge: ${JSON.stringify(ok.seen[0])}`);

  const bad = await digestServer(t);
  const wrong = await curl(bad.url, 'alice:wrong password');
  assert.equal(wrong.status, '401');
  assert.deepEqual(bad.seen, [{ algorithm: 'SHA-256', userhash: true, verdict: 'invalid' }], 'curl gives up after one try');

  const utf8 = await digestServer(t);
  const jason = await curl(utf8.url, 'Jäsøn Doe:Secret, or not?');
  assert.equal(jason.status, '200');
  assert.equal(jason.body, 'hello Jäsøn Doe');
});

test('P-10 real curl --digest follows stale=true to a fresh nonce', async (t) => {
  if ((await curlVersion()) === undefined) {
    t.skip('curl is not installed; the Digest interop test needs it');
    return;
  }
  const server = await digestServer(t, true);
  const result = await curl(server.url, 'alice:correct horse battery staple');
  assert.deepEqual(
    server.seen.map((s) => s.verdict),
    ['stale', 'ok'],
  );
  assert.equal(result.status, '200');
});

test('P-10 real curl --digest PUT with a body (curl probes with an empty body first)', async (t) => {
  if ((await curlVersion()) === undefined) {
    t.skip('curl is not installed; the Digest interop test needs it');
    return;
  }
  const server = await digestServer(t);
  const result = await curl(server.url, 'alice:correct horse battery staple', '-X', 'PUT', '-H', 'Content-Type: text/plain', '--data-binary', 'new password here');
  assert.equal(result.status, '200');
  assert.deepEqual(server.seen, [{ algorithm: 'SHA-256', userhash: true, verdict: 'ok' }]);
});
