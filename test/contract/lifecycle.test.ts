// A-10 quiet, file-free defaults; A-11 lifecycle and arguments: listen() once, close() idempotent,
// a process that used the service exits on its own, wrong-typed arguments are ERR_INVALID_ARGUMENT
// naming the argument (never a TypeError from inside), the last admin stays unless forced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as lib from '../../lib/index.js';
import { createService, ServiceError, type Service } from '../../lib/index.js';
import { FAST_SCRYPT, startService, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';

const CHILD = fileURLToPath(new URL('../fixtures/lifecycle-child.ts', import.meta.url));

/** Runs the fixture in `cwd`; resolves with what it printed once it exits by itself, rejects after `timeoutMs`. */
function runChild(scenario: string, cwd: string, timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CHILD, scenario], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the child did not exit within ${timeoutMs} ms (something is left open); it said:\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const isCode = (code: string, name?: RegExp) => (error: unknown) =>
  error instanceof ServiceError && error.code === code && (name === undefined || name.test(error.message));

test('A-11 listen() twice or after close() is ERR_SERVICE_STATE, close() twice resolves, and the process exits on its own', async (t) => {
  const { code, stdout, stderr } = await runChild('lifecycle', await tempDir(t));
  assert.equal(code, 0, stderr);
  assert.equal(stdout, '', 'A-10: nothing logged unless asked');
  assert.deepEqual(stderr.trim().split('\n'), [
    'second listen: ERR_SERVICE_STATE',
    'listen while closing: ERR_SERVICE_STATE',
    'concurrent closes: resolved,resolved',
    'listen after close: ERR_SERVICE_STATE',
    'close again: resolved',
    'user call after close: ERR_SERVICE_STATE',
    'fetch of the store after close: 503',
  ]);
});

test('A-10 a memory store through service.fetch writes no file and prints nothing, Digest and hashing included', async (t) => {
  const dir = await tempDir(t);
  const { code, stdout, stderr } = await runChild('memory', dir);
  assert.equal(code, 0, stderr);
  assert.equal(stderr.trim(), 'statuses: 200,200,200,200,201,204,401');
  assert.equal(stdout, '');
  assert.deepEqual(await readdir(dir), [], 'nothing written in the working directory');
});

test('A-11 the first listener keeps serving after a refused second listen()', async (t) => {
  const started = await startService(t, { store: ':memory:' });
  await assert.rejects(started.service.listen(), isCode('ERR_SERVICE_STATE'));
  assert.equal((await started.fetch('/healthz')).status, 200);
});

test('A-11 a start that fails (port in use) leaves a service that closes; close() during a start waits and undoes it', async (t) => {
  const first = await startService(t, { store: ':memory:' });
  const port = Number(new URL(first.url).port);
  const second = createService({ store: ':memory:', port, ...testCertificate(), scrypt: FAST_SCRYPT });
  await assert.rejects(second.listen(), (error: unknown) => (error as { code?: string }).code === 'EADDRINUSE');
  const third = createService({ store: ':memory:', port: 0, ...testCertificate(), scrypt: FAST_SCRYPT });
  const listening = third.listen();
  await third.close();
  const { url } = await listening;
  await assert.rejects(fetch(`${url}/healthz`), 'closed once its start had finished');
  // The failed start opened nothing: once the port is free, the same service listens on it.
  await first.service.close(0);
  assert.equal(new URL((await second.listen()).url).port, String(port));
  await second.close();
});

test('A-10 nothing is logged by default; nested options keep their other defaults', () => {
  const service = createService();
  assert.equal(service.config.log, false);
  assert.deepEqual(createService({ scrypt: { ln: 14 } }).config.scrypt, { ln: 14, r: 8, p: 1 });
  assert.deepEqual(createService({ scrypt: { p: 2, r: undefined } as never }).config.scrypt, { ln: 17, r: 8, p: 2 });
  assert.throws(() => createService({ scrypt: { n: 1024 } as never }), isCode('ERR_INVALID_OPTION', /scrypt/));
  assert.throws(() => createService({ scrypt: { ln: 23 } }), isCode('ERR_INVALID_OPTION'), 'the merged cost is checked');
});

/** Every public call with an argument of the wrong type, and the name its error must give. */
function wrongCalls(service: Service): Array<[string, () => unknown, RegExp]> {
  return [
    ["createService('x')", () => createService('x' as never), /^options /],
    ['createService(null)', () => createService(null as never), /^options /],
    ['createService([])', () => createService([] as never), /^options /],
    ['users.add(42, …)', () => service.users.add(42 as never, 'a-long-enough-password'), /^name /],
    ["users.add('a', 42)", () => service.users.add('alice', 42 as never), /^password /],
    ["users.add('a', 'p', 'admin')", () => service.users.add('alice', 'a-long-enough-password', 'admin' as never), /^options /],
    ["users.add('a', 'p', { role: 'root' })", () => service.users.add('alice', 'a-long-enough-password', { role: 'root' as never }), /^options\.role /],
    ['users.verify(null, …)', () => service.users.verify(null as never, 'x'), /^name /],
    ["users.setPassword('a')", () => (service.users.setPassword as (name: unknown) => unknown)('alice'), /^password /],
    ['users.remove(42)', () => service.users.remove(42 as never), /^name /],
    ["users.remove('a', { force: 'yes' })", () => service.users.remove('alice', { force: 'yes' as never }), /^options\.force /],
    ["users.setRole('a', 'root')", () => service.users.setRole('alice', 'root' as never), /^role /],
    ['users.issueResetToken({})', () => service.users.issueResetToken({} as never), /^name /],
    ["close('soon')", () => service.close('soon' as never), /^graceMs /],
    ['close(-1)', () => service.close(-1), /^graceMs /],
    ["reloadCertificate('pem')", () => service.reloadCertificate('pem' as never), /^pair /],
    ['reloadCertificate({ cert: 1 })', () => service.reloadCertificate({ cert: 1, key: 'k' } as never), /^pair\.cert /],
    ['fetch(123)', () => service.fetch(123 as never), /^input /],
    // The helpers exported on their own (synchronous: they throw).
    ['parseAccept(42)', () => lib.parseAccept(42 as never), /^header /],
    ['negotiate(42, …)', () => lib.negotiate(42 as never, ['application/json']), /^accept /],
    ["negotiate('*/*', 'x')", () => lib.negotiate('*/*', 'application/json' as never), /^offered /],
    ['negotiateAll(1, [])', () => lib.negotiateAll(1 as never, []), /^accept /],
    ['createNegotiator(5)', () => lib.createNegotiator(5 as never), /^offered /],
    ['createNegotiator([…])(5)', () => lib.createNegotiator(['application/json'])(5 as never), /^accept /],
    ['toXml({}, 5)', () => lib.toXml({}, 5 as never), /^toXml options /],
    ['encodeXmlName(5)', () => lib.encodeXmlName(5 as never), /^encodeXmlName /],
    ['decodeXmlName(5)', () => lib.decodeXmlName(5 as never), /^decodeXmlName /],
    ["problem('x', …)", () => lib.problem('x' as never, 'not-found'), /status/],
    ["renderProblem(5, 'json')", () => lib.renderProblem(5 as never, 'json'), /renderProblem: p /],
    ['new HttpError(5)', () => new lib.HttpError(5 as never), /^problem /],
  ];
}

test('A-11 a wrong-typed argument is ERR_INVALID_ARGUMENT naming it; a call that returns a promise rejects, never throws', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT });
  t.after(() => service.close());
  for (const [call, run, name] of wrongCalls(service)) {
    let result: unknown;
    try {
      result = run();
    } catch (error) {
      assert.ok(!/^(users|close|reload|fetch)/.test(call), `${call} threw synchronously instead of rejecting`);
      assert.ok(isCode('ERR_INVALID_ARGUMENT', name)(error), `${call}: ${String(error)}`);
      continue;
    }
    assert.ok(result instanceof Promise, `${call} returned a promise`);
    await assert.rejects(result, isCode('ERR_INVALID_ARGUMENT', name), call);
  }
  assert.equal((await service.users.list()).length, 0, 'none of them changed anything');
});

test('A-11 users.remove of the last admin is ERR_LAST_ADMIN unless { force: true }', async (t) => {
  const service = createService({ store: ':memory:', scrypt: FAST_SCRYPT });
  t.after(() => service.close());
  await service.users.add('root', 'a-long-admin-passphrase', { role: 'admin' });
  await service.users.add('bob', 'quiet-river-stone-lamp');
  await assert.rejects(service.users.remove('root'), isCode('ERR_LAST_ADMIN'));
  assert.equal(await service.users.remove('bob'), true, 'anyone else goes');
  assert.equal(await service.users.remove('nobody'), false);
  await service.users.add('second', 'green-field-paper-moon', { role: 'admin' });
  assert.equal(await service.users.remove('root'), true, 'an admin who is not the last goes');
  assert.equal(await service.users.remove('second', { force: true }), true, 'forced');
  assert.deepEqual(await service.users.list(), []);
});
