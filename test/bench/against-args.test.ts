// `npm run bench` (issue 23): arguments it cannot take are refused at once, with a
// message that says why and exit code 2, before anything is built or started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

function bench(...args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

for (const [args, message] of [
  [['--against', 'no-such-ref-23'], /"no-such-ref-23" is not a commit, tag or branch/],
  // Never read as an option of git.
  [['--against=--all'], /"--all" is not a commit, tag or branch/],
  [['--against'], /argument missing/],
  [['--against', 'HEAD', '--rounds', '0'], /--rounds must be a whole number above 0/],
  [['--against', 'HEAD', '--seconds', 'abc'], /--seconds must be a number above 0/],
  [['--against', 'HEAD', '--only', 'h3 yaml'], /matches no scenario; known: h1 json log-on/],
  // The file store's scenarios (issue 20) are among the known ones.
  [['--against', 'HEAD', '--only', 'users yaml'], /matches no scenario; known: .*h1 users get log-on; h1 users put log-on/],
  [['--against', 'HEAD', '--no-such-flag'], /Unknown option '--no-such-flag'/],
  [['--against', 'HEAD', '--instructions', '--cpu-prof'], /--instructions and --cpu-prof cannot be used together/],
  [['--against', 'HEAD', '--instructions', '--requests', '0'], /--requests must be a whole number above 0/],
  [['--against', 'HEAD', '--instructions', '--warmup', '1.5'], /--warmup must be a whole number above 0/],
  [['--against', 'HEAD', '--instructions', '--only', 'users'], /--instructions does not count the file store's scenarios/],
  [['--against', 'HEAD', '--instructions', '--only', 'h3 yaml'], /--only "h3 yaml" matches no scenario; known: h1 json log-on/],
  [['--against', 'HEAD', '--instructions', '--peers', 'express'], /--peers: "express" is not a peer; known: ceiling\+headers, ceiling\+modules, fastify/],
] as const) {
  test(`bench --against ${args.join(' ')}: exit 2, ${String(message)}`, () => {
    const r = bench(...args);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^bench --against: /);
    assert.match(r.stderr, message);
    // Refused before the build: nothing was compiled.
    assert.doesNotMatch(r.stdout, /building/);
  });
}

test('bench --against: a scenario one side never answered (a ref from before its route) is "not compared", never "met"', async () => {
  const { markdownAgainst } = await import('../../bench/against.js');
  const ratio = (perRound: number[]) => ({ median: perRound[0] ?? Number.NaN, min: Math.min(...perRound), max: Math.max(...perRound), perRound });
  const row = (scenario: string, cpu: number[], met: boolean) => ({
    scenario,
    cpu: ratio(cpu),
    rps: ratio(cpu),
    p99: ratio(cpu),
    rss: ratio([1]),
    headCpuMicros: 40,
    refCpuMicros: cpu[0] === 0 ? Infinity : 40,
    headRps: 1,
    refRps: 1,
    bodiesMatch: true,
    failed: 0,
    met,
  });
  const table = markdownAgainst([row('h1 users get log-on', [0, 0], false), row('h1 json log-on', [0.9, 0.92], true), row('h1 xml log-on', [1.01, 1.02], false)], 'HEAD', 'REF');
  assert.match(table, /\| h1 users get log-on \|.*\| not compared \|/);
  assert.match(table, /\| h1 json log-on \|.*\| met \|/);
  assert.match(table, /\| h1 xml log-on \|.*\| missed \|/);
});

test('bench --against --instructions: the log\'s share is given for log-on rows; each peer is compared in its own log mode (Fastify with pino against the CLI\'s log), against its own target', async () => {
  const { markdownCounts } = await import('../../bench/against.js');
  const row = (scenario: string, main: Record<string, number>, headPeers: Record<string, number>, logShare?: number) => ({ scenario, main, compiles: { 'HEAD log-on': 1_234 }, others: {}, failed: 0, headRef: 0.9, headPeers, logShare });
  const table = markdownCounts(
    [
      row('h1 json log-on', { 'HEAD log-on': 105_000, 'REF log-on': 120_000, 'fastify+log': 150_000 }, { 'fastify+log': 0.7 }, 0.046),
      row('h1 json log-off', { 'HEAD log-off': 100_000, 'REF log-off': 101_000, 'ceiling+headers': 85_000, fastify: 125_000 }, { 'ceiling+headers': 100 / 85, fastify: 0.8 }),
    ],
    'abc',
    'def',
    ['ceiling+headers', 'fastify'],
  );
  const lines = table.split('\n');
  assert.match(lines[0] ?? '', /\| the log's share \(≤ 5%\) \| ceiling\+headers \| HEAD ÷ ceiling\+headers \(≤ 1\.1, log-off\) \| fastify \| HEAD ÷ fastify \(≤ 0\.75\) \|/);
  assert.match(lines[0] ?? '', /\| compiles left out HEAD \/ REF \| other threads HEAD \/ REF \|$/);
  assert.match(lines[2] ?? '', /^\| h1 json log-on \| 105\.0k \| 120\.0k \| 0\.900 met \| 4\.6% met \| – \| – \| 150\.0k \(fastify\+log\) \| 0\.700 met \| 1\.2k \/ – \| – \/ – \|$/);
  assert.match(lines[3] ?? '', /^\| h1 json log-off \| 100\.0k \| 101\.0k \| 0\.900 met \| – \| 85\.0k \| 1\.176 missed \| 125\.0k \| 0\.800 missed \|/);
  // Without peers, none of their columns.
  assert.doesNotMatch(markdownCounts([], 'abc', 'def', []), /fastify|ceiling/);
});

test('bench --against --instructions: ceiling+modules is given with its ratio and no verdict (it has no target of its own)', async () => {
  const { markdownCounts } = await import('../../bench/against.js');
  const row = { scenario: 'h1 json log-off', main: { 'HEAD log-off': 94_000, 'REF log-off': 100_000, 'ceiling+headers': 85_500, 'ceiling+modules': 87_000 }, compiles: {}, others: {}, failed: 0, headRef: 0.94, headPeers: { 'ceiling+headers': 94 / 85.5, 'ceiling+modules': 94 / 87 }, logShare: undefined };
  const lines = markdownCounts([row], 'abc', 'def', ['ceiling+headers', 'ceiling+modules']).split('\n');
  assert.match(lines[0] ?? '', /\| ceiling\+headers \| HEAD ÷ ceiling\+headers \(≤ 1\.1, log-off\) \| ceiling\+modules \| HEAD ÷ ceiling\+modules \(no target, log-off\) \|/);
  assert.match(lines[2] ?? '', /\| 85\.5k \| 1\.099 met \| 87\.0k \| 1\.080 \|/);
});

test('bench --against --only: "h1" picks the HTTP/1.1 JSON and XML scenarios, not the file store\'s, which only "users" names', async () => {
  const { againstScenarios } = await import('../../bench/against.js');
  const names = (only: string[]): string[] => againstScenarios({ only }).map((s) => s.name);
  assert.deepEqual(names(['h1']), ['h1 json log-on', 'h1 xml log-on', 'h1 json log-off', 'h1 xml log-off']);
  assert.deepEqual(names([]).filter((n) => n.includes('users')), []);
  assert.deepEqual(names(['users']), ['h1 users get log-on', 'h1 users put log-on', 'h1 users get log-off', 'h1 users put log-off']);
  assert.deepEqual(names(['h1 users get']), ['h1 users get log-on', 'h1 users get log-off']);
  assert.deepEqual(names(['h2 json', 'users put log-off']), ['h2 json log-on', 'h2 json log-off', 'h1 users put log-off']);
});

test('bench --help prints the usage (exit 0); an option it does not know is one line and the usage (exit 2), not a stack trace', () => {
  const help = bench('--help');
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^ {2}npm run bench \[-- --quick\]/);
  assert.match(help.stdout, /npm run bench -- --against REF/);
  const unknown = bench('--no-such-flag');
  assert.equal(unknown.status, 2, unknown.stderr);
  assert.match(unknown.stderr, /^bench: Unknown option '--no-such-flag'.*\n {2}npm run bench/);
  assert.doesNotMatch(unknown.stderr, /at parseArgs|node:internal/);
  assert.doesNotMatch(unknown.stdout, /building/);
});
