// Every example of the user documents runs (H-6, issue 22): each shell block against a real server
// that this file starts (one per page, in a fresh folder, as a user who follows that page has), each
// TypeScript block compiled against the shipped types (dist/lib/index.d.ts, imported as 'httpskit')
// and run. A block that cannot run here says why in a `<!-- not run: … -->` comment right before it;
// those are counted and listed. A ```text block after `<!-- output -->` is what the block before it
// prints, `…` standing for any text.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { curlSkip, serve } from '../helpers/cli.js';
import { makeTempDir, removeTempDir, tempDir } from '../helpers/tmp.js';
import { ROOT, blocks, read, userDocs, type Block } from './markdown.js';

const execFileP = promisify(execFile);
const SHELL = new Set(['sh', 'bash']);
const TYPESCRIPT = new Set(['ts', 'typescript']);
/** Shown, not run: data formats, configuration of other programs, and output. */
const SHOWN = new Set(['', 'text', 'json', 'xml', 'yaml', 'nginx', 'haproxy', 'http', 'ini', 'output']);
const SHIMS = join(ROOT, 'test', 'docs', 'shims.sh');
/** The hash cost of every server and command the examples start: the examples do not depend on it, the suite's time does. */
const CHEAP = { HTTPSKIT_SCRYPT_LN: '12' };

const docs = userDocs();
const all = docs.flatMap((doc) => blocks(doc));
const where = (b: Block) => `${b.doc}:${b.line}`;
/** The README's quick-start shell blocks, which every guide takes as done. */
const quickStart = (() => {
  const text = read('README.md');
  const from = text.indexOf('\n## Quick start\n');
  const to = text.indexOf('\n## ', from + 1);
  const [first, last] = [text.slice(0, from).split('\n').length, text.slice(0, to).split('\n').length];
  return blocks('README.md').filter((b) => SHELL.has(b.lang) && b.notRun === undefined && b.line > first && b.line < last);
})();

test('every code block is a kind the doc test runs (sh, bash, ts) or only shows; every opt-out gives its reason', (t) => {
  const unknown = all.filter((b) => !SHELL.has(b.lang) && !TYPESCRIPT.has(b.lang) && !SHOWN.has(b.lang)).map((b) => `${where(b)} \`\`\`${b.lang}`);
  assert.deepEqual(unknown, [], 'use ```sh (run), ```ts (compiled and run) or a data format such as ```text (shown)');
  const notRun = all.filter((b) => b.notRun !== undefined);
  for (const b of notRun) assert.ok(SHELL.has(b.lang) || TYPESCRIPT.has(b.lang), `${where(b)}: only code is opted out`);
  const runnable = all.filter((b) => SHELL.has(b.lang) || TYPESCRIPT.has(b.lang));
  t.diagnostic(`${runnable.length} examples, ${notRun.length} not run: ${notRun.map((b) => `${where(b)} (${b.notRun})`).join('; ')}`);
  // The opt-out is for the few that need another machine or a real proxy, not a way around the test.
  assert.ok(notRun.length * 5 <= runnable.length, `${notRun.length} of ${runnable.length} examples are not run`);
});

/** `expected` with `…` standing for any text, trailing white space ignored. */
export function matchesOutput(actual: string, expected: string): boolean {
  const pattern = expected.trimEnd().split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*?');
  return new RegExp(`^${pattern}$`).test(actual.trimEnd());
}

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // NODE_TEST_CONTEXT would make an example's own `node --test` report to this runner.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HTTPSKIT_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  return env;
}

