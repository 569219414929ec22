import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { createLineWriter, createLogger, IDLE_FLUSH_MS, MAX_BACKLOG_BYTES, millis, streamLines, type LogLevel } from '../lib/log.js';
import { BIN } from './helpers/cli.js';
import { logCases } from './fixtures/log-cases.js';
import { tempDir } from './helpers/tmp.js';

const entry = (status: number) => ({ id: 'i', method: 'GET', path: '/p', status, durationMs: 1, address: '::1' });

const cases: ReadonlyArray<readonly [LogLevel, requests: string, others: string]> = [
  ['info', '200 404 500', 'notice info warn error'],
  ['warn', '404 500', 'notice warn error'],
  ['error', '500', 'notice error'],
  ['off', '', 'notice error'],
];

for (const [level, requests, others] of cases) {
  test(`C-6 log level ${level}: request lines for ${requests || 'none'}; ${others}`, () => {
    const lines: Array<{ level: string; msg: string; status?: number }> = [];
    const log = createLogger((l) => lines.push(JSON.parse(l)), level, () => new Date(0));
    for (const status of [200, 404, 500]) log.request(entry(status));
    log.notice('notice');
    log.info('info');
    log.warn('warn');
    log.error('error', new Error('x'));
    assert.equal(lines.filter((l) => l.msg === 'request').map((l) => l.status).join(' '), requests);
    assert.equal(lines.filter((l) => l.msg !== 'request').map((l) => l.msg).join(' '), others);
    assert.equal(log.enabled, level !== 'off');
    const levels = Object.fromEntries(lines.filter((l) => l.msg === 'request').map((l) => [l.status, l.level]));
    for (const [status, expected] of [[200, 'info'], [404, 'warn'], [500, 'error']] as const) {
      if (levels[status] !== undefined) assert.equal(levels[status], expected);
    }
  });
}

test('C-6 a request line is one JSON object with the fields in order, whatever the path holds (P-11: nothing else)', () => {
  const lines: string[] = [];
  const at = new Date('2026-11-23T10:00:00.123Z');
  const log = createLogger((line) => lines.push(line), 'info', () => at);
  const hostile = ['/a"b\\c', '/\u0000\u001f\u2028', '/\ud800lone', '/ünïcødé/…', `/${'x'.repeat(600)}`];
  for (const path of hostile) log.request({ id: 'ab-1', method: 'GET', path, status: 404, durationMs: 1.25, address: '::1' });
  assert.equal(lines.length, hostile.length);
  lines.forEach((line, i) => {
    assert.equal(line.includes('\n'), false);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed), ['time', 'level', 'msg', 'id', 'method', 'path', 'status', 'durationMs', 'address']);
    assert.deepEqual(parsed, { time: '2026-11-23T10:00:00.123Z', level: 'warn', msg: 'request', id: 'ab-1', method: 'GET', path: hostile[i], status: 404, durationMs: 1.25, address: '::1' });
  });
});

