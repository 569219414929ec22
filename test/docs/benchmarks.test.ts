// docs/benchmarks.md quotes the latest benchmark run (bench/latest-results.json): a new run that
// moves a figure makes this fail until the summary says what the run says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, read } from './markdown.js';

interface Row {
  readonly benchmark: string;
  readonly figure: string;
  readonly value: string;
}
const latest = JSON.parse(readFileSync(join(ROOT, 'bench', 'latest-results.json'), 'utf8')) as { table: Row[]; machine: { date?: string } };
const page = read('docs/benchmarks.md');

/** The page's row (by its first two cells) → the run's row it quotes. */
const QUOTED: ReadonlyArray<readonly [what: string, benchmark: string, figure: string]> = [
  ['JSON over HTTPS, keep-alive | httpskit ÷ Fastify', 'https keep-alive json', 'CPU/request httpskit ÷ fastify'],
  ['XML over HTTPS, a browser\'s `Accept` | httpskit ÷ Fastify', 'https keep-alive xml (Chrome Accept)', 'CPU/request httpskit ÷ fastify'],
  ['JSON over HTTPS, both with their default request log | httpskit ÷ Fastify + pino', 'https keep-alive json', 'CPU/request httpskit+log ÷ fastify+log'],
  ['JSON over plain HTTP, keep-alive | httpskit ÷ Fastify', 'http keep-alive json', 'CPU/request httpskit ÷ fastify'],
  ['JSON over HTTPS, keep-alive | httpskit ÷ bare `node:https`', 'https keep-alive json', 'CPU/request httpskit ÷ ceiling'],
  ['A new TLS connection per request | httpskit ÷ bare `node:https`', 'https new connection per request, json', 'CPU/request httpskit ÷ ceiling'],
];

for (const [what, benchmark, figure] of QUOTED) {
  test(`docs/benchmarks.md quotes the latest run: ${what}`, () => {
    const row = latest.table.find((r) => r.benchmark === benchmark && r.figure === figure);
    assert.ok(row, `${benchmark} / ${figure} is in bench/latest-results.json`);
    const quoted = `| ${what} | ${row.value} |`;
    assert.ok(page.includes(quoted), `the page has the row ${quoted}`);
  });
}

test('docs/benchmarks.md names the date of the run it quotes', () => {
  const date = latest.machine.date?.slice(0, 10);
  assert.ok(date !== undefined && /^\d{4}-\d\d-\d\d$/.test(date), 'bench/latest-results.json dates its run');
  assert.ok(page.includes(`run of ${date}`), `the page says "run of ${date}"`);
});
