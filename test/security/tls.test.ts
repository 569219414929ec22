// Issue 5, TLS (CONTRACT T-1): TLS 1.0 and 1.1 are refused by the server and TLS 1.2 and 1.3
// work; TLS 1.2 offers ECDHE with AEAD suites only (no CBC: LUCKY13, testssl.sh's
// cipherlist_AVERAGE). Checked with an independent client, `openssl s_client`. Skipped, with a
// message, where no openssl binary is installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startService } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

interface Run {
  readonly code: number;
  readonly output: string;
}

/** Asynchronous on purpose: the server runs in this process and must keep answering. */
function openssl(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile('openssl', args, { timeout: 15_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, output: `${stdout}\n${stderr}` });
    });
    child.stdin?.end();
  });
}

const available = await openssl(['version']);
const skip = available.code === 0 ? false : 'openssl is not installed: the T-1 protocol checks with s_client are skipped (test/contract/transport.test.ts checks them with node:tls)';

// SECLEVEL=0 lets OpenSSL 3 offer the old versions at all, so a refusal is the server's doing:
// alert 70, protocol_version (RFC 8446 §6.2).
const versions: ReadonlyArray<readonly [flag: string, name: string, accepted: boolean]> = [
  ['-tls1', 'TLSv1', false],
  ['-tls1_1', 'TLSv1.1', false],
  ['-tls1_2', 'TLSv1.2', true],
  ['-tls1_3', 'TLSv1.3', true],
];

for (const [flag, name, accepted] of versions) {
  test(`T-1 ${name} is ${accepted ? 'accepted' : 'refused'} (openssl s_client ${flag})`, { skip }, async (t) => {
    const s = await startService(t);
    const ca = join(s.dir, 'ca.pem');
    await writeFile(ca, s.ca);
    const port = new URL(s.url).port;
    const run = await openssl(['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-CAfile', ca, '-verify_return_error', '-brief', flag, '-cipher', 'DEFAULT:@SECLEVEL=0']);
    if (!accepted && /no protocols available|unknown option|wrong ssl version|unsupported protocol/i.test(run.output) && !/alert protocol version/.test(run.output)) {
      t.skip(`this openssl cannot offer ${name} at all, so it cannot show the server refusing it: ${run.output.trim().split('\n')[0] ?? ''}`);
      return;
    }
    if (accepted) {
      assert.equal(run.code, 0, run.output);
      assert.match(run.output, new RegExp(`Protocol version: ${name.replace('.', '\\.')}\\b`), run.output);
      assert.match(run.output, /Verification: OK/, run.output);
    } else {
      assert.notEqual(run.code, 0, run.output);
      assert.match(run.output, /alert protocol version/, run.output);
      assert.doesNotMatch(run.output, /CONNECTION ESTABLISHED/);
    }
  });
}

/** A throwaway RSA localhost pair made by openssl (the test certificate is ECDSA P-256). */
async function rsaPair(dir: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, 'rsa-cert.pem');
  const key = join(dir, 'rsa-key.pem');
  const made = await openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost']);
  assert.equal(made.code, 0, made.output);
  return { cert: await readFile(cert, 'utf8'), key: await readFile(key, 'utf8') };
}