function runProcess(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

for (const doc of docs) {
  const shell = blocks(doc).filter((b) => SHELL.has(b.lang));
  if (!shell.some((b) => b.notRun === undefined)) continue;
  test(`${doc}: every shell example runs, in order, against a server started as the page says`, async (t) => {
    const skip = await curlSkip('h1');
    if (skip !== undefined) return t.skip(skip);
    // Removed after the servers the examples started are stopped (their pids are listed in it).
    const dir = await makeTempDir();
    await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
    // The user's own ~/.curlrc must not change what curl does here.
    await writeFile(join(dir, '.curlrc'), '');
    await writeFile(join(dir, '.doc-pids'), '');
    const { child, url } = await serve(['--port', '0'], { cwd: dir, env: CHEAP });
    t.after(async () => {
      child.kill('SIGKILL');
      const pids = (await readFile(join(dir, '.doc-pids'), 'utf8')).split('\n').filter((p) => /^\d+$/.test(p));
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await removeTempDir(dir);
    });
    await writeFile(join(dir, '.doc-ports'), `8443 ${new URL(url).port} ${child.pid}\n`);
    // The production examples name the reader's own certificate, cert.pem and key.pem: here, the development one.
    await copyFile(join(dir, 'certs', 'localhost-cert.pem'), join(dir, 'cert.pem'));
    await copyFile(join(dir, 'certs', 'localhost-key.pem'), join(dir, 'key.pem'));
    const env = { ...cleanEnv(), ...CHEAP, CURL_HOME: dir };
    // The guides start where the README's quick start leaves a reader (alice exists).
    if (doc !== 'README.md') {
      for (const b of quickStart) {
        const r = await runProcess('bash', ['-c', `source ${JSON.stringify(SHIMS)}\nset -e -o pipefail\n${b.code}\n`], dir, env);
        assert.equal(r.code, 0, `the quick start (${where(b)}) failed before ${doc}:\n${r.stderr}`);
      }
    }
    for (const b of shell) {
      if (b.notRun !== undefined) continue;
      await t.test(where(b), async () => {
        const script = `source ${JSON.stringify(SHIMS)}\nset -e -o pipefail\n${b.code}\n`;
        const r = await runProcess('bash', ['-c', script], dir, env);
        assert.equal(r.code, 0, `${where(b)} failed:\n${b.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
        if (b.output !== undefined) assert.ok(matchesOutput(r.stdout, b.output), `${where(b)} printed:\n${r.stdout}\nand the page says:\n${b.output}`);
      });
    }
  });
}

test('every TypeScript example compiles against the shipped types, and runs', async (t) => {
  const ts = all.filter((b) => TYPESCRIPT.has(b.lang));
  if (ts.length === 0) return t.skip('no TypeScript examples');
  const dir = await tempDir(t);
  // The package as an app sees it: 'httpskit' resolves through package.json's exports to dist/.
  await mkdir(join(dir, 'node_modules'));
  await symlink(ROOT, join(dir, 'node_modules', 'httpskit'));
  for (const dep of ['@types', 'express', 'hono', '@hono']) if (existsSync(join(ROOT, 'node_modules', dep))) await symlink(join(ROOT, 'node_modules', dep), join(dir, 'node_modules', dep));
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'docs-examples', private: true, type: 'module' }));
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', types: ['node'], outDir: 'out', rootDir: '.', sourceMap: false },
      include: ['*.ts'],
    }),
  );
  const files = ts.map((b, i) => `example${i}.ts`);
  await Promise.all(ts.map((b, i) => writeFile(join(dir, files[i] as string), b.code)));
  const compile = await execFileP(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir]).catch((e: { stdout: string }) => ({ stdout: e.stdout }));
  // Errors name example<i>.ts(line,col): translate them to the document's lines.
  const errors = compile.stdout.replace(/\S*example(\d+)\.ts\((\d+),(\d+)\)/g, (_m, i: string, line: string, col: string) => {
    const b = ts[Number(i)] as Block;
    return `${b.doc}:${b.line + Number(line)}:${col}`;
  });
  assert.equal(errors.trim(), '', 'the examples compile');
  for (const [i, b] of ts.entries()) {
    if (b.notRun !== undefined) continue;
    await t.test(where(b), async () => {
      const cwd = join(dir, `run${i}`);
      await mkdir(cwd);
      const js = join(dir, 'out', (files[i] as string).replace(/\.ts$/, '.js'));
      const args = /from 'node:test'/.test(b.code) ? ['--test', '--test-reporter=dot', js] : [js];
      const r = await runProcess(process.execPath, args, cwd, cleanEnv());
      assert.equal(r.code, 0, `${where(b)} failed:\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
      if (b.output !== undefined) assert.ok(matchesOutput(r.stdout, b.output), `${where(b)} printed:\n${r.stdout}\nand the page says:\n${b.output}`);
    });
  }
});

test('the output check is not a formality: … stands for text, the rest must be there', () => {
  assert.equal(matchesOutput('{"a":1}\n', '{"a":1}'), true);
  assert.equal(matchesOutput('{"a":2}', '{"a":1}'), false);
  assert.equal(matchesOutput('x 2026-11-27 y', 'x … y'), true);
  assert.equal(matchesOutput('x y z', 'x … q'), false);
});
