// S-5: `store copy FROM TO` between the file store and PostgreSQL (both ways, verbatim, never
// into a store that holds users) and `store migrate`, through the built command (C-1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openPostgresStore } from '../../lib/store/postgres/postgres-store.js';
import { openStore, type UserRecord } from '../../lib/store/open.js';
import { run } from '../helpers/cli.js';
import { admin, testPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';

const db = await testPostgres();
const skip = db.skip;

const RECORDS: UserRecord[] = [
  { name: 'zed', role: 'admin', hash: '$scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA', createdAt: 1_700_000_000_000, passwordChangedAt: 1_700_000_100_000 },
  { name: 'ämy', role: 'user', hash: '$scrypt$ln=17,r=8,p=1$c2FsdDI$aGFzaDI', digest: 'sealed-ha1-bytes', createdAt: 1, passwordChangedAt: 2 },
  { name: '\u{1F600}', role: 'user', hash: '$scrypt$ln=12,r=8,p=1$c2FsdDM$aGFzaDM', resetTokens: [{ hash: 'tokenhash', expiresAt: 1_800_000_000_000 }], createdAt: 3, passwordChangedAt: 4 },
];

async function listOf(spec: string): Promise<UserRecord[]> {
  const store = spec.startsWith('postgres') ? await openPostgresStore(spec, { cleanupIntervalMs: 0 }) : await openStore(spec);
  try {
    return await store.list();
  } finally {
    await store.close();
  }
}

test('S-5: store copy moves every user from a file to PostgreSQL and back, verbatim; a target with users is refused', { skip }, async (t) => {
  const dir = await tempDir(t);
  const url = await db.database();
  const source = join(dir, 'users.json');
  const seeded = await openStore(source);
  for (const record of RECORDS) await seeded.update(record.name, () => ({ next: record, result: undefined }));
  await seeded.close();
  const expected = [...RECORDS].sort((a, b) => (a.name < b.name ? -1 : 1));

  const toPg = await run(['store', 'copy', source, url]);
  assert.equal(toPg.code, 0, toPg.stderr);
  assert.match(toPg.stderr, /copied 3 users/);
  assert.deepEqual(await listOf(url), expected);

  const back = join(dir, 'back.json');
  const toFile = await run(['store', 'copy', url, back]);
  assert.equal(toFile.code, 0, toFile.stderr);
  assert.deepEqual(await listOf(back), expected);

  const again = await run(['store', 'copy', source, url]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already holds 3 users/);
  assert.equal(again.stderr.trim().split('\n').length, 1);
  const missing = await run(['store', 'copy', join(dir, 'nothing.json'), join(dir, 'other.json')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no user store/);
});

test('S-5: store migrate brings an empty database to the current schema once; servers with --no-migrate need it', { skip }, async (t) => {
  const dir = await tempDir(t);
  const url = await db.database();
  const refused = await run(['serve', '--port', '0', '--no-migrate', '--store', url, '--cert-dir', join(dir, 'certs')], { cwd: dir });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /store migrate/);
  const first = await run(['store', 'migrate', '--store', url]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, /from schema version 0 to \d+/);
  const second = await run(['store', 'migrate'], { env: { HTTPSKIT_STORE: url } });
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /nothing to do/);
  const versions = await admin(url, 'SELECT count(*)::int AS n FROM httpskit.schema_version');
  assert.ok(versions.rows[0].n >= 1);
  const onFile = await run(['store', 'migrate', '--store', join(dir, 'users.json')]);
  assert.equal(onFile.code, 1);
  assert.match(onFile.stderr, /postgres:\/\//);
});

test('S-5: store copy carries names that earlier rules allowed and today\'s refuse for new users, to a file and to PostgreSQL', async (t) => {
  const dir = await tempDir(t);
  const source = join(dir, 'old.json');
  // Written as an older version would have: "a:b" and " padded" break today's U-2 (forbidden character, surrounding space).
  const legacy: UserRecord[] = [
    { name: ' padded', role: 'user', hash: '$scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA', createdAt: 1, passwordChangedAt: 2 },
    { name: 'a:b', role: 'admin', hash: '$scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA', createdAt: 3, passwordChangedAt: 4 },
    { name: 'fine', role: 'user', hash: '$scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA', createdAt: 5, passwordChangedAt: 6 },
  ];
  await writeFile(source, `{"format":"httpskit-users","version":1,"generation":0,"users":[\n${legacy.map((u) => JSON.stringify(u)).join(',\n')}\n]}\n`, { mode: 0o600 });
  await writeFile(`${source}.journal`, '{"format":"httpskit-users-journal","version":1,"generation":0}\n', { mode: 0o600 });

  const toFile = join(dir, 'new.json');
  const copied = await run(['store', 'copy', source, toFile]);
  assert.equal(copied.code, 0, copied.stderr);
  assert.match(copied.stderr, /copied 3 users/);
  assert.deepEqual(await listOf(toFile), legacy);
  if (skip) return;
  const url = await db.database();
  const toPg = await run(['store', 'copy', source, url]);
  assert.equal(toPg.code, 0, toPg.stderr);
  assert.deepEqual(await listOf(url), legacy);
});

test('S-5: store copy refuses a FROM or TO that is no store (another URL scheme, a near miss of :memory:), naming which, password unshown, creating nothing', async (t) => {
  const dir = await tempDir(t);
  const from = await run(['store', 'copy', 'mysql://app:s3cret@db/users', join(dir, 'users.json')], { cwd: dir });
  assert.notEqual(from.code, 0);
  assert.match(from.stderr, /FROM: a "mysql:" URL is no store this service knows/);
  assert.doesNotMatch(from.stderr, /s3cret/);
  const to = await run(['store', 'copy', join(dir, 'users.json'), ':memory'], { cwd: dir });
  assert.notEqual(to.code, 0);
  assert.match(to.stderr, /TO: ":memory" is no store/);
  const { readdir } = await import('node:fs/promises');
  assert.deepEqual(await readdir(dir), []);
});
