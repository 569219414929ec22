// The README's curl examples, run verbatim (only the port differs) against a quick-start server,
// over HTTP/1.1 and HTTP/2 (H-1): a .curlrc in CURL_HOME picks curl's protocol, the lines stay as written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from 'node:child_process';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../lib/store/open.js';
import { verifyPassword } from '../../lib/users/password-hash.js';
import { CURL_PROTOCOL_FLAG, curlSkip, serve } from '../helpers/cli.js';
import { PROTOCOLS, type Protocol } from '../helpers/https.js';
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

async function quickStart(t: import('node:test').TestContext, protocol: Protocol) {
  const skip = await curlSkip(protocol);
  if (skip !== undefined) return skip;
  const dir = await tempDir(t);
  // A .curlrc holds long options without their dashes.
  await writeFile(join(dir, '.curlrc'), `${CURL_PROTOCOL_FLAG[protocol].slice(2)}\n`);
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  // Like `npm start` from the repository root, on a free port and with a cheaper hash.
  const { child, url } = await serve(['--port', '0'], { cwd: dir, env: { HTTPSKIT_SCRYPT_LN: '12' } });
  t.after(() => child.kill('SIGKILL'));
  const port = new URL(url).port;
  const sh = async (line: string) =>
    (await execP(line.replaceAll('localhost:8443', `localhost:${port}`), { cwd: dir, shell: '/bin/bash', env: { ...process.env, HTTPSKIT_SCRYPT_LN: '12', CURL_HOME: dir } })).stdout;
  return { dir, sh };
}

for (const protocol of PROTOCOLS) test(`README representation examples print what the README says (${protocol})`, async (t) => {
  const qs = await quickStart(t, protocol);
  if (typeof qs === 'string') return t.skip(qs);
  const lines = block('representations');
  const xml = '<?xml version="1.0" encoding="UTF-8"?><something><param1>hello</param1></something>';
  assert.equal(await qs.sh(lines[0] as string), '{"param1":"hello"}');
  for (const line of lines.slice(1, 4)) assert.equal(await qs.sh(line), xml, line);
  const notAcceptable = await qs.sh(lines[4] as string);
  assert.match(notAcceptable, protocol === 'h2' ? /^HTTP\/2 406 / : /^HTTP\/1\.1 406 /, 'the .curlrc chose the protocol');
  assert.match(notAcceptable, /"available":\["application\/json","application\/xml","text\/xml"\]/);
});

for (const protocol of PROTOCOLS) test(`README password examples work in order: add, PUT with Basic, POST form, reset token (${protocol})`, async (t) => {
  const qs = await quickStart(t, protocol);
  if (typeof qs === 'string') return t.skip(qs);
  // TOKEN=$(…) must carry over to the next line, so the block runs as one script.
  const out = await qs.sh(block('passwords').join('\n'));
  assert.equal(out, '', 'every curl answered 204 No Content');
  const store = await openStore(join(qs.dir, 'data', 'users.json'));
  const alice = (await store.get('alice'));
  await store.close();
  assert.ok(alice);
  assert.equal(await verifyPassword('amber-glacier-puzzle-63', alice.hash), true, 'the last change in the README took effect');
});

for (const protocol of PROTOCOLS) test(`README "Users over HTTPS" examples print what the README says (R-1..R-6, E-4) (${protocol})`, async (t) => {
  const qs = await quickStart(t, protocol);
  if (typeof qs === 'string') return t.skip(qs);
  // ETAG=$(…) must carry over to the next lines, so the block runs as one script; each line's
  // output is separated by a marker so it can be checked on its own.
  const lines = block('users');
  const out = await qs.sh(lines.map((line) => `${line}; echo '<<<end>>>'`).join('\n'));
  const [added, root, created, xml, page, etag, patched, stale, deleted] = out.split('<<<end>>>\n');
  const time = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
  assert.equal(added, '');
  assert.match(String(root), new RegExp(`^\\{"name":"root","role":"admin","createdAt":"${time}","passwordChangedAt":"${time}"\\}\\n?$`));
  assert.match(String(created), /^\{"name":"carol","role":"user",/);
  assert.match(String(xml), new RegExp(`^<\\?xml version="1.0" encoding="UTF-8"\\?><user><name>carol</name><role>user</role><createdAt>${time}</createdAt><passwordChangedAt>${time}</passwordChangedAt></user>\\n?$`));
  assert.match(String(page), /^\{"users":\[\{"name":"carol","role":"user",[^\]]*\}\],"next":"\/user\/\?after=carol&limit=1"\}\n?$/);
  assert.equal(etag, '');
  assert.match(String(patched), /^\{"name":"carol","role":"admin",/);
  assert.match(String(stale), /"type":"\/problems\/precondition-failed".*412\n$/);
  assert.equal(deleted, '204\n');
});
