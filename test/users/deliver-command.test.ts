// P-12: --on-reset-token COMMAND, with a real command: a shell script that writes its standard
// input and its arguments to files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createCommandDelivery, parseCommand } from '../../lib/users/deliver-command.js';
import { tempDir } from '../helpers/tmp.js';

const EVENT = { name: 'alice', token: 'tok-ABC_123', expiresAt: new Date('2026-11-23T10:00:00.000Z') };

async function script(dir: string, body: string): Promise<string> {
  const path = join(dir, 'deliver.sh');
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

test('P-12: the command gets the event as one JSON line on stdin', async (t) => {
  const dir = await tempDir(t);
  const out = join(dir, 'got');
  const deliver = createCommandDelivery(`${await script(dir, 'cat > "$1"')} ${out}`);
  await deliver(EVENT);
  const got = await readFile(out, 'utf8');
  assert.equal(got, '{"name":"alice","token":"tok-ABC_123","expiresAt":"2026-11-23T10:00:00.000Z"}\n');
  assert.deepEqual(JSON.parse(got), { name: 'alice', token: 'tok-ABC_123', expiresAt: '2026-11-23T10:00:00.000Z' });
});

test('P-12: no shell: metacharacters in the command and in the event are plain text', async (t) => {
  const dir = await tempDir(t);
  const out = join(dir, 'got');
  const pwned = join(dir, 'pwned');
  const deliver = createCommandDelivery(`${await script(dir, 'printf "%s\\n" "$@" > "$1.args"; cat > "$1"')} ${out} $(touch${'\t'}${pwned}) ;touch ${pwned}`);
  await deliver({ ...EVENT, name: '$(touch x)`id`' });
  assert.equal(existsSync(pwned), false);
  assert.equal(await readFile(`${out}.args`, 'utf8'), `${out}\n$(touch\n${pwned})\n;touch\n${pwned}\n`);
  assert.equal(JSON.parse(await readFile(out, 'utf8')).name, '$(touch x)`id`');
});

test('P-12: a failing command rejects with its exit code, never with the token', async (t) => {
  const dir = await tempDir(t);
  const deliver = createCommandDelivery(await script(dir, 'cat >/dev/null; exit 3'));
  await assert.rejects(deliver(EVENT), (error: Error) => {
    assert.match(error.message, /exit code 3/);
    assert.doesNotMatch(error.message, /tok-ABC_123/);
    return true;
  });
});

test('P-12: a command that does not read its input and succeeds is a success', async (t) => {
  const dir = await tempDir(t);
  await createCommandDelivery(await script(dir, 'exit 0'))(EVENT);
});

test('P-12: a program that does not exist rejects (ENOENT)', async (t) => {
  const dir = await tempDir(t);
  await assert.rejects(createCommandDelivery(join(dir, 'missing'))(EVENT), /could not run: ENOENT/);
});

test('P-12: a command that hangs is killed after the time limit', async (t) => {
  const dir = await tempDir(t);
  const started = Date.now();
  await assert.rejects(createCommandDelivery(await script(dir, 'exec sleep 30'), { timeoutMs: 300 })(EVENT), /did not finish within 300 ms/);
  assert.ok(Date.now() - started < 10_000, 'killed long before the script would end');
});

test('P-12: an empty command is refused when configured', () => {
  assert.throws(() => parseCommand('  '), TypeError);
  assert.deepEqual(parseCommand(' /bin/x  a\tb '), { program: '/bin/x', args: ['a', 'b'] });
});
