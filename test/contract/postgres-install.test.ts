// S-1: `pg` is an optional peer dependency. Installed from its packed tarball into an empty folder
// outside the repository (Node looks for `pg` in every parent's node_modules, so the folder must
// have none above it), httpskit has zero run-time dependencies, works with the file store, and a
// postgres:// store gives one clear line naming the package to install, exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { run } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const exec = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function npmEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_PATH;
  // npm run test exports the project's npm_config_* settings; the install must not inherit them.
  for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];
  return env;
}

test('S-1: an install without pg has no run-time dependency, serves the file store, and a postgres:// store names pg (exit 1)', async (t) => {
  assert.ok(existsSync(join(ROOT, 'dist', 'bin', 'httpskit.js')), 'dist/ is built (npm test builds it first)');
  const dir = await tempDir(t);
  for (let up = dir; up !== dirname(up); up = dirname(up)) assert.ok(!existsSync(join(dirname(up), 'node_modules', 'pg')), `a pg above ${dir}`);
  // --ignore-scripts: dist/ is already built; `prepare` would rebuild it under other test files' feet.
  const packed = await exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: ROOT, env: npmEnv() });
  const tarball = join(dir, (JSON.parse(packed.stdout) as [{ filename: string }])[0].filename);
  const app = join(dir, 'app');
  await mkdir(app);
  // A package.json of its own, so npm installs here and not into some package found further up.
  await writeFile(join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}\n');
  await exec('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], { cwd: app, env: npmEnv() });

  assert.deepEqual(await readdir(join(app, 'node_modules')).then((names) => names.filter((n) => !n.startsWith('.'))), ['httpskit']);
  const lock = JSON.parse(await readFile(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  assert.deepEqual(Object.keys(lock.packages).sort(), ['', 'node_modules/httpskit']);

  const bin = join(app, 'node_modules', 'httpskit', 'dist', 'bin', 'httpskit.js');
  const added = await run(['user', 'add', 'alice', '--store', join(app, 'data', 'users.json')], { bin, cwd: app, input: 'correct horse battery staple\n' });
  assert.equal(added.code, 0, added.stderr);
  const listed = await run(['user', 'list', '--store', join(app, 'data', 'users.json')], { bin, cwd: app });
  assert.match(listed.stdout, /^alice\tuser\t/);

  for (const args of [
    ['user', 'list', '--store', 'postgres://ops:hunter2-secret@127.0.0.1:1/httpskit'],
    ['serve', '--port', '0', '--store', 'postgresql://ops:hunter2-secret@127.0.0.1:1/httpskit'],
  ]) {
    const failed = await run(args, { bin, cwd: app });
    assert.equal(failed.code, 1, `${args.join(' ')}: ${failed.stderr}`);
    const lines = failed.stderr.trim().split('\n');
    assert.equal(lines.length, 1, failed.stderr);
    assert.match(lines[0] ?? '', /"pg"/);
    assert.match(lines[0] ?? '', /npm install pg/);
    assert.doesNotMatch(failed.stderr + failed.stdout, /hunter2-secret/);
  }
  const viaEnv = await run(['user', 'list'], { bin, cwd: app, env: { HTTPSKIT_STORE: 'postgres://ops:hunter2-secret@127.0.0.1:1/httpskit' } });
  assert.equal(viaEnv.code, 1, viaEnv.stderr);
  assert.match(viaEnv.stderr, /npm install pg/);
});
