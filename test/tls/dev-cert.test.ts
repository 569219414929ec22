import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createServer, get } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { removeTempDir } from '../helpers/tmp.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSelfSignedCertificate, ensureDevCertificate, removeDevCertificate } from '../../lib/tls/dev-cert.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const FIXED_NOW = Date.UTC(2026, 2, 4, 5, 6, 7, 890);
const SAN = 'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1';

// One certificate for the read-only tests: key generation is cheap, but one is enough.
const shared = createSelfSignedCertificate();

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-cert-'));
  // Never throws (a later hook closes what may still write here): see helpers/tmp.ts.
  t.after(() => removeTempDir(dir));
  return dir;
}

/** Start a real HTTPS server with the pair; undefined when `host` cannot be bound (no IPv6). */
async function serve(t: TestContext, pair: { cert: string; key: string }, host: string): Promise<number | undefined> {
  const server = createServer({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' }, (_req, res) => res.end('ok'));
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, host, () => resolve(true));
  });
  if (!bound) return undefined;
  t.after(() => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections(); // a peer that failed midway must not hold the close
    return closed;
  });
  return (server.address() as AddressInfo).port;
}

// Every peer and child gets a bound: a hang fails its own test, named, instead of the whole file
// at the runner's limit with nothing said (a CI run once lost this file that way).
const PEER_TIMEOUT_MS = 30_000;

/** GET over HTTPS with default host name verification; resolves to the body or the error code. */
function fetchText(url: string, options: RequestOptions): Promise<{ body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = get(url, { ...options, agent: false, timeout: PEER_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ body }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in ${PEER_TIMEOUT_MS} ms`)));
  });
}

function run(command: string, args: readonly string[]): Promise<{ code: number | string; stdout: string; stderr: string } | undefined> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8', timeout: PEER_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error !== null && (error as NodeJS.ErrnoException).code === 'ENOENT') return resolve(undefined);
      if (error?.killed === true) return resolve({ code: 'timed out', stdout, stderr: `${command} ${args.join(' ')}: no exit in ${PEER_TIMEOUT_MS} ms\n${stderr}` });
      resolve({ code: error === null ? 0 : (error.code ?? 'failed'), stdout, stderr });
    });
  });
}

const HAS_CURL = spawnSync('curl', ['--version'], { timeout: PEER_TIMEOUT_MS }).error === undefined;
const HAS_OPENSSL = spawnSync('openssl', ['version'], { timeout: PEER_TIMEOUT_MS }).error === undefined;

// --- the certificate itself ---------------------------------------------------------------

test('T-2: X509Certificate parses it; SANs are localhost, 127.0.0.1 and ::1', () => {
  const x509 = new X509Certificate(shared.cert);
  assert.equal(x509.subjectAltName, SAN);
  assert.equal(x509.subject, 'O=httpskit development\nCN=localhost');
  assert.equal(x509.issuer, x509.subject);
  assert.equal(x509.checkHost('localhost'), 'localhost');
  assert.equal(x509.checkIP('127.0.0.1'), '127.0.0.1');
  assert.equal(x509.checkIP('::1'), '::1');
  assert.equal(x509.checkHost('example.com'), undefined);
});

test('T-2: EC P-256 key, self-signed with ecdsa-with-SHA256, end-entity for serverAuth', () => {
  const x509 = new X509Certificate(shared.cert);
  const key = createPrivateKey(shared.key);
  assert.equal(key.asymmetricKeyType, 'ec');
  assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  assert.ok(x509.checkPrivateKey(key));
  assert.ok(x509.verify(x509.publicKey), 'signature verifies with its own key');
  assert.equal(x509.ca, false);
  assert.deepEqual(x509.keyUsage, ['1.3.6.1.5.5.7.3.1']); // extKeyUsage serverAuth
  assert.match(shared.key, /^-{5}BEGIN PRIVATE KEY-{5}\n/);
  assert.match(shared.cert, /^-----BEGIN CERTIFICATE-----\n([A-Za-z0-9+/=]{1,64}\n)+-----END CERTIFICATE-----\n$/);
});

test('T-2: serial numbers are random, positive and 16 bytes', () => {
  const serials = new Set<string>();
  for (let i = 0; i < 20; i += 1) {
    const serial = new X509Certificate(createSelfSignedCertificate().cert).serialNumber;
    assert.match(serial, /^[4-7][0-9A-F]{31}$/);
    serials.add(serial);
  }
  assert.equal(serials.size, 20);
});

test('T-2: validity runs from an hour before now for the given days', () => {
  const x509 = new X509Certificate(createSelfSignedCertificate({ now: () => FIXED_NOW, days: 30 }).cert);
  const second = (ms: number): number => Math.floor(ms / 1000) * 1000;
  assert.equal(Date.parse(x509.validFrom), second(FIXED_NOW - HOUR));
  assert.equal(Date.parse(x509.validTo), second(FIXED_NOW + 30 * DAY));
  const defaults = new X509Certificate(createSelfSignedCertificate({ now: () => FIXED_NOW }).cert);
  assert.equal(Date.parse(defaults.validTo), second(FIXED_NOW + 365 * DAY));
});

test('T-2: dates from 2050 on are GeneralizedTime and still parse', () => {
  const now = Date.UTC(2049, 11, 1);
  const x509 = new X509Certificate(createSelfSignedCertificate({ now: () => now, days: 397 }).cert);
  assert.equal(Date.parse(x509.validFrom), now - HOUR);
  assert.equal(Date.parse(x509.validTo), now + 397 * DAY);
});

for (const days of [0, 398, 1.5, Number.NaN, -1]) {
  test(`T-2: days ${days} is refused`, () => {
    assert.throws(() => createSelfSignedCertificate({ days }), RangeError);
  });
}

test('T-2: a now() that is not a number is refused', () => {
  assert.throws(() => createSelfSignedCertificate({ now: () => Number.NaN }), TypeError);
});

// --- real peers ------------------------------------------------------------------------------

test('T-2: Node trusts it with ca: cert for localhost, 127.0.0.1 and ::1', async (t) => {
  const port = await serve(t, shared, '127.0.0.1');
  assert.ok(port !== undefined);
  // family 4: "localhost" must reach the IPv4 listener whatever the resolver order.
  assert.deepEqual(await fetchText(`https://localhost:${port}/`, { ca: shared.cert, family: 4 }), { body: 'ok' });
  assert.deepEqual(await fetchText(`https://127.0.0.1:${port}/`, { ca: shared.cert }), { body: 'ok' });

  const port6 = await serve(t, shared, '::1');
  if (port6 === undefined) {
    t.diagnostic('IPv6 loopback unavailable: skipped the [::1] connection');
  } else {
    assert.deepEqual(await fetchText(`https://[::1]:${port6}/`, { ca: shared.cert }), { body: 'ok' });
  }
});

