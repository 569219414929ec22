import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chmod, mkdtemp, readFile, stat, utimes, writeFile, readdir } from 'node:fs/promises';
import { tmpdir, hostname } from 'node:os';
import { removeTempDir } from '../../helpers/tmp.js';
import { join } from 'node:path';
import { openStore, type Store, type StoreOptions, type UserRecord } from '../../../lib/store/open.js';
import { journalHeader, journalLine, snapshotText } from '../../../lib/store/file/format.js';

const LOCK_HOLDER = fileURLToPath(new URL('../../fixtures/lock-holder.ts', import.meta.url));

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'store-'));
  // Never throws (a later hook closes what may still write here): see helpers/tmp.ts.
  t.after(() => removeTempDir(dir));
  return dir;
}

async function open(t: TestContext, path: string, options: StoreOptions = {}): Promise<Store> {
  const store = await openStore(path, options);
  t.after(() => store.close());
  return store;
}

function user(name: string, extra: Partial<UserRecord> = {}): UserRecord {
  return { name, role: 'user', hash: `$scrypt$ln=17,r=8,p=1$c2FsdA$${name}`, createdAt: 1, passwordChangedAt: 1, ...extra };
}

function put(store: Store, record: UserRecord): Promise<void> {
  return store.update(record.name, () => ({ next: record, result: undefined }));
}

/** Every file of the store, byte for byte, to prove that nothing was rewritten. */
async function snapshotOfFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const name of (await readdir(dir)).sort()) files.set(name, (await readFile(join(dir, name))).toString('base64'));
  return files;
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.ok(child.pid !== undefined && child.pid > 0);
  return child.pid;
}

test('U-1: a missing store is created empty, directory 0700 and files 0600', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'nested', 'deeper', 'users.json');
  const store = await open(t, path);
  assert.equal((await store.count()), 0);
  assert.deepEqual((await store.list()), []);
  assert.equal((await stat(join(dir, 'nested'))).mode & 0o777, 0o700);
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal((await stat(`${path}.journal`)).mode & 0o777, 0o600);
  await put(store, user('alice'));
  assert.equal((await stat(`${path}.journal`)).mode & 0o777, 0o600);
  // The lock is gone once nothing is in flight.
  await assert.rejects(stat(`${path}.lock`), { code: 'ENOENT' });
});

test('U-1: existing store files readable by others are narrowed to 0600', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'users.json');
  await (await openStore(path)).close();
  await chmod(path, 0o644);
  await chmod(`${path}.journal`, 0o666);
  await open(t, path);
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal((await stat(`${path}.journal`)).mode & 0o777, 0o600);
});

test('U-2: create, read, update, delete; list is sorted by name', async (t) => {
  const dir = await tempDir(t);
  const store = await open(t, join(dir, 'users.json'));
  await put(store, user('carol'));
  await put(store, user('alice', { role: 'admin' }));
  await put(store, user('Bob'));
  assert.equal((await store.count()), 3);
  assert.deepEqual(
    (await store.list()).map((u) => u.name),
    ['Bob', 'alice', 'carol'],
  );
  assert.equal((await store.get('alice'))?.role, 'admin');
  assert.equal((await store.get('ALICE')), undefined, 'names are case-sensitive');

  const previous = await store.update('alice', (current) => ({ next: { ...current!, hash: 'new-hash', passwordChangedAt: 2 }, result: current?.hash }));
  assert.equal(previous, user('alice').hash);
  assert.equal((await store.get('alice'))?.hash, 'new-hash');

  const deleted = await store.update('Bob', (current) => ({ next: null, result: current !== undefined }));
  assert.equal(deleted, true);
  assert.equal((await store.get('Bob')), undefined);
  assert.equal((await store.count()), 2);
});

test('U-1: records handed out are frozen, so callers cannot change memory behind the store', async (t) => {
  const store = await open(t, join(await tempDir(t), 'users.json'));
  await put(store, user('alice', { resetTokens: [{ hash: 'x', expiresAt: 5 }] }));
  const alice = (await store.get('alice'))!;
  assert.ok(Object.isFrozen(alice));
  assert.ok(Object.isFrozen(alice.resetTokens));
  assert.throws(() => {
    (alice as { role: string }).role = 'admin';
  }, TypeError);
});

