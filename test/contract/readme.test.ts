// The README as a newcomer reads it (H-6, issue 22): a task first, short, one click to any reference.
// Its quick start is run verbatim here (only the port differs) over HTTP/1.1 and HTTP/2 (H-1): a
// .curlrc in CURL_HOME picks curl's protocol, the lines stay as written. test/docs/ runs every
// other example of the README and docs/, and checks every link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from 'node:child_process';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../lib/store/open.js';
import { verifyPassword } from '../../lib/users/password-hash.js';
import { CURL_PROTOCOL_FLAG, curlSkip, serve } from '../helpers/cli.js';
import { PROTOCOLS, type Protocol } from '../helpers/https.js';
import { tempDir } from '../helpers/tmp.js';
import { anchors, blocks, links } from '../docs/markdown.js';

const execP = promisify(exec);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
const lines = readme.split('\n');
const lineOf = (pattern: RegExp): number => lines.findIndex((l) => pattern.test(l)) + 1;
const section = (heading: string): string => {
  const from = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(from >= 0, heading);
  const to = readme.indexOf('\n## ', from + 1);
  return readme.slice(from, to < 0 ? undefined : to);
};

test('H-6 the README is short: about 300 lines', () => {
  assert.ok(lines.length <= 320, `${lines.length} lines`);
});

test('H-6 a JSON request, an XML request and a password change within the first 40 lines', () => {
  const json = lineOf(/^curl .*\/api\/something\?param1=hello'$/);
  const xml = lineOf(/^curl .*-H 'Accept: application\/xml'/);
  const password = lineOf(/^curl .*-X PUT .*\/user\/alice\/password$/);
  for (const [what, at] of [['JSON', json], ['XML', xml], ['password change', password]] as const) assert.ok(at > 0 && at <= 40, `${what} at line ${at}`);
  // Starting the server comes before them, the test suite after.
  assert.ok(lineOf(/^npm start$/) < json);
  assert.ok(lineOf(/^npm test$/) > password);
});

test('H-6 an embedded resource with a node --test test, through service.fetch, within the first 150 lines', () => {
  const ts = blocks('README.md').find((b) => b.lang === 'ts');
  assert.ok(ts, 'a TypeScript example');
  const end = ts.line + ts.code.split('\n').length + 1;
  assert.ok(end <= 150, `it ends at line ${end}`);
  assert.match(ts.code, /from 'node:test'/);
  assert.match(ts.code, /service\.fetch\(/);
  assert.match(ts.code, /resources: \{/);
  // In about 20 lines.
  assert.ok(ts.code.split('\n').length <= 24, `${ts.code.split('\n').length} lines`);
});

test('H-6 the table of contents names every section, and every reference and guide is one click away', async () => {
  const toc = readme.slice(0, readme.indexOf('\n## '));
  const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1] as string);
  const own = anchors(readme);
  for (const heading of sections) {
    const anchor = [...own].find((a) => a === heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-'));
    assert.ok(anchor !== undefined && toc.includes(`(#${anchor})`), `the contents link to "${heading}"`);
  }
  const linked = new Set(links('README.md').map((l) => l.target));
  const walk = async (dir: string): Promise<string[]> =>
    (await readdir(join(ROOT, dir), { withFileTypes: true })).flatMap((e) => (e.isDirectory() ? [] : e.name.endsWith('.md') ? [join(dir, e.name)] : []));
  const docs = [...(await walk('docs/reference')), ...(await walk('docs/guides')), 'docs/benchmarks.md', 'docs/CONTRACT.md', 'SECURITY.md'];
  for (const doc of docs) assert.ok(linked.has(relative(ROOT, join(ROOT, doc))), `README links to ${doc}`);
});

test('H-6 the README says npx --yes, and what the quick start writes is what it writes', async (t) => {
  assert.match(section('Running it'), /npx --yes httpskit/);
  const dir = await tempDir(t);
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  const { child } = await serve(['--port', '0'], { cwd: dir, env: { HTTPSKIT_SCRYPT_LN: '12' } });
  t.after(() => child.kill('SIGKILL'));
  // `npm start` writes these at once, before any request; the README names each one.
  const written = [...(await readdir(join(dir, 'certs'))).map((f) => `certs/${f}`), ...(await readdir(join(dir, 'data'))).map((f) => `data/${f}`)].sort();
  assert.deepEqual(written, ['certs/localhost-cert.pem', 'certs/localhost-key.pem', 'data/users.json', 'data/users.json.journal', 'data/users.json.servers']);
  const quick = section('Quick start');
  for (const file of written) assert.ok(quick.includes(file.split('/')[1] as string), `the quick start names ${file}`);
  assert.match(quick, /at once/);
});

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

for (const protocol of PROTOCOLS) test(`README quick start prints what the README says, and the password change takes effect (${protocol})`, async (t) => {
  const qs = await quickStart(t, protocol);
  if (typeof qs === 'string') return t.skip(qs);
  const quick = blocks('README.md').filter((b) => b.lang === 'sh' && b.notRun === undefined && /curl/.test(b.code));
  const block = quick[0];
  assert.ok(block);
  const [json, xml, add, put] = block.code.split('\n');
  const expected = '<?xml version="1.0" encoding="UTF-8"?><something><param1>hello</param1></something>';
  assert.equal(await qs.sh(json as string), '{"param1":"hello"}');
  assert.equal(await qs.sh(xml as string), expected);
  assert.ok(section('Quick start').includes(expected), 'the README shows that XML');
  assert.equal(await qs.sh(add as string), '');
  assert.match(put as string, / -w '%\{http_code\}\\n' /);
  // The same line, also printing the protocol the .curlrc chose.
  const withVersion = (put as string).replace("-w '%{http_code}\\n'", "-w '%{http_code} %{http_version}\\n'");
  assert.equal(await qs.sh(withVersion), protocol === 'h2' ? '204 2\n' : '204 1.1\n');
  const store = await openStore(join(qs.dir, 'data', 'users.json'));
  const alice = await store.get('alice');
  await store.close();
  assert.ok(alice);
  assert.equal(await verifyPassword('copper-meadow-violin-77', alice.hash), true, 'the password change took effect');
});

test('H-6 the README\'s layout names every folder of lib/', async () => {
  const layout = section('Development');
  const folders = (await readdir(join(ROOT, 'lib'), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => `lib/${e.name}/`);
  assert.ok(folders.length > 5);
  for (const folder of folders) assert.match(layout, new RegExp(`^${folder.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} `, 'm'), folder);
});
