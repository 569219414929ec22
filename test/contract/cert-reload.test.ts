// End-to-end: CONTRACT H-2. A new certificate takes effect without a restart: when the files
// change (fs.watch and a poll), on SIGHUP (the command), and through service.reloadCertificate()
// (the library). New connections get the new pair, open ones are not dropped; a pair that does not
// load or does not match is refused with a log line and the old one stays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import type { ClientHttp2Session } from 'node:http2';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { createService, ServiceError } from '../../lib/index.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';
import { serve } from '../helpers/cli.js';
import { openH2Session } from '../helpers/https.js';
import { FAST_SCRYPT } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

type Pair = { cert: string; key: string };
const A = createSelfSignedCertificate();
const B = createSelfSignedCertificate();
const C = createSelfSignedCertificate();
// The three are all "CN=localhost" and self-signed, and OpenSSL looks trust anchors up by subject,
// so a client cannot trust all three at once. It takes what it is served and compares the whole
// certificate's fingerprint with the three instead, which is stricter than a chain check.
const CLIENT = { rejectUnauthorized: false, servername: 'localhost' } as const;
const fingerprint = (pair: Pair): string => new X509Certificate(pair.cert).fingerprint256;
const NAMES = new Map([A, B, C].map((pair, i) => [fingerprint(pair), 'ABC'[i] as string]));

/** Which of A, B, C a new TLS connection is served. */
function servedTo(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ...CLIENT }, () => {
      const seen = socket.getPeerCertificate().fingerprint256;
      socket.destroy();
      resolve(NAMES.get(seen) ?? `unknown ${seen}`);
    });
    socket.on('error', reject);
  });
}

/** Polls new connections until they get `expected`; returns how long that took, or fails after `withinMs`. */
async function becomes(port: number, expected: string, withinMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const now = await servedTo(port);
    if (now === expected) return performance.now() - started;
    assert.ok(performance.now() - started < withinMs, `new connections still get ${now}, not ${expected}, after ${withinMs} ms`);
    await sleep(100);
  }
}

/** Replaces the pair the way certbot or `mv` do: each file written aside, then renamed over the old one. */
async function install(dir: string, pair: { cert: string; key: string }): Promise<void> {
  await writeFile(join(dir, 'cert.pem.new'), pair.cert);
  await writeFile(join(dir, 'key.pem.new'), pair.key, { mode: 0o600 });
  await rename(join(dir, 'key.pem.new'), join(dir, 'key.pem'));
  await rename(join(dir, 'cert.pem.new'), join(dir, 'cert.pem'));
}