test('U-1: next=undefined, deleting a missing user and a throwing fn write nothing', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'users.json');
  const store = await open(t, path);
  await put(store, user('alice'));
  const before = await readFile(`${path}.journal`);
  assert.equal(await store.update('alice', () => ({ next: undefined, result: 'read-only' })), 'read-only');
  assert.equal(await store.update('nobody', () => ({ next: null, result: 'gone' })), 'gone');
  const boom = new Error('boom');
  await assert.rejects(
    store.update('alice', () => {
      throw boom;
    }),
    (error) => error === boom,
  );
  assert.deepEqual(await readFile(`${path}.journal`), before);
  assert.deepEqual((await store.get('alice')), user('alice'));
});

const badRecords: ReadonlyArray<readonly [label: string, name: string, record: unknown, code: string]> = [
  ['name differs from the key', 'alice', user('bob'), 'ERR_INVALID_OPTION'],
  ['role outside user|admin', 'alice', { ...user('alice'), role: 'root' }, 'ERR_INVALID_OPTION'],
  ['empty hash', 'alice', { ...user('alice'), hash: '' }, 'ERR_INVALID_OPTION'],
  ['createdAt not a number', 'alice', { ...user('alice'), createdAt: '1' }, 'ERR_INVALID_OPTION'],
  ['passwordChangedAt NaN', 'alice', { ...user('alice'), passwordChangedAt: Number.NaN }, 'ERR_INVALID_OPTION'],
  ['unknown field', 'alice', { ...user('alice'), isAdmin: true }, 'ERR_INVALID_OPTION'],
  ['reset token without expiry', 'alice', { ...user('alice'), resetTokens: [{ hash: 'x' }] }, 'ERR_INVALID_OPTION'],
  ['name with a colon (RFC 7617)', 'a:b', user('a:b'), 'ERR_INVALID_NAME'],
  ['name with a slash', 'a/b', user('a/b'), 'ERR_INVALID_NAME'],
  ['name with a control character', 'a\u0007', user('a\u0007'), 'ERR_INVALID_NAME'],
  ['empty name', '', user(''), 'ERR_INVALID_NAME'],
  ['name of 65 characters', 'x'.repeat(65), user('x'.repeat(65)), 'ERR_INVALID_NAME'],
  ['name not NFC', 'e\u0301', user('e\u0301'), 'ERR_INVALID_NAME'],
  ['name with a lone surrogate', 'a\ud800', user('a\ud800'), 'ERR_INVALID_NAME'],
];

for (const [label, name, record, code] of badRecords) {
  test(`U-2: update() refuses a record with ${label} (${code}) and writes nothing`, async (t) => {
    const path = join(await tempDir(t), 'users.json');
    const store = await open(t, path);
    const before = await readFile(`${path}.journal`);
    await assert.rejects(
      store.update(name, () => ({ next: record as UserRecord, result: undefined })),
      { code },
    );
    assert.equal((await store.count()), 0);
    assert.deepEqual(await readFile(`${path}.journal`), before);
  });
}

test('U-2: a 64-character name, and one of 64 astral characters, are accepted', async (t) => {
  const store = await open(t, join(await tempDir(t), 'users.json'));
  await put(store, user('x'.repeat(64)));
  await put(store, user('😀'.repeat(64)));
  assert.equal((await store.count()), 2);
});

test('U-1: a reopened store equals the one in memory', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const store = await open(t, path);
  for (let i = 0; i < 20; i++) await put(store, user(`user-${i}`, { passwordChangedAt: i }));
  for (let i = 0; i < 20; i += 3) await store.update(`user-${i}`, () => ({ next: null, result: undefined }));
  await put(store, user('user-1', { digest: 'opaque', resetTokens: [{ hash: 'h', expiresAt: 9 }], role: 'admin' }));
  const reopened = await open(t, path);
  assert.deepEqual((await reopened.list()), (await store.list()));
  assert.equal((await reopened.count()), (await store.count()));
});

test('U-1: compaction (tiny compactBytes) folds the journal into the snapshot and keeps everything', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const store = await openStore(path, { compactBytes: 1 });
  for (let i = 0; i < 10; i++) await put(store, user(`user-${i}`, { passwordChangedAt: i }));
  await store.update('user-3', () => ({ next: null, result: undefined }));
  const expected = (await store.list());
  await store.close();
  const snapshot = JSON.parse(await readFile(path, 'utf8')) as { generation: number; users: unknown[] };
  assert.ok(snapshot.generation > 0, 'a new generation was written');
  assert.equal(snapshot.users.length, 9);
  assert.equal(await readFile(`${path}.journal`, 'utf8'), journalHeader(snapshot.generation));
  const reopened = await open(t, path);
  assert.deepEqual((await reopened.list()), expected);
});

