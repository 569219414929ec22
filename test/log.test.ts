import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, type LogLevel } from '../lib/log.js';

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
