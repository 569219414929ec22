// U-1: a torn last journal line (an append that was never acknowledged, as after a crash or a
// full disk mid-write) is dropped, but not without a word: the service logs one warning naming
// the journal and the number of bytes dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createService } from '../../../lib/index.js';
import { journalLine } from '../../../lib/store/file/format.js';
import { serve } from '../../helpers/cli.js';
import { FAST_SCRYPT, startService } from '../../helpers/service.js';
import { tempDir } from '../../helpers/tmp.js';

interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly file?: string;
  readonly bytes?: number;
}

/** A store holding alice whose journal ends with the first `bytes` bytes of a line adding bob. */
async function tornStore(dir: string, bytes: number): Promise<string> {
  const store = join(dir, 'users.json');
  const setup = createService({ store, scrypt: FAST_SCRYPT, log: false });
  await setup.users.add('alice', 'tangerine-initial-passphrase-1');
  await setup.close();
  const line = journalLine({ op: 'put', user: { name: 'bob', role: 'user', hash: '$scrypt$ln=10,r=8,p=1$AAAA$BBBB', createdAt: 0, passwordChangedAt: 0 } });
  await writeFile(`${store}.journal`, line.slice(0, bytes), { flag: 'a' });
  return store;
}

function tornWarnings(lines: readonly string[]): LogLine[] {
  return lines
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((entry) => entry.level === 'warn' && entry.msg.includes('torn'));
}

test('U-1 a torn last journal line is logged once at start (file and bytes), ignored, and cut off by the next change', async (t) => {
  const dir = await tempDir(t);
  const store = await tornStore(dir, 37);
  const journal = `${store}.journal`;
  const before = await readFile(journal);
  const { service, logs } = await startService(t, { store });

  // Reads and refreshes after start do not repeat it.
  assert.deepEqual((await service.users.list()).map((u) => u.name), ['alice']);
  await service.users.verify('alice', 'wrong-passphrase-for-this-test');
  const warnings = tornWarnings(logs);
  assert.equal(warnings.length, 1, logs.join('\n'));
  assert.equal(warnings[0]?.file, journal);
  assert.equal(warnings[0]?.bytes, 37);
  assert.ok(warnings[0]?.msg.includes(journal) && warnings[0].msg.includes('37 bytes'), warnings[0]?.msg);

  await service.users.add('carol', 'saffron-initial-passphrase-1');
  const after = await readFile(journal, 'utf8');
  assert.ok(after.startsWith(before.subarray(0, before.length - 37).toString('utf8')));
  assert.ok(after.endsWith('\n') && !after.includes('"bob"'), 'the torn bytes are gone, the new line starts clean');
  assert.equal(tornWarnings(logs).length, 1);
});

test('U-1 serve: the torn-line warning reaches the log on stdout', async (t) => {
  const dir = await tempDir(t);
  const store = await tornStore(dir, 12);
  const certDir = join(dir, 'certs');
  await mkdir(certDir);
  const { child, output } = await serve(['--port', '0', '--cert-dir', certDir, '--store', store, '--scrypt-ln', '10']);
  t.after(() => child.kill('SIGKILL'));
  // The store is opened before the "listening" line, so the warning is already out.
  const warnings = tornWarnings(output().stdout.split('\n'));
  assert.equal(warnings.length, 1, output().stdout);
  assert.equal(warnings[0]?.file, `${store}.journal`);
  assert.equal(warnings[0]?.bytes, 12);
});