test('U-1: a failed compaction is reported, loses nothing, and the store keeps working', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const errors: unknown[] = [];
  const failing = await openStore(path, {
    compactBytes: 1,
    hooks: {
      beforeCompact: () => {
        throw new Error('disk full');
      },
      onCompactError: (error) => errors.push(error),
    },
  });
  await put(failing, user('alice'));
  await put(failing, user('bob'));
  await failing.close(); // waits for the queued compactions
  assert.ok(errors.length >= 1);
  assert.equal((JSON.parse(await readFile(path, 'utf8')) as { generation: number }).generation, 0);

  const store = await openStore(path, { compactBytes: 1 });
  assert.equal((await store.count()), 2);
  await put(store, user('carol'));
  const expected = (await store.list());
  await store.close();
  assert.equal((JSON.parse(await readFile(path, 'utf8')) as { generation: number }).generation, 1);
  assert.deepEqual((await (await open(t, path)).list()), expected);
});

test('U-1: a journal older than the snapshot (compaction died between renames) is ignored, then replaced', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'users.json');
  // Generation 1 already holds alice's change; the journal of generation 0 is its leftover.
  await writeFile(path, snapshotText(1, [user('alice', { passwordChangedAt: 2 })]), { mode: 0o600 });
  await writeFile(`${path}.journal`, journalHeader(0) + journalLine({ op: 'put', user: user('alice', { passwordChangedAt: 1 }) }), { mode: 0o600 });
  const store = await open(t, path);
  assert.equal((await store.get('alice'))?.passwordChangedAt, 2);
  await put(store, user('bob'));
  assert.ok((await readFile(`${path}.journal`, 'utf8')).startsWith(journalHeader(1)));
  const reopened = await open(t, path);
  assert.deepEqual((await reopened.list()), (await store.list()));
});

const corruptions: ReadonlyArray<readonly [label: string, snapshot: string | undefined, journal: string | undefined, names: string, line?: number]> = [
  ['snapshot that is not JSON', '{"format":"httpskit-users",', undefined, 'users.json'],
  ['snapshot with a broken user line', snapshotText(0, [user('a'), user('b')]).replace('"name":"b"', '"name":b'), undefined, 'users.json', 3],
  ['empty snapshot', '', undefined, 'users.json'],
  ['snapshot of another format', '{"users":[]}', undefined, 'users.json'],
  ['snapshot with a duplicate user', snapshotText(0, [user('a'), user('a')]), undefined, 'users.json'],
  ['snapshot with a bad role', snapshotText(0, [{ ...user('a'), role: 'root' } as unknown as UserRecord]), undefined, 'users.json'],
  ['snapshot that is not UTF-8', '{"format":"httpskit-users","version":1,"generation":0,"users":["\xff"]}', undefined, 'users.json'],
  [
    'journal with a bad line in the middle',
    snapshotText(0, []),
    journalHeader(0) + journalLine({ op: 'put', user: user('a') }) + '{"op":"put","user":\n' + journalLine({ op: 'put', user: user('b') }),
    'users.json.journal',
    3,
  ],
  ['journal whose last complete line is bad', snapshotText(0, []), `${journalHeader(0)}{"op":"rename"}\n`, 'users.json.journal', 2],
  ['journal without a header', snapshotText(0, []), journalLine({ op: 'put', user: user('a') }), 'users.json.journal', 1],
  ['journal newer than the snapshot', snapshotText(0, []), journalHeader(5), 'users.json.journal'],
  ['journal without its snapshot', undefined, journalHeader(0), 'users.json'],
];

for (const [label, snapshot, journal, names, line] of corruptions) {
  test(`U-1: ${label} → ERR_STORE_CORRUPT naming the file, and no byte changes`, async (t) => {
    const dir = await tempDir(t);
    const path = join(dir, 'users.json');
    if (snapshot !== undefined) await writeFile(path, label.includes('UTF-8') ? Buffer.from(snapshot, 'latin1') : snapshot, { mode: 0o600 });
    if (journal !== undefined) await writeFile(`${path}.journal`, journal, { mode: 0o600 });
    const before = await snapshotOfFiles(dir);
    await assert.rejects(openStore(path), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'ERR_STORE_CORRUPT');
      assert.ok(error.message.includes(join(dir, names)), 'the message names the file');
      if (line !== undefined) assert.match(error.message, new RegExp(`line ${line}\\b`));
      return true;
    });
    // Refused twice, still untouched (and no lock left behind).
    await assert.rejects(openStore(path), { code: 'ERR_STORE_CORRUPT' });
    assert.deepEqual(await snapshotOfFiles(dir), before);
  });
}

