// S-4 end to end: the first server on a database records the settings; a server started with
// different ones refuses to start (exit 1, the difference named) and changes nothing; the CLI
// follows the recorded ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createService } from '../../lib/index.js';
import { openPostgresStore } from '../../lib/store/postgres/postgres-store.js';
import { run } from '../helpers/cli.js';
import { testPostgres } from '../helpers/postgres.js';
import { FAST_SCRYPT, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres();

test('S-4: a server whose settings differ from the recorded ones refuses to start and names the difference; the CLI follows them', { skip: db.skip }, async (t) => {
  const url = await db.database();
  const dir = await tempDir(t);
  const { cert, key } = testCertificate();
  const digestKeyFile = join(dir, 'digest.key');
  const first = createService({ store: url, port: 0, cert, key, digest: true, digestKeyFile, minPasswordLength: 16, scrypt: FAST_SCRYPT, log: false });
  await first.listen();
  await first.close(0);

  for (const [args, named] of [
    [['--min-length', '15', '--digest'], /minimum password length/],
    [['--min-length', '16'], /Digest on or off/],
  ] as const) {
    const refused = await run(['serve', '--port', '0', '--store', url, '--digest-key', digestKeyFile, '--cert-dir', join(dir, 'certs'), ...args], { cwd: dir });
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, named);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
  }
  // A server joining without --digest and without the key (none in its ./data/): told to give
  // the key, and that a server joining them needs --digest as well.
  const keyless = await run(['serve', '--port', '0', '--store', url, '--min-length', '16', '--cert-dir', join(dir, 'certs')], { cwd: dir });
  assert.equal(keyless.code, 1, keyless.stderr);
  assert.match(keyless.stderr, /no Digest key at .*--digest-key FILE .*a server joining them also needs --digest/);
  assert.equal(keyless.stderr.trim().split('\n').length, 1, keyless.stderr);
  // A CLI command without --digest on this Digest cluster still writes the Digest secret, and
  // applies the recorded minimum length (16), not the default (15).
  const short = await run(['user', 'add', 'walt', '--store', url, '--digest-key', digestKeyFile, '--scrypt-ln', '10'], { cwd: dir, input: 'fifteen-chars-x\n' });
  assert.equal(short.code, 1);
  assert.match(short.stderr, /too-short/);
  const added = await run(['user', 'add', 'walt', '--store', url, '--digest-key', digestKeyFile, '--scrypt-ln', '10'], { cwd: dir, input: 'sixteen-chars-xy\n' });
  assert.equal(added.code, 0, added.stderr);
  const store = await openPostgresStore(url, { cleanupIntervalMs: 0 });
  t.after(() => store.close());
  assert.equal(typeof (await store.get('walt'))?.digest, 'string', 'the Digest secret was written');
  assert.deepEqual((await store.settings.read())?.minPasswordLength, 16);
  // A CLI with another Digest key would seal secrets no server can open: refused.
  const otherKey = await run(['user', 'add', 'xena', '--store', url, '--digest-key', join(dir, 'other.key'), '--scrypt-ln', '10'], { cwd: dir, input: 'sixteen-chars-xy\n' });
  assert.equal(otherKey.code, 1);
  assert.match(otherKey.stderr, /Digest key/);
  assert.equal(await store.get('xena'), undefined);
});
