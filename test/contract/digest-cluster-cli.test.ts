// S-4 (issue 20): every CLI command works on a Digest PostgreSQL cluster from a working directory
// that has nothing to do with it. Commands that never touch a Digest secret (user list, del, role,
// reset-token, store migrate) need no key and write nothing there; those that do (user add,
// passwd) take --digest-key or HTTPSKIT_DIGEST_KEY like serve, and refuse, creating nothing, without one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createService } from '../../lib/index.js';
import { openStore } from '../../lib/store/open.js';
import { run } from '../helpers/cli.js';
import { testPostgres } from '../helpers/postgres.js';
import { FAST_SCRYPT, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres();
const PASSWORD = 'a password long enough\n';

test('S-4: every CLI command works on a Digest cluster from an unrelated folder; only add and passwd need the key', { skip: db.skip }, async (t) => {
  const url = await db.database();
  const keys = await tempDir(t);
  const digestKeyFile = join(keys, 'digest.key');
  const { cert, key } = testCertificate();
  // The cluster's first server records Digest on and its key's fingerprint.
  const first = createService({ store: url, port: 0, cert, key, digest: true, digestKeyFile, scrypt: FAST_SCRYPT, log: false });
  await first.listen();
  await first.users.add('root', 'the first admin password', { role: 'admin' });
  await first.close(0);

  const elsewhere = await tempDir(t);
  const cli = (args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}) =>
    run([...args, '--store', url], { cwd: elsewhere, input: options.input ?? '', ...(options.env === undefined ? {} : { env: options.env }) });

  // Without the key: the commands that seal a secret refuse, naming what to give, and create nothing.
  const noKey = await cli(['user', 'add', 'ann', '--scrypt-ln', '10'], { input: PASSWORD });
  assert.equal(noKey.code, 1, noKey.stderr);
  assert.match(noKey.stderr, /--digest-key/);
  assert.deepEqual(await readdir(elsewhere), []);

  // With the flag, and with the environment variable.
  const added = await cli(['user', 'add', 'ann', '--scrypt-ln', '10', '--digest-key', digestKeyFile], { input: PASSWORD });
  assert.equal(added.code, 0, added.stderr);
  const viaEnv = await cli(['user', 'add', 'bob', '--scrypt-ln', '10'], { input: PASSWORD, env: { HTTPSKIT_DIGEST_KEY: digestKeyFile } });
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  const passwd = await cli(['user', 'passwd', 'bob', '--scrypt-ln', '10', '--digest-key', digestKeyFile], { input: 'another long enough password\n' });
  assert.equal(passwd.code, 0, passwd.stderr);
  const passwdNoKey = await cli(['user', 'passwd', 'bob', '--scrypt-ln', '10'], { input: 'yet another long password\n' });
  assert.equal(passwdNoKey.code, 1, passwdNoKey.stderr);

  // The commands that touch no Digest secret need no key at all.
  const listed = await cli(['user', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  for (const name of ['root', 'ann', 'bob']) assert.match(listed.stdout, new RegExp(`\\b${name}\\b`));
  // The PostgreSQL flags, as every command that opens the store takes them.
  const role = await cli(['user', 'role', 'ann', 'admin', '--pg-pool-size', '1', '--pg-connect-timeout', '5000', '--pg-query-timeout', '5000']);
  assert.equal(role.code, 0, role.stderr);
  const token = await cli(['reset-token', 'bob']);
  assert.equal(token.code, 0, token.stderr);
  assert.match(token.stdout, /[A-Za-z0-9_-]{43}/);
  const removed = await cli(['user', 'del', 'ann']);
  assert.equal(removed.code, 0, removed.stderr);
  const migrated = await cli(['store', 'migrate']);
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.deepEqual(await readdir(elsewhere), [], 'nothing was written in the working directory');

  const store = await openStore(url);
  t.after(() => store.close());
  assert.equal(await store.get('ann'), undefined);
  const bob = await store.get('bob');
  assert.equal(typeof bob?.digest, 'string', 'add and passwd sealed the Digest secret');
  assert.equal(bob?.resetTokens?.length, 1);
});