test('T-2: host name verification stays on: other names and other anchors fail', async (t) => {
  const port = await serve(t, shared, '127.0.0.1');
  assert.ok(port !== undefined);
  const url = `https://127.0.0.1:${port}/`;
  assert.deepEqual(await fetchText(url, { ca: shared.cert, servername: 'example.com' }), { error: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  assert.deepEqual(await fetchText(url, {}), { error: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  assert.deepEqual(await fetchText(url, { ca: createSelfSignedCertificate().cert }), { error: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
});

test('T-2: curl --cacert trusts it', { skip: HAS_CURL ? false : 'curl not installed' }, async (t) => {
  const dir = await tempDir(t);
  const certPath = join(dir, 'cert.pem');
  await writeFile(certPath, shared.cert);
  const port = await serve(t, shared, '127.0.0.1');
  assert.ok(port !== undefined);

  for (const url of [`https://localhost:${port}/`, `https://127.0.0.1:${port}/`]) {
    const result = await run('curl', ['--silent', '--show-error', '--ipv4', '--cacert', certPath, url]);
    assert.deepEqual({ code: result?.code, stdout: result?.stdout }, { code: 0, stdout: 'ok' }, result?.stderr);
  }
  const port6 = await serve(t, shared, '::1');
  if (port6 === undefined) {
    t.diagnostic('IPv6 loopback unavailable: skipped curl to [::1]');
  } else {
    const result = await run('curl', ['--silent', '--show-error', '--cacert', certPath, `https://[::1]:${port6}/`]);
    assert.deepEqual({ code: result?.code, stdout: result?.stdout }, { code: 0, stdout: 'ok' }, result?.stderr);
  }
  // CURLE_PEER_FAILED_VERIFICATION (60): untrusted without --cacert, wrong name with it.
  const untrusted = await run('curl', ['--silent', '--ipv4', `https://localhost:${port}/`]);
  assert.equal(untrusted?.code, 60);
  const wrongName = await run('curl', ['--silent', '--cacert', certPath, '--resolve', `example.com:${port}:127.0.0.1`, `https://example.com:${port}/`]);
  assert.equal(wrongName?.code, 60);
});

test('T-2: openssl verify -CAfile accepts it and x509 -text shows the SANs', { skip: HAS_OPENSSL ? false : 'openssl not installed' }, async (t) => {
  const dir = await tempDir(t);
  const certPath = join(dir, 'cert.pem');
  await writeFile(certPath, shared.cert);

  const plain = await run('openssl', ['verify', '-CAfile', certPath, certPath]);
  assert.deepEqual({ code: plain?.code, stdout: plain?.stdout }, { code: 0, stdout: `${certPath}: OK\n` }, plain?.stderr);
  for (const check of [['-verify_hostname', 'localhost'], ['-verify_ip', '127.0.0.1'], ['-verify_ip', '::1']]) {
    const strict = await run('openssl', ['verify', '-x509_strict', '-purpose', 'sslserver', ...check, '-CAfile', certPath, certPath]);
    assert.equal(strict?.code, 0, `${check.join(' ')}: ${strict?.stdout ?? ''}${strict?.stderr ?? ''}`);
  }
  const wrong = await run('openssl', ['verify', '-verify_hostname', 'example.com', '-CAfile', certPath, certPath]);
  assert.notEqual(wrong?.code, 0);

  const text = await run('openssl', ['x509', '-noout', '-text', '-in', certPath]);
  assert.equal(text?.code, 0);
  assert.match(text?.stdout ?? '', /DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/);
  assert.match(text?.stdout ?? '', /Version: 3 \(0x2\)/);
  assert.match(text?.stdout ?? '', /Signature Algorithm: ecdsa-with-SHA256/);
  assert.match(text?.stdout ?? '', /Basic Constraints: critical\s+CA:FALSE/);
  assert.match(text?.stdout ?? '', /Key Usage: critical\s+Digital Signature\n/);
  assert.match(text?.stdout ?? '', /Extended Key Usage:\s+TLS Web Server Authentication/);
  assert.match(text?.stdout ?? '', /Subject Key Identifier:/);

  // DER is strict: asn1parse with -strictpem must read every byte.
  const parsed = await run('openssl', ['asn1parse', '-strictpem', '-in', certPath]);
  assert.equal(parsed?.code, 0, parsed?.stderr);
});

// --- ensureDevCertificate --------------------------------------------------------------------

test('T-2: first call creates the pair (key 0600), second call reuses it', async (t) => {
  const root = await tempDir(t);
  const dir = join(root, 'nested', 'certs');
  const first = await ensureDevCertificate(dir);
  assert.equal(first.created, true);
  assert.equal(first.certPath, join(dir, 'localhost-cert.pem'));
  assert.equal(first.keyPath, join(dir, 'localhost-key.pem'));
  assert.equal(await readFile(first.certPath, 'utf8'), first.cert);
  assert.equal(await readFile(first.keyPath, 'utf8'), first.key);
  if (process.platform !== 'win32') {
    assert.equal((await stat(first.keyPath)).mode & 0o777, 0o600);
    assert.equal((await stat(first.certPath)).mode & 0o700, 0o600, 'owner can read and write the certificate');
  }
  assert.deepEqual((await readdir(dir)).sort(), ['localhost-cert.pem', 'localhost-key.pem'], 'no lock or temporary files left');

  const second = await ensureDevCertificate(dir);
  assert.deepEqual(second, { ...first, created: false, createdDir: undefined });
});

test('T-2: the directory is made private whatever the umask; a key open to others is replaced; a directory others can write is refused', { skip: process.platform === 'win32' ? 'no POSIX modes' : false }, async (t) => {
  const root = await tempDir(t);
  const dir = join(root, 'made', 'certs');
  const umask = process.umask(0);
  let first;
  try {
    first = await ensureDevCertificate(dir);
  } finally {
    process.umask(umask);
  }
  assert.equal((await stat(dir)).mode & 0o777, 0o700, 'no other user can replace the pair');
  assert.equal((await stat(join(root, 'made'))).mode & 0o777, 0o700);
  assert.equal((await stat(first.keyPath)).mode & 0o777, 0o600);

  await chmod(first.keyPath, 0o644);
  const second = await ensureDevCertificate(dir);
  assert.equal(second.created, true, 'a key others could read is not used');
  assert.notEqual(second.key, first.key);
  assert.equal((await stat(second.keyPath)).mode & 0o777, 0o600);

  await chmod(dir, 0o777);
  await assert.rejects(ensureDevCertificate(dir), /the development certificate's directory .* is writable by others/);
  assert.equal(await readFile(second.keyPath, 'utf8'), second.key, 'nothing replaced');
});

test('T-2: reused while at least 24 hours of validity remain, regenerated after', async (t) => {
  const dir = await tempDir(t);
  const first = await ensureDevCertificate(dir, { now: () => FIXED_NOW });
  const notAfter = Date.parse(new X509Certificate(first.cert).validTo);

  const early = await ensureDevCertificate(dir, { now: () => notAfter - DAY - 1000 });
  assert.equal(early.created, false);
  assert.equal(early.cert, first.cert);

  const late = await ensureDevCertificate(dir, { now: () => notAfter - DAY + 1000 });
  assert.equal(late.created, true);
  assert.notEqual(late.cert, first.cert);
  assert.equal(Date.parse(new X509Certificate(late.cert).validFrom), Math.floor((notAfter - DAY + 1000) / 1000) * 1000 - HOUR);

  const expired = await ensureDevCertificate(dir, { now: () => notAfter + 400 * DAY });
  assert.equal(expired.created, true);
});

test('T-2: a certificate not yet valid is regenerated', async (t) => {
  const dir = await tempDir(t);
  await ensureDevCertificate(dir, { now: () => FIXED_NOW });
  const before = await ensureDevCertificate(dir, { now: () => FIXED_NOW - 2 * HOUR });
  assert.equal(before.created, true);
});

const damages: ReadonlyArray<readonly [name: string, damage: (dir: string) => Promise<void>]> = [
  ['the key is missing', (dir) => rm(join(dir, 'localhost-key.pem'))],
  ['the certificate is missing', (dir) => rm(join(dir, 'localhost-cert.pem'))],
  ['the certificate is garbage', (dir) => writeFile(join(dir, 'localhost-cert.pem'), 'garbage')],
  ['the key is garbage', (dir) => writeFile(join(dir, 'localhost-key.pem'), `${'-'.repeat(5)}BEGIN PRIVATE KEY${'-'.repeat(5)}\nAAAA\n${'-'.repeat(5)}END PRIVATE KEY${'-'.repeat(5)}\n`)],
  ['the key does not match', (dir) => writeFile(join(dir, 'localhost-key.pem'), createSelfSignedCertificate().key)],
];

for (const [name, damage] of damages) {
  test(`T-2: regenerated when ${name}`, async (t) => {
    const dir = await tempDir(t);
    const first = await ensureDevCertificate(dir);
    await damage(dir);
    const again = await ensureDevCertificate(dir);
    assert.equal(again.created, true);
    assert.notEqual(again.cert, first.cert);
    assert.ok(new X509Certificate(await readFile(again.certPath, 'utf8')).checkPrivateKey(createPrivateKey(await readFile(again.keyPath, 'utf8'))));
  });
}

test('T-2: a valid pair for another name is replaced', { skip: HAS_OPENSSL ? false : 'openssl not installed' }, async (t) => {
  const dir = await tempDir(t);
  // openssl is only the test's way to get a matching pair for example.com.
  const made = await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '30',
    '-subj', '/CN=example.com', '-addext', 'subjectAltName=DNS:example.com',
    '-keyout', join(dir, 'localhost-key.pem'), '-out', join(dir, 'localhost-cert.pem'),
  ]);
  assert.equal(made?.code, 0, made?.stderr);
  const result = await ensureDevCertificate(dir);
  assert.equal(result.created, true);
  assert.equal(new X509Certificate(result.cert).subjectAltName, SAN);
});

test('T-2: concurrent calls in one process agree on one pair', async (t) => {
  const dir = await tempDir(t);
  const results = await Promise.all(Array.from({ length: 8 }, () => ensureDevCertificate(dir)));
  assert.equal(results.filter((r) => r.created).length, 1);
  assert.equal(new Set(results.map((r) => r.cert)).size, 1);
  assert.equal(await readFile(join(dir, 'localhost-cert.pem'), 'utf8'), results[0]?.cert);
  assert.equal(await readFile(join(dir, 'localhost-key.pem'), 'utf8'), results[0]?.key);
});

test('T-2: processes starting at once leave one matching pair', async (t) => {
  const dir = await tempDir(t);
  const module = fileURLToPath(new URL('../../lib/tls/dev-cert.ts', import.meta.url));
  const script = `import { ensureDevCertificate } from ${JSON.stringify(module)};
const r = await ensureDevCertificate(${JSON.stringify(dir)});
process.stdout.write(JSON.stringify({ created: r.created, cert: r.cert }));`;
  const outputs = await Promise.all(
    Array.from({ length: 4 }, () =>
      new Promise<string>((resolve, reject) => {
        // The lock gives up after 30 s; a child still running well after that is stuck, and is killed.
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 3 * PEER_TIMEOUT_MS });
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
        child.on('error', reject);
        child.on('close', (code, signal) => (code === 0 ? resolve(out) : reject(new Error(`child exited with ${String(code ?? signal)}`))));
      }),
    ),
  );
  const results = outputs.map((o) => JSON.parse(o) as { created: boolean; cert: string });
  assert.equal(results.filter((r) => r.created).length, 1);
  assert.equal(new Set(results.map((r) => r.cert)).size, 1);
  const cert = await readFile(join(dir, 'localhost-cert.pem'), 'utf8');
  const key = await readFile(join(dir, 'localhost-key.pem'), 'utf8');
  assert.equal(cert, results[0]?.cert);
  assert.ok(new X509Certificate(cert).checkPrivateKey(createPrivateKey(key)));
});

test('T-2: a lock left by a dead process is taken over', async (t) => {
  const dir = await tempDir(t);
  const dead = spawnSync(process.execPath, ['-e', ''], { timeout: PEER_TIMEOUT_MS }).pid;
  await writeFile(join(dir, 'localhost.lock'), `${dead} abandoned\n`);
  const result = await ensureDevCertificate(dir);
  assert.equal(result.created, true);
  assert.deepEqual((await readdir(dir)).sort(), ['localhost-cert.pem', 'localhost-key.pem']);
});

test('T-2: an old lock is taken over even if its pid is alive (pid reuse, crash)', async (t) => {
  const dir = await tempDir(t);
  const lock = join(dir, 'localhost.lock');
  await writeFile(lock, `${process.pid} abandoned\n`);
  const old = new Date(Date.now() - 60_000);
  await utimes(lock, old, old);
  const result = await ensureDevCertificate(dir);
  assert.equal(result.created, true);
});

test('T-2: programmer input is checked', async () => {
  await assert.rejects(ensureDevCertificate(''), TypeError);
  await assert.rejects(ensureDevCertificate(tmpdir(), { now: () => Number.NaN }), TypeError);
});

test('removeDevCertificate undoes a start: the pair it made and the directories it made, never a pair it reused or a directory that was there', async (t) => {
  const dir = await tempDir(t);
  const made = await ensureDevCertificate(join(dir, 'a', 'b', 'certs'));
  assert.equal(made.createdDir, join(dir, 'a'));
  await removeDevCertificate(made);
  assert.deepEqual(await readdir(dir), [], 'the pair and the chain a/b/certs are gone');

  const first = await ensureDevCertificate(join(dir, 'certs'));
  const reused = await ensureDevCertificate(join(dir, 'certs'));
  assert.equal(reused.created, false);
  await removeDevCertificate(reused);
  assert.deepEqual((await readdir(join(dir, 'certs'))).sort(), ['localhost-cert.pem', 'localhost-key.pem'], 'a reused pair stays');
  await rm(join(dir, 'certs'), { recursive: true });

  const inExisting = await ensureDevCertificate(dir);
  assert.equal(inExisting.createdDir, undefined);
  await writeFile(join(dir, 'other.txt'), 'x');
  await removeDevCertificate(inExisting);
  assert.deepEqual(await readdir(dir), ['other.txt'], 'a directory that was there stays, with what else it holds');

  const crowded = await ensureDevCertificate(join(dir, 'c', 'certs'));
  await writeFile(join(dir, 'c', 'note.txt'), 'x');
  await removeDevCertificate(crowded);
  assert.deepEqual(await readdir(join(dir, 'c')), ['note.txt'], 'a directory it made that now holds something else stays');
  assert.equal(first.created, true);
});