/** An open HTTP/1.1 keep-alive connection that asks for one representation at a time. */
async function keepAlive(port: number): Promise<{ socket: TLSSocket; ask(label: string): Promise<void> }> {
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, ...CLIENT, ALPNProtocols: ['http/1.1'] }, () => resolve(s));
    s.on('error', reject);
  });
  let received = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk));
  return {
    socket,
    async ask(label) {
      received = '';
      socket.write(`GET /api/something.json?param1=${label} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      const started = performance.now();
      while (!received.endsWith(`{"param1":"${label}"}`)) {
        assert.ok(!socket.destroyed, `the open connection was dropped before ${label} was answered`);
        assert.ok(performance.now() - started < 5_000, `no answer to ${label}: ${received}`);
        await sleep(20);
      }
    },
  };
}

const h2Session = (url: string): Promise<ClientHttp2Session> => openH2Session(url, CLIENT);

function h2Get(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path }).end();
    let status = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.resume();
    stream.on('end', () => resolve(status));
    stream.on('error', reject);
  });
}

async function startWithFiles(t: import('node:test').TestContext, initial: Pair, options: { certPollIntervalMs?: number } = {}) {
  const dir = await tempDir(t);
  await install(dir, initial);
  const logs: string[] = [];
  const service = createService({
    port: 0,
    store: join(dir, 'users.json'),
    certFile: join(dir, 'cert.pem'),
    keyFile: join(dir, 'key.pem'),
    scrypt: FAST_SCRYPT,
    keepAliveTimeoutMs: 60_000,
    log: (line) => logs.push(line),
    ...options,
  });
  const { url } = await service.listen();
  t.after(() => service.close(1_000));
  return { dir, service, url, port: Number(new URL(url).port), logs };
}

const messages = (logs: readonly string[]): string[] => logs.map((line) => (JSON.parse(line) as { msg: string }).msg);

test('H-2 replacing the files under a running server: new connections get the new pair within 10 s; open HTTP/1.1 and HTTP/2 connections go on', async (t) => {
  const s = await startWithFiles(t, A);
  assert.equal(await servedTo(s.port), 'A');
  const h1 = await keepAlive(s.port);
  t.after(() => h1.socket.destroy());
  await h1.ask('before');
  const h2 = await h2Session(s.url);
  t.after(() => h2.destroy());
  assert.equal(await h2Get(h2, '/api/something.json'), 200);

  await install(s.dir, B);
  const took = await becomes(s.port, 'B', 10_000);
  t.diagnostic(`new connections got the new certificate ${took.toFixed(0)} ms after the files were replaced`);
  await h1.ask('after');
  assert.equal(NAMES.get(h1.socket.getPeerCertificate().fingerprint256), 'A', 'the open connection keeps its own certificate');
  assert.equal(await h2Get(h2, '/api/something.xml'), 200, 'the open HTTP/2 session goes on');
  const reloaded = s.logs.map((l) => JSON.parse(l) as { msg: string; fingerprint256?: string }).filter((l) => l.msg.startsWith('certificate reloaded'));
  assert.ok(reloaded.length >= 1);
  assert.equal(reloaded.at(-1)?.fingerprint256, fingerprint(B), 'the log line names the new certificate');
});

test('H-2 files rewritten in place (same inode, no rename) are noticed too', async (t) => {
  const s = await startWithFiles(t, A, { certPollIntervalMs: 500 });
  // Rewritten in place: fs.watch reports it on Linux; where it does not, the stat poll (every 500 ms here) does.
  await writeFile(join(s.dir, 'key.pem'), B.key);
  await writeFile(join(s.dir, 'cert.pem'), B.cert);
  const took = await becomes(s.port, 'B', 10_000);
  t.diagnostic(`served the new pair after ${took.toFixed(0)} ms`);
});

test('H-2 a pair that does not match or does not load is refused with a log line; the old one stays; a good pair after it is taken', async (t) => {
  const s = await startWithFiles(t, A);
  const refused = (): number => messages(s.logs).filter((m) => m.startsWith('certificate reload refused')).length;
  // C's certificate with A's key: each file is fine on its own, the pair is not.
  await install(s.dir, { cert: C.cert, key: A.key });
  for (const started = performance.now(); refused() === 0; await sleep(50)) assert.ok(performance.now() - started < 10_000, 'no refusal logged');
  const line = s.logs.map((l) => JSON.parse(l) as { level: string; msg: string; error?: { message: string } }).find((l) => l.msg.startsWith('certificate reload refused'));
  assert.equal(line?.level, 'error');
  assert.match(line?.error?.message ?? '', /key does not belong to the certificate/);
  assert.equal(await servedTo(s.port), 'A', 'the old pair is still served');

  await writeFile(join(s.dir, 'cert.pem'), 'not a certificate');
  for (const started = performance.now(); refused() < 2; await sleep(50)) assert.ok(performance.now() - started < 10_000, 'no second refusal logged');
  assert.equal(await servedTo(s.port), 'A');
  assert.ok(!s.logs.join('\n').includes(A.key.split('\n')[1] as string), 'no key material in the logs');

  await install(s.dir, C);
  await becomes(s.port, 'C', 10_000);
});

test('H-2 service.reloadCertificate(): re-reads the files, takes a pair, refuses a mismatched one; a development certificate is not reloaded', async (t) => {
  const s = await startWithFiles(t, A, { certPollIntervalMs: 60_000 });
  assert.equal(await s.service.reloadCertificate(B), true);
  assert.equal(await servedTo(s.port), 'B');
  await assert.rejects(s.service.reloadCertificate({ cert: C.cert, key: B.key }), (error: unknown) => error instanceof ServiceError && error.code === 'ERR_CERT_UNREADABLE');
  assert.equal(await servedTo(s.port), 'B', 'the refused pair changed nothing');
  assert.equal(await s.service.reloadCertificate(), true, 'no argument: the files again');
  assert.equal(await servedTo(s.port), 'A');
  // The new context keeps T-1's settings: a CBC suite over TLS 1.2 is still refused.
  await assert.rejects(
    new Promise<void>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: s.port, ...CLIENT, maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-SHA' }, () => (socket.destroy(), resolve()));
      socket.on('error', reject);
    }),
  );

  const dir = await tempDir(t);
  const devLogs: string[] = [];
  const dev = createService({ port: 0, store: join(dir, 'users.json'), certDir: join(dir, 'certs'), scrypt: FAST_SCRYPT, log: (line) => devLogs.push(line) });
  const { url } = await dev.listen();
  t.after(() => dev.close(1_000));
  const devServed = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: Number(new URL(url).port), ...CLIENT }, () => (resolve(socket.getPeerCertificate().fingerprint256), socket.destroy()));
    socket.on('error', reject);
  });
  // The development certificate is not watched: replacing its files changes nothing until a restart.
  await writeFile(join(dir, 'certs', 'localhost-cert.pem'), A.cert);
  await writeFile(join(dir, 'certs', 'localhost-key.pem'), A.key);
  await sleep(1_000);
  assert.ok(!messages(devLogs).some((m) => m.startsWith('certificate reload')), 'no reload of the development certificate');
  assert.equal(await dev.reloadCertificate(), false, 'nothing to re-read');
  assert.notEqual(devServed, fingerprint(A));
});

test('H-2 the command: --cert/--key files are watched, SIGHUP re-reads them, a mismatched pair is refused with a log line', async (t) => {
  const dir = await tempDir(t);
  await install(dir, A);
  const { child, url, output } = await serve(['--port', '0', '--store', join(dir, 'users.json'), '--cert', join(dir, 'cert.pem'), '--key', join(dir, 'key.pem')], {
    env: { HTTPSKIT_SCRYPT_LN: '12' },
  });
  t.after(() => child.kill('SIGKILL'));
  const port = Number(new URL(url).port);
  const logged = (prefix: string): number => output().stdout.split('\n').filter((l) => l.includes(`"msg":"${prefix}`)).length;
  assert.equal(await servedTo(port), 'A');
  const h1 = await keepAlive(port);
  t.after(() => h1.socket.destroy());
  await h1.ask('before');

  await install(dir, B);
  await becomes(port, 'B', 10_000);
  await h1.ask('after');

  const before = logged('certificate reloaded');
  child.kill('SIGHUP');
  for (const started = performance.now(); logged('certificate reloaded') === before; await sleep(50)) {
    assert.ok(performance.now() - started < 5_000, 'SIGHUP did not reload');
  }
  assert.equal(child.exitCode, null, 'SIGHUP does not stop the server');

  await install(dir, { cert: C.cert, key: B.key });
  for (const started = performance.now(); logged('certificate reload refused') === 0; await sleep(50)) {
    assert.ok(performance.now() - started < 10_000, 'the mismatched pair was not refused in the log');
  }
  child.kill('SIGHUP');
  await sleep(500);
  assert.equal(await servedTo(port), 'B', 'the old pair stays');
  await h1.ask('still');
});

test('H-2 certificate options are checked once: certFile and keyFile together, not with cert/key, a sane poll interval', () => {
  const bad: unknown[] = [
    { certFile: '/etc/cert.pem' },
    { keyFile: '/etc/key.pem' },
    { certFile: '', keyFile: '/etc/key.pem' },
    { certFile: '/etc/cert.pem', keyFile: '/etc/key.pem', cert: A.cert, key: A.key },
    { certPollIntervalMs: 10 },
    { certPollIntervalMs: 1.5 },
  ];
  for (const options of bad) {
    assert.throws(() => createService(options as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', JSON.stringify(options));
  }
});
