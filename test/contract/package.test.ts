// How npx users get it: `npm pack` → install the tarball into an empty folder → run the command (C-1, A-1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from '../helpers/https.js';
import { exited, run, serve } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const execFileP = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('npm pack gives the compiled library, types and the command, and nothing else; it installs and runs', { timeout: 180_000 }, async (t) => {
  const dir = await tempDir(t);
  // --ignore-scripts: `npm test` has just built dist/; don't rebuild it under a parallel test run.
  const { stdout } = await execFileP('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT });
  const [info] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  assert.ok(info);
  const files = info.files.map((f) => f.path).sort();
  for (const f of files) {
    assert.match(f, /^(package\.json|README\.md|LICENSE|SECURITY\.md|docs\/[a-z/-]+\.md|docs\/CONTRACT\.md|(certs|assets)\/README\.md|dist\/(lib|bin)\/.+\.(js|d\.ts)|dist\/assets\/.+)$/, f);
  }
  // H-6: the documents the README and SECURITY.md link to ship with them.
  for (const must of ['dist/bin/httpskit.js', 'dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/assets/common-passwords.txt', 'package.json', 'README.md', 'SECURITY.md', 'docs/CONTRACT.md', 'docs/reference/api.md', 'docs/guides/passwords-and-users.md', 'certs/README.md', 'assets/README.md']) {
    assert.ok(files.includes(must), must);
  }
  assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('lib/') || f.endsWith('.ts') && !f.endsWith('.d.ts')));
  // Only what the sources compile to: nothing left in dist/ from a file since moved or deleted.
  const { existsSync } = await import('node:fs');
  const orphans = files.filter((f) => /^dist\/(lib|bin)\/.+\.js$/.test(f) && !existsSync(join(ROOT, f.slice('dist/'.length).replace(/\.js$/, '.ts'))));
  assert.deepEqual(orphans, [], 'compiled files without a source');
  // H-6: every relative link in a shipped document leads to a shipped file.
  for (const doc of files.filter((f) => f.endsWith('.md'))) {
    const text = await readFile(join(ROOT, doc), 'utf8');
    for (const [, target = ''] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue;
      const resolved = posix.normalize(posix.join(posix.dirname(doc), target));
      assert.ok(files.includes(resolved), `${doc} links to ${target}, which is not in the package`);
    }
  }

  const app = join(dir, 'app');
  await execFileP('mkdir', ['-p', app]);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
  await execFileP('npm', ['install', '--no-audit', '--no-fund', '--offline', join(dir, info.filename)], { cwd: app });
  assert.deepEqual((await readdir(join(app, 'node_modules'))).filter((n) => !n.startsWith('.')), ['httpskit'], 'zero run-time dependencies');
  const bin = join(app, 'node_modules', '.bin', 'httpskit');
  const help = await run(['--help'], { bin, cwd: app });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: httpskit/);
  const { child, url } = await serve(['--port', '0', '--scrypt-ln', '10'], { bin, cwd: app });
  t.after(() => child.kill('SIGKILL'));
  const ca = (await import('node:fs/promises')).readFile(join(app, 'certs', 'localhost-cert.pem'));
  const r = await request(`${url}/api/something.xml?param1=npx`, { ca: await ca });
  assert.equal(r.status, 200);
  child.kill('SIGINT');
  assert.equal(await exited(child), 0);
  // The library entry resolves with its types from the installed package.
  await writeFile(join(app, 'check.mjs'), "import { createService, toXml } from 'httpskit'; console.log(typeof createService, toXml({a:1},{root:'r',declaration:false}));");
  const check = await execFileP(process.execPath, ['check.mjs'], { cwd: app });
  assert.equal(check.stdout.trim(), 'function <r><a>1</a></r>');
});

test('A-1 the shipped types compile where no @types package loads on its own (TypeScript 6 and later: "types": []), strict and without skipLibCheck', async (t) => {
  const dir = await tempDir(t);
  const { mkdir, symlink } = await import('node:fs/promises');
  // The package as an app sees it (dist/ is built by `npm test`), and @types/node installed beside it.
  await mkdir(join(dir, 'node_modules'));
  await symlink(ROOT, join(dir, 'node_modules', 'httpskit'));
  await symlink(join(ROOT, 'node_modules', '@types'), join(dir, 'node_modules', '@types'));
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'types-only', private: true, type: 'module' }));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, module: 'nodenext', target: 'ES2022', types: [], skipLibCheck: false, noEmit: true }, include: ['main.ts'] }));
  // Imports nothing from node:*, so only httpskit's declarations can bring Node's types in.
  await writeFile(join(dir, 'main.ts'), "import { createService, type Service } from 'httpskit';\nconst service: Service = createService({ store: ':memory:' });\nawait service.close();\n");
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = await execFileP(process.execPath, [tsc, '-p', dir]).then(() => '', (e: { stdout: string }) => e.stdout);
  assert.equal(result, '');
});
