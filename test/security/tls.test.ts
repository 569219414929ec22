// Issue 5, TLS (CONTRACT T-1): TLS 1.0 and 1.1 are refused by the server and TLS 1.2 and 1.3
// work, checked with an independent client, `openssl s_client`. Skipped, with a message, where
// no openssl binary is installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startService } from '../helpers/service.js';

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