test('C-6 request lines in a row with other levels and addresses each carry their own (the pieces a logger keeps between lines)', () => {
  const lines: string[] = [];
  const log = createLogger((line) => lines.push(line), 'info', () => new Date('2026-11-23T10:00:00.123Z'));
  const entries = [
    { status: 200, address: '::1' },
    { status: 404, address: '::1' },
    { status: 404, address: '10.0.0.7' },
    { status: 500, address: 'we"ird\u00e9' },
    { status: 200, address: 'we"ird\u00e9' },
    { status: 200, address: '::1' },
  ].map(({ status, address }, i) => ({ id: `ab-${i}`, method: 'GET', path: `/p/${i}`, status, durationMs: i, address }));
  for (const e of entries) log.request(e);
  assert.deepEqual(
    lines.map((line) => JSON.parse(line) as unknown),
    entries.map(({ id, method, path, status, durationMs, address }) => ({ time: '2026-11-23T10:00:00.123Z', level: status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info', msg: 'request', id, method, path, status, durationMs, address })),
  );
});

test('C-6 a request line is JSON.stringify of its entry for any method, path, address and status, and only a printable ASCII line is handed over as ASCII (it is written one byte a character)', () => {
  const at = new Date('2026-11-23T10:00:00.123Z');
  const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('/api/something.json', '::1', '203.0.113.9', 'GET', 'PUT'));
  fc.assert(
    fc.property(fc.array(fc.record({ method: text, path: text, address: text, status: fc.integer({ min: 100, max: 599 }), us: fc.integer({ min: 0, max: 10 ** 9 }) }), { minLength: 1, maxLength: 6 }), (entries) => {
      const lines: Array<{ line: string; ascii: boolean }> = [];
      const sink = Object.assign((line: string) => void lines.push({ line, ascii: false }), { ascii: (line: string) => void lines.push({ line, ascii: true }) });
      const log = createLogger(sink, 'info', () => at);
      entries.forEach((e, i) => log.request({ id: `ab-${i}`, method: e.method, path: e.path, status: e.status, durationMs: e.us / 1e3, address: e.address }));
      assert.equal(lines.length, entries.length);
      entries.forEach((e, i) => {
        const { line, ascii } = lines[i] as { line: string; ascii: boolean };
        const level = e.status >= 500 ? 'error' : e.status >= 400 ? 'warn' : 'info';
        assert.equal(line, JSON.stringify({ time: at.toISOString(), level, msg: 'request', id: `ab-${i}`, method: e.method, path: e.path, status: e.status, durationMs: e.us / 1e3, address: e.address }));
        if (ascii) assert.match(line, /^[\x20-\x7e]*$/);
      });
    }),
    { numRuns: 2_000 },
  );
});

test('C-6 one path again and again, then one to escape, then the first again: each line escapes its own path and goes to the writer its own characters call for', () => {
  const at = new Date('2026-11-23T10:00:00.123Z');
  const lines: Array<{ path: string; ascii: boolean }> = [];
  const keep = (ascii: boolean) => (line: string): void => void lines.push({ path: (JSON.parse(line) as { path: string }).path, ascii });
  const log = createLogger(Object.assign(keep(false), { ascii: keep(true) }), 'info', () => at);
  const paths = ['/api/a.json', '/api/a.json', '/api/"a".json', '/api/"a".json', '/api/\u00e9.json', '/api/a.json'];
  for (const [i, path] of paths.entries()) log.request({ id: `ab-${i}`, method: 'GET', path, status: 200, durationMs: 1, address: '::1' });
  assert.deepEqual(lines, paths.map((path) => ({ path, ascii: path === '/api/a.json' })));
});

test('C-6 a request line given the moment it was answered (`at`, performance.now()) is timed by it, not by when it is written', () => {
  const lines: string[] = [];
  const log = createLogger((line) => lines.push(line));
  for (const ago of [0, 5_000, 61_000]) log.request({ id: 'ab-1', method: 'GET', path: '/p', status: 200, durationMs: 1, address: '::1', at: performance.now() - ago });
  const times = lines.map((line) => Date.parse((JSON.parse(line) as { time: string }).time));
  const now = Date.now();
  for (const [i, ago] of [0, 5_000, 61_000].entries()) assert.ok(Math.abs(now - ago - (times[i] as number)) < 1_000, `line ${i}: ${new Date(times[i] as number).toISOString()}, expected about ${new Date(now - ago).toISOString()}`);
});

test('C-6 the time field is the ISO 8601 UTC time to the millisecond, however the milliseconds fall', () => {
  for (const iso of ['2026-11-23T10:00:00.000Z', '2026-11-23T10:00:00.007Z', '2026-11-23T10:00:00.070Z', '2026-11-23T10:00:59.999Z', '2000-02-29T23:59:59.100Z', '1969-12-31T23:59:59.999Z']) {
    const lines: string[] = [];
    const log = createLogger((line) => lines.push(line), 'info', () => new Date(iso));
    log.request({ id: 'ab-1', method: 'GET', path: '/', status: 200, durationMs: 1, address: '::1' });
    log.notice('notice');
    assert.deepEqual(lines.map((l) => (JSON.parse(l) as { time: string }).time), [iso, iso]);
  }
});

test('C-6 log lines share a write: the 256th pending line carries them, in order, at once; flush() writes what is pending', () => {
  const writes: string[] = [];
  const out = createLineWriter((chunk) => writes.push(String(chunk)));
  const write = (from: number, to: number): void => {
    for (let n = from; n <= to; n++) out.write(`{"n":${n}}`);
  };
  const expected = (from: number, to: number): string => Array.from({ length: to - from + 1 }, (_, i) => `{"n":${from + i}}\n`).join('');
  write(1, 255);
  assert.deepEqual(writes, [], 'lines wait for others');
  write(256, 256);
  assert.deepEqual(writes, [expected(1, 256)], 'the 256th line carries the ones before it');
  write(257, 300);
  assert.equal(writes.length, 1);
  out.flush();
  assert.deepEqual(writes.slice(1), [expected(257, 300)]);
  out.flush();
  assert.equal(writes.length, 2, 'flush() with nothing pending writes nothing');
});

test('C-6 a log line no later line comes to carry is written within IDLE_FLUSH_MS, once', async () => {
  const writes: string[] = [];
  const out = createLineWriter((chunk) => writes.push(String(chunk)));
  out.write('{"n":1}');
  out.write('{"n":2}');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(writes, [], 'lines wait for others');
  // The writer's timer was set first with a shorter delay, so it has fired once this one does.
  await new Promise((resolve) => setTimeout(resolve, IDLE_FLUSH_MS + 20));
  assert.deepEqual(writes, ['{"n":1}\n{"n":2}\n']);
  // A line written and flushed at once is not written again by a timer.
  out.write('{"n":3}');
  out.flush();
  await new Promise((resolve) => setTimeout(resolve, IDLE_FLUSH_MS + 20));
  assert.deepEqual(writes, ['{"n":1}\n{"n":2}\n', '{"n":3}\n']);
  // The next lone line gets a timer of its own.
  out.write('{"n":4}');
  await new Promise((resolve) => setTimeout(resolve, IDLE_FLUSH_MS + 20));
  assert.deepEqual(writes.slice(2), ['{"n":4}\n']);
});

test('C-6 a burst of log lines is written in bounded pieces, without waiting for the delay', () => {
  const writes: string[] = [];
  const out = createLineWriter((chunk) => writes.push(String(chunk)));
  for (let i = 0; i < 1_000; i++) out.write(`{"n":${i}}`);
  assert.ok(writes.length >= 3, `${writes.length} writes at once`);
  out.flush();
  const lines = writes.join('').split('\n').filter((l) => l !== '');
  assert.deepEqual(lines, Array.from({ length: 1_000 }, (_, i) => `{"n":${i}}`));
  assert.ok(writes.every((w) => w.split('\n').length - 1 <= 256), 'no write holds more than 256 lines');
});

test('C-6 the lines are byte for byte those of the version before issue 23 (startup, requests with every status, escapes, durations, errors)', () => {
  // test/fixtures/log-lines.jsonl was written by lib/log.ts of 2dc6dc0 with this clock and these calls.
  const expected = readFileSync(join(import.meta.dirname, 'fixtures', 'log-lines.jsonl'), 'utf8').split('\n').filter((l) => l !== '');
  const lines: string[] = [];
  for (const [i, call] of logCases().entries()) call(createLogger((l) => lines.push(l), 'info', () => new Date(Date.UTC(2026, 10, 27, 12, 0, 0) + i * 337)));
  assert.equal(lines.length, expected.length);
  lines.forEach((line, i) => assert.equal(line, expected[i]));
});

test('C-6 durationMs prints as JSON.stringify(Math.round(ms * 1e3) / 1e3) did, for any duration', () => {
  const before = (ms: number): string => (Number.isFinite(ms) ? JSON.stringify(Math.round(ms * 1e3) / 1e3) : 'null');
  fc.assert(
    fc.property(fc.oneof(fc.double({ noNaN: false }), fc.double({ min: 0, max: 1e7 }), fc.integer({ min: 0, max: 2 ** 40 }).map((us) => us / 1e3), fc.integer({ min: 0, max: 1e9 }).map((us) => us / 1e3 + 0.0005)), (ms) => {
      assert.equal(millis(ms), before(ms));
    }),
    // Durations of some 280 years, where doubles are 0.002 apart: a run found the first once.
    { numRuns: 20_000, examples: [[8849681330088.971], [8963582654346.381], [2 ** 52 / 1e3], [2 ** 52 / 1e3 + 0.001], [2 ** 53 / 1e3]] },
  );
});

test('C-6 a sink that does not keep up holds at most about MAX_BACKLOG_BYTES: later batches are dropped and counted, and a line says how many once it catches up', () => {
  let backlog = 0;
  const writes: string[] = [];
  const out = createLineWriter((chunk) => writes.push(String(chunk)), { backlog: () => backlog, maxBacklog: 1_000, now: () => new Date('2026-11-27T12:00:00.000Z') });
  out.write('{"n":1}');
  out.flush();
  backlog = 1_000;
  for (let i = 2; i <= 600; i++) out.write(`{"n":${i}}`);
  out.flush();
  assert.deepEqual(writes, ['{"n":1}\n'], 'nothing written while the sink holds its maximum');
  backlog = 999;
  out.write('{"n":601}');
  out.flush();
  assert.deepEqual(writes.slice(1), ['{"time":"2026-11-27T12:00:00.000Z","level":"warn","msg":"log lines dropped: the output did not keep up","dropped":599}\n', '{"n":601}\n']);
  out.write('{"n":602}');
  out.flush();
  assert.deepEqual(writes.slice(3), ['{"n":602}\n'], 'the count is said once');
});

test('C-6 a stream that never drains (stdout a pipe nobody reads) costs bounded memory: its backlog stops near MAX_BACKLOG_BYTES', () => {
  const stalled = new Writable({ highWaterMark: 16 * 1024, write: () => {} });
  const out = streamLines(stalled);
  const line = JSON.stringify({ time: '2026-11-27T12:00:00.000Z', level: 'info', msg: 'request', path: `/${'x'.repeat(180)}` });
  let peak = 0;
  for (let i = 0; i < 100_000; i++) {
    out.write(line);
    peak = Math.max(peak, stalled.writableLength);
  }
  out.flush();
  assert.ok(peak >= MAX_BACKLOG_BYTES, `the backlog reached ${peak}`);
  assert.ok(stalled.writableLength < MAX_BACKLOG_BYTES + 128 * 1024, `backlog ${stalled.writableLength} bytes, bound ${MAX_BACKLOG_BYTES} + one batch`);
  stalled.destroy();
});

/** `serve` with its stdout a pipe this test reads (or not) as it chooses; resolves once the startup line is there. */
async function startServe(dir: string): Promise<{ child: ChildProcess; url: string; stdout: () => string; pause: () => void; resume: () => void }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HTTPSKIT_')));
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--store', join(dir, 'users.json'), '--scrypt-ln', '10'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
      if (m !== null) {
        child.stdout?.off('data', check);
        resolve(m[1] as string);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => reject(new Error(`serve exited with ${String(code)}: ${err}`)));
  });
  return { child, url, stdout: () => out, pause: () => child.stdout?.pause(), resume: () => child.stdout?.resume() };
}

