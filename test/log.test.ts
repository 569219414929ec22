import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLineWriter, createLogger, IDLE_FLUSH_MS, LINE_DELAY_MS, type LogLevel } from '../lib/log.js';

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

test('C-6 the time field is the ISO 8601 UTC time to the millisecond, however the milliseconds fall', () => {
  for (const iso of ['2026-11-23T10:00:00.000Z', '2026-11-23T10:00:00.007Z', '2026-11-23T10:00:00.070Z', '2026-11-23T10:00:59.999Z', '2000-02-29T23:59:59.100Z', '1969-12-31T23:59:59.999Z']) {
    const lines: string[] = [];
    const log = createLogger((line) => lines.push(line), 'info', () => new Date(iso));
    log.request({ id: 'ab-1', method: 'GET', path: '/', status: 200, durationMs: 1, address: '::1' });
    log.notice('notice');
    assert.deepEqual(lines.map((l) => (JSON.parse(l) as { time: string }).time), [iso, iso]);
  }
});

test('C-6 log lines share a write: the first line LINE_DELAY_MS or more after the oldest pending one carries them, in order; flush() writes what is pending', () => {
  const writes: string[] = [];
  let now = 1_000;
  const out = createLineWriter((text) => writes.push(text), () => now);
  out.write('{"n":1}');
  now += LINE_DELAY_MS - 1;
  out.write('{"n":2}');
  assert.deepEqual(writes, [], 'nothing written before the delay');
  now += 1;
  out.write('{"n":3}');
  assert.deepEqual(writes, ['{"n":1}\n{"n":2}\n{"n":3}\n'], 'the line at the delay carries the two before it');
  // The delay counts from the oldest pending line, not from the last write.
  now += 5 * LINE_DELAY_MS;
  out.write('{"n":4}');
  now += LINE_DELAY_MS - 1;
  out.write('{"n":5}');
  assert.equal(writes.length, 1);
  out.flush();
  assert.deepEqual(writes.slice(1), ['{"n":4}\n{"n":5}\n']);
  out.flush();
  assert.equal(writes.length, 2, 'flush() with nothing pending writes nothing');
});

test('C-6 a log line no later line comes to carry is written within IDLE_FLUSH_MS, once', async () => {
  const writes: string[] = [];
  const out = createLineWriter((text) => writes.push(text));
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
  const out = createLineWriter((text) => writes.push(text));
  for (let i = 0; i < 1_000; i++) out.write(`{"n":${i}}`);
  assert.ok(writes.length >= 3, `${writes.length} writes at once`);
  out.flush();
  const lines = writes.join('').split('\n').filter((l) => l !== '');
  assert.deepEqual(lines, Array.from({ length: 1_000 }, (_, i) => `{"n":${i}}`));
  assert.ok(writes.every((w) => w.split('\n').length - 1 <= 256), 'no write holds more than 256 lines');
});