test('U-1: a store corrupted while open makes the next update fail and is not overwritten', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'users.json');
  const store = await open(t, path);
  await put(store, user('alice'));
  await writeFile(path, 'not json');
  const before = await snapshotOfFiles(dir);
  await assert.rejects(put(store, user('bob')), { code: 'ERR_STORE_CORRUPT' });
  assert.equal((await store.get('alice'))?.name, 'alice', 'memory keeps the last good state');
  assert.deepEqual(await snapshotOfFiles(dir), before);
});

test('U-1: a torn last journal line is ignored on load and truncated before the next append', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const first = await openStore(path);
  await put(first, user('alice'));
  await first.close();
  const torn = journalLine({ op: 'put', user: user('bob') }).slice(0, 30);
  await writeFile(`${path}.journal`, torn, { flag: 'a' });

  const store = await open(t, path);
  assert.deepEqual(
    (await store.list()).map((u) => u.name),
    ['alice'],
  );
  await put(store, user('carol'));
  const lines = (await readFile(`${path}.journal`, 'utf8')).split('\n');
  assert.equal(lines.pop(), '', 'ends with a newline');
  for (const line of lines) JSON.parse(line);
  assert.deepEqual(
    (await (await open(t, path)).list()).map((u) => u.name),
    ['alice', 'carol'],
  );
});

test('U-1: two Store instances on one path in one process lose no write', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const a = await open(t, path, { compactBytes: 2048 });
  const b = await open(t, path, { compactBytes: 2048 });
  const increment = (store: Store): Promise<void> =>
    store.update('counter', (current) => ({ next: user('counter', { passwordChangedAt: (current?.passwordChangedAt ?? 0) + 1 }), result: undefined }));
  const work: Promise<void>[] = [];
  for (let i = 0; i < 40; i++) {
    work.push(increment(a), increment(b), put(i % 2 === 0 ? a : b, user(`u-${i}`)));
  }
  await Promise.all(work);
  assert.equal((await a.get('counter'))?.passwordChangedAt, 80);
  assert.deepEqual(await a.list(), await b.list());
  assert.equal(await b.count(), 41);
});

test('U-1, S-3: every read sees another instance\'s writes, deletions and compactions', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const writer = await openStore(path, { compactBytes: 1 });
  const reader = await open(t, path);
  assert.equal(await reader.get('alice'), undefined);
  await put(writer, user('alice'));
  assert.equal((await reader.get('alice'))?.name, 'alice');
  await writer.update('alice', () => ({ next: null, result: undefined }));
  await put(writer, user('bob'));
  await writer.close(); // waits for the queued compaction
  assert.ok((JSON.parse(await readFile(path, 'utf8')) as { generation: number }).generation > 0);
  assert.deepEqual(
    (await reader.list()).map((u) => u.name),
    ['bob'],
  );
  assert.equal(await reader.count(), 1);
});

test('U-1: a lock left by a dead process is taken over', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  await writeFile(`${path}.lock`, JSON.stringify({ pid: deadPid(), host: hostname(), nonce: 'x', at: 'then' }));
  const store = await open(t, path, { lockTimeoutMs: 5_000 });
  await put(store, user('alice'));
  await assert.rejects(stat(`${path}.lock`), { code: 'ENOENT' });
});