/** `count` GETs on 8 keep-alive connections; resolves with the statuses. */
async function getMany(url: string, count: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8, rejectUnauthorized: false });
  const one = (i: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(`${url}/api/something.json?param1=n${i}`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < count; i += 64) statuses.push(...(await Promise.all(Array.from({ length: Math.min(64, count - i) }, (_, j) => one(i + j)))));
    return statuses;
  } finally {
    agent.destroy();
  }
}

const requestLines = (stdout: string): Array<{ msg: string; id: string }> =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { msg: string; id: string })
    .filter((l) => l.msg === 'request');

test('C-5, C-6 SIGTERM loses no log line: every request answered has its line, written before the stopping line', async (t) => {
  const dir = await tempDir(t);
  const server = await startServe(dir);
  t.after(() => server.child.kill('SIGKILL'));
  const statuses = await getMany(server.url, 300);
  assert.ok(statuses.every((s) => s === 200));
  // At once: the last lines are still waiting for a batch.
  server.child.kill('SIGTERM');
  const code = await new Promise((resolve) => server.child.once('close', resolve));
  assert.equal(code, 0);
  const lines = server.stdout().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { msg: string });
  const msgs = lines.map((l) => l.msg);
  assert.ok(msgs.indexOf('listening') >= 0 && msgs.indexOf('listening') < msgs.indexOf('request'), 'the startup line first');
  assert.equal(requestLines(server.stdout()).length, 300);
  assert.equal(new Set(requestLines(server.stdout()).map((l) => l.id)).size, 300, 'one line per request');
  assert.ok(msgs.indexOf('stopping') > msgs.lastIndexOf('request'), 'the request lines come before the stopping line');
  // The operator sees the stop end: the last line, after the drain.
  assert.equal(msgs.at(-1), 'stopped');
  assert.equal(typeof (lines.at(-1) as { durationMs?: unknown }).durationMs, 'number');
});

