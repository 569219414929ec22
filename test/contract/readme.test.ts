// The README's curl examples, run verbatim (only the port differs) against a quick-start server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from 'node:child_process';
import { readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../lib/users/store.js';
import { verifyPassword } from '../../lib/users/password-hash.js';
import { serve } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const execP = promisify(exec);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readme = await readFile(join(ROOT, 'README.md'), 'utf8');

function block(name: string): string[] {
  const at = readme.indexOf(`<!-- readme-test:${name} -->`);
  assert.ok(at >= 0, `README block ${name}`);
  const start = readme.indexOf('```sh\n', at) + 6;
  return readme.slice(start, readme.indexOf('```', start)).trim().split('\n');
}

async function quickStart(t: import('node:test').TestContext) {
  if (!(await execP('curl --version').then(() => true, () => false))) return undefined;
  const dir = await tempDir(t);
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  // Like `npm start` from the repository root, on a free port and with a cheaper hash.
  const { child, url } = await serve(['--port', '0'], { cwd: dir, env: { HTTPSKIT_SCRYPT_LN: '12' } });
  t.after(() => child.kill('SIGKILL'));
  const port = new URL(url).port;
  const sh = async (line: string) =>
    (await execP(line.replaceAll('localhost:8443', `localhost:${port}`), { cwd: dir, shell: '/bin/bash', env: { ...process.env, HTTPSKIT_SCRYPT_LN: '12' } })).stdout;
  return { dir, sh };
}

test('README representation examples print what the README says', async (t) => {
  const qs = await quickStart(t);
  if (qs === undefined) return t.skip('curl is not installed');
  const lines = block('representations');
  const xml = '<?xml version="1.0" encoding="UTF-8"?><something><param1>hello</param1></something>';
  assert.equal(await qs.sh(lines[0] as string), '{"param1":"hello"}');
  for (const line of lines.slice(1, 4)) assert.equal(await qs.sh(line), xml, line);
  const notAcceptable = await qs.sh(lines[4] as string);
  // curl speaks HTTP/2 where it was built with nghttp2 (H-1), HTTP/1.1 otherwise.
  assert.match(notAcceptable, /^HTTP\/(?:1\.1|2) 406 /);
  assert.match(notAcceptable, /"available":\["application\/json","application\/xml","text\/xml"\]/);
});

test('README password examples work in order: add, PUT with Basic, POST form, reset token', async (t) => {
  const qs = await quickStart(t);
  if (qs === undefined) return t.skip('curl is not installed');
  // TOKEN=$(…) must carry over to the next line, so the block runs as one script.
  const out = await qs.sh(block('passwords').join('\n'));
  assert.equal(out, '', 'every curl answered 204 No Content');
  const store = await openStore(join(qs.dir, 'data', 'users.json'));
  const alice = (await store.get('alice'));
  await store.close();
  assert.ok(alice);
  assert.equal(await verifyPassword('amber-glacier-puzzle-63', alice.hash), true, 'the last change in the README took effect');
});