test('U-1: a lock with our own pid older than this process (pid reuse) is taken over', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  await writeFile(`${path}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'x', at: 'then' }));
  const past = new Date(Date.now() - process.uptime() * 1000 - 60_000);
  await utimes(`${path}.lock`, past, past);
  await open(t, path, { lockTimeoutMs: 5_000 });
});

test('U-1: a live lock makes the store wait, then fail with ERR_STORE_LOCKED; a lock not refreshed for staleLockMs is taken over', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  await (await openStore(path)).close();
  // The parent process (the test runner) is alive, so its lock is respected.
  await writeFile(`${path}.lock`, JSON.stringify({ pid: process.ppid, host: hostname(), nonce: 'x', at: 'now' }));
  await assert.rejects(openStore(path, { lockTimeoutMs: 30 }), { code: 'ERR_STORE_LOCKED' });
  // Seen from a clock a minute ahead, the lock has not been touched for longer than staleLockMs.
  const store = await open(t, path, { lockTimeoutMs: 30, staleLockMs: 30_000, now: () => Date.now() + 60_000 });
  await put(store, user('alice'));
  // An unreadable lock (its creator may not have written it yet) is only judged by age.
  await writeFile(`${path}.lock`, '');
  await assert.rejects(openStore(path, { lockTimeoutMs: 30 }), { code: 'ERR_STORE_LOCKED' });
});

test('H-3 (issue 19): ping() answers at once while another process holds the writers\' lock; it still reads and parses the files', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  const store = await open(t, path, { lockTimeoutMs: 10_000 });
  await put(store, user('alice'));
  const holder = spawn(process.execPath, ['--import', 'tsx', LOCK_HOLDER, `${path}.lock`], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => holder.kill());
  await new Promise<void>((resolve, reject) => {
    holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve());
    holder.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
  // A write now waits for the lock; a ping must not.
  let written = false;
  const write = put(store, user('bob')).then(() => (written = true));
  const started = performance.now();
  await store.ping();
  assert.ok(performance.now() - started < 500, `ping took ${Math.round(performance.now() - started)} ms`);
  // What another process appended is read and parsed: a damaged line makes the store not ready.
  const journal = await readFile(`${path}.journal`, 'utf8');
  await writeFile(`${path}.journal`, `${journal}{"op":"put","user":\n`);
  await assert.rejects(store.ping(), { code: 'ERR_STORE_CORRUPT' });
  await writeFile(`${path}.journal`, journal);
  await store.ping();
  assert.equal(written, false);
  holder.stdin.end();
  await write;
  assert.equal((await store.get('bob'))?.name, 'bob');
});

test('U-1: opening sweeps lock leftovers of killed processes', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'users.json');
  await writeFile(`${path}.lock.${deadPid()}-0123abcd`, '{}');
  await writeFile(`${path}.lock.stale-0a1b2c`, '{}');
  await open(t, path);
  assert.deepEqual((await readdir(dir)).sort(), ['users.json', 'users.json.journal']);
});

const failures: ReadonlyArray<readonly [label: string, hook: 'beforeAppend' | 'beforeSync']> = [
  ['before the line is written', 'beforeAppend'],
  ['after the line is written, before fsync', 'beforeSync'],
];

for (const [label, hook] of failures) {
  test(`U-1: a write failing ${label} rejects with ERR_STORE_WRITE and changes neither memory nor disk`, async (t) => {
    const path = join(await tempDir(t), 'users.json');
    let fail = false;
    const store = await open(t, path, {
      hooks: {
        [hook]: () => {
          if (fail) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        },
      },
    });
    await put(store, user('alice'));
    const before = await readFile(`${path}.journal`);
    fail = true;
    await assert.rejects(
      store.update('alice', (current) => ({ next: { ...current!, hash: 'changed' }, result: undefined })),
      { code: 'ERR_STORE_WRITE' },
    );
    await assert.rejects(put(store, user('bob')), { code: 'ERR_STORE_WRITE' });
    assert.equal((await store.get('alice'))?.hash, user('alice').hash);
    assert.equal((await store.get('bob')), undefined);
    assert.deepEqual(await readFile(`${path}.journal`), before);
    assert.deepEqual((await (await open(t, path)).list()), (await store.list()));

    fail = false;
    await put(store, user('bob'));
    assert.deepEqual(
      (await (await open(t, path)).list()).map((u) => u.name),
      ['alice', 'bob'],
    );
  });
}

test('U-1: a closed store refuses updates', async (t) => {
  const store = await openStore(join(await tempDir(t), 'users.json'));
  await store.close();
  await assert.rejects(put(store, user('alice')), { code: 'ERR_STORE_CLOSED' });
  await assert.rejects(store.get('alice'), { code: 'ERR_STORE_CLOSED' });
});

const badOptions: ReadonlyArray<readonly [label: string, path: unknown, options: unknown]> = [
  ['empty path', '', {}],
  ['non-string path', 42, {}],
  ['unknown option', 'x.json', { compactbytes: 1 }],
  ['compactBytes 0', 'x.json', { compactBytes: 0 }],
  ['lockTimeoutMs negative', 'x.json', { lockTimeoutMs: -1 }],
  ['lockTimeoutMs fractional', 'x.json', { lockTimeoutMs: 1.5 }],
  ['staleLockMs as a string', 'x.json', { staleLockMs: '5' }],
  ['now not a function', 'x.json', { now: 5 }],
  ['unknown hook', 'x.json', { hooks: { afterAppend: () => undefined } }],
  ['hook not a function', 'x.json', { hooks: { beforeAppend: true } }],
];

for (const [label, path, options] of badOptions) {
  test(`openStore refuses ${label} (ERR_INVALID_OPTION)`, async () => {
    await assert.rejects(openStore(path as string, options as StoreOptions), { code: 'ERR_INVALID_OPTION' });
  });
}