// Over TLS 1.2, each suite offered alone: only ECDHE with AES-GCM or ChaCha20-Poly1305 is accepted.
const suites: ReadonlyArray<readonly [certificate: 'ECDSA' | 'RSA', suite: string, accepted: boolean, why: string]> = [
  ['ECDSA', 'ECDHE-ECDSA-AES128-GCM-SHA256', true, 'AEAD'],
  ['ECDSA', 'ECDHE-ECDSA-AES256-GCM-SHA384', true, 'AEAD'],
  ['ECDSA', 'ECDHE-ECDSA-CHACHA20-POLY1305', true, 'AEAD'],
  ['ECDSA', 'ECDHE-ECDSA-AES128-SHA', false, 'CBC'],
  ['ECDSA', 'ECDHE-ECDSA-AES128-SHA256', false, 'CBC'],
  ['ECDSA', 'ECDHE-ECDSA-AES256-SHA384', false, 'CBC'],
  ['RSA', 'ECDHE-RSA-AES128-GCM-SHA256', true, 'AEAD'],
  ['RSA', 'ECDHE-RSA-AES256-GCM-SHA384', true, 'AEAD'],
  ['RSA', 'ECDHE-RSA-CHACHA20-POLY1305', true, 'AEAD'],
  ['RSA', 'ECDHE-RSA-AES128-SHA', false, 'CBC'],
  ['RSA', 'ECDHE-RSA-AES256-SHA384', false, 'CBC'],
  ['RSA', 'AES128-GCM-SHA256', false, 'no forward secrecy (RSA key exchange)'],
  ['RSA', 'AES256-SHA256', false, 'CBC, RSA key exchange'],
  ['RSA', 'DHE-RSA-AES128-GCM-SHA256', false, 'finite-field DHE'],
];

for (const [certificate, suite, accepted, why] of suites) {
  test(`T-1 TLS 1.2 ${suite} (${why}, ${certificate} certificate) is ${accepted ? 'accepted' : 'refused'} (openssl s_client -tls1_2 -cipher)`, { skip }, async (t) => {
    const dir = await tempDir(t);
    const pair = certificate === 'RSA' ? await rsaPair(dir) : undefined;
    const s = await startService(t, pair ?? {});
    const ca = join(dir, 'ca.pem');
    await writeFile(ca, pair?.cert ?? s.ca);
    const port = new URL(s.url).port;
    const run = await openssl(['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-CAfile', ca, '-verify_return_error', '-brief', '-tls1_2', '-cipher', `${suite}:@SECLEVEL=0`]);
    if (/no cipher match|no ciphers available/i.test(run.output)) {
      t.skip(`this openssl cannot offer ${suite}: ${run.output.trim().split('\n')[0] ?? ''}`);
      return;
    }
    if (accepted) {
      assert.equal(run.code, 0, run.output);
      assert.match(run.output, /Protocol version: TLSv1\.2\b/, run.output);
      assert.match(run.output, new RegExp(`Ciphersuite: ${suite}\\b`), run.output);
      assert.match(run.output, /Verification: OK/, run.output);
    } else {
      assert.notEqual(run.code, 0, run.output);
      // Alert 40, handshake_failure: no suite in common (RFC 5246 §7.4.1.3).
      assert.match(run.output, /alert handshake failure/, run.output);
      assert.doesNotMatch(run.output, /CONNECTION ESTABLISHED/);
    }
  });
}

test('T-1 TLS 1.2 with every CBC suite OpenSSL knows (and nothing else) is refused', { skip }, async (t) => {
  const s = await startService(t);
  const ca = join(s.dir, 'ca.pem');
  await writeFile(ca, s.ca);
  const run = await openssl(['s_client', '-connect', `127.0.0.1:${new URL(s.url).port}`, '-servername', 'localhost', '-CAfile', ca, '-brief', '-tls1_2', '-cipher', 'ALL:!AESGCM:!AESCCM:!CHACHA20:!ARIAGCM:@SECLEVEL=0']);
  assert.notEqual(run.code, 0, run.output);
  assert.match(run.output, /alert handshake failure/, run.output);
});

for (const suite of ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']) {
  test(`T-1 TLS 1.3 ${suite} is accepted (openssl s_client -tls1_3 -ciphersuites)`, { skip }, async (t) => {
    const s = await startService(t);
    const ca = join(s.dir, 'ca.pem');
    await writeFile(ca, s.ca);
    const run = await openssl(['s_client', '-connect', `127.0.0.1:${new URL(s.url).port}`, '-servername', 'localhost', '-CAfile', ca, '-verify_return_error', '-brief', '-tls1_3', '-ciphersuites', suite]);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /Protocol version: TLSv1\.3\b/, run.output);
    assert.match(run.output, new RegExp(`Ciphersuite: ${suite}\\b`), run.output);
  });
}