test('C-6 a slow stdout (a pipe nobody reads for a while) never holds up requests, and no line is lost once it is read again', async (t) => {
  const dir = await tempDir(t);
  const server = await startServe(dir);
  t.after(() => server.child.kill('SIGKILL'));
  server.pause();
  // About 700 KB of log lines: ten times what the pipe holds.
  const started = performance.now();
  const statuses = await getMany(server.url, 3_000);
  const seconds = (performance.now() - started) / 1000;
  assert.ok(statuses.every((s) => s === 200));
  assert.equal(requestLines(server.stdout()).length, 0, 'nothing was read from the pipe meanwhile');
  server.resume();
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('close', resolve));
  assert.equal(requestLines(server.stdout()).length, 3_000, `all lines (the requests took ${seconds.toFixed(1)} s)`);
});

test('C-6 close() of a library service logging to stdout loses no line, even when the process exits at once', async (t) => {
  const dir = await tempDir(t);
  const script = join(dir, 'service.mjs');
  const index = join(BIN, '..', '..', 'lib', 'index.js');
  writeFileSync(
    script,
    `import { createService } from ${JSON.stringify(index)};
import { request } from 'node:https';
const service = createService({ port: 0, log: true, store: ${JSON.stringify(join(dir, 'users.json'))}, scrypt: { ln: 10, r: 8, p: 1 } });
const { url } = await service.listen();
const get = (i) => new Promise((resolve, reject) => request(url + '/api/something.json?param1=n' + i, { rejectUnauthorized: false }, (res) => { res.resume(); res.on('end', resolve); }).on('error', reject).end());
for (let i = 0; i < 200; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => get(i + j)));
await service.close();
process.exit(0);
`,
  );
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HTTPSKIT_')));
  const child = spawn(process.execPath, [script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise((resolve) => child.once('close', resolve));
  assert.equal(code, 0);
  assert.equal(requestLines(out).length, 200);
});

test('C-6 the writer keeps every line whole and in order: multi-byte text, a line larger than a batch, lines around it', () => {
  const writes: Buffer[] = [];
  const out = createLineWriter((chunk) => writes.push(Buffer.from(chunk)));
  const big = `{"stack":"${'ü€😀'.repeat(30_000)}"}`;
  const lines = ['{"a":"ünïcødé …"}', '{"b":"😀"}', big, '{"c":1}', ...Array.from({ length: 500 }, (_, i) => `{"n":${i},"p":"/ü${'x'.repeat(i)}"}`)];
  for (const line of lines) out.write(line);
  out.flush();
  assert.equal(Buffer.concat(writes).toString('utf8'), lines.map((l) => `${l}\n`).join(''));
});

test('C-6 request lines through the batched writer are the same bytes whatever their characters: printable ASCII, Latin-1 and UTF-16 paths, a quote, and another line in their batch', () => {
  const writes: Buffer[] = [];
  const out = createLineWriter((chunk) => writes.push(Buffer.from(chunk)));
  const log = createLogger(out.write, 'info', () => new Date(Date.UTC(2026, 11, 4, 12, 0, 0, 7)));
  const paths = ['/api/something.json?param1=hello', '/caf\u00c3\u00a9', '/\u00e9t\u00e9', '/\u20ac/\u{1f600}', '/say"hi"\\', '/tab\there'];
  const expected: string[] = [];
  paths.forEach((path, i) => {
    const entry = { id: `a1b2c3d4-${i}`, method: 'GET', path, status: 200, durationMs: 0.25, address: '127.0.0.1' };
    log.request(entry);
    expected.push(JSON.stringify({ time: '2026-12-04T12:00:00.007Z', level: 'info', msg: 'request', ...entry }));
    // A batch of request lines alone (written as bytes), then one that also holds a notice.
    if (i === 0) {
      out.flush();
      assert.equal(Buffer.concat(writes).toString('utf8'), `${expected[0]}\n`);
    }
  });
  log.notice('listening', { url: 'https://h\u00f6st.example:8443/' });
  out.flush();
  const text = Buffer.concat(writes).toString('utf8');
  const lines = text.trimEnd().split('\n');
  assert.deepEqual(lines.slice(0, paths.length), expected);
  assert.equal(JSON.parse(lines[paths.length] as string).url, 'https://h\u00f6st.example:8443/');
  // An address through a trusted proxy is the client's text: anything JSON must escape stays escaped.
  log.request({ id: 'a1b2c3d4-z', method: 'GET', path: '/', status: 200, durationMs: 1, address: '"\u00ff' });
  out.flush();
  assert.equal(JSON.parse(Buffer.concat(writes).toString('utf8').trimEnd().split('\n').at(-1) as string).address, '"\u00ff');
});

test('C-6 a sink function of the embedder gets each line as its only argument', () => {
  const calls: unknown[][] = [];
  const log = createLogger((...args: unknown[]) => void calls.push(args), 'info', () => new Date(0));
  log.request({ id: 'a-1', method: 'GET', path: '/x', status: 200, durationMs: 1, address: '127.0.0.1' });
  log.request({ id: 'a-2', method: 'GET', path: '/\u00e9', status: 404, durationMs: 1, address: '127.0.0.1' });
  assert.equal(calls.length, 2);
  for (const args of calls) assert.equal(args.length, 1);
  assert.equal(JSON.parse(calls[1]?.[0] as string).path, '/\u00e9');
});
