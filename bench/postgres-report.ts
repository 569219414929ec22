// The postgres section's rows of the ratio table.
import type { HashThreadTimes } from './postgres-password.js';
import type { PostgresResult, Ratio } from './postgres.js';
import type { TableRow } from './report.js';
import { median } from './stats.js';
import { f, spread } from './format.js';
const threads = (t: HashThreadTimes): string => `${f(t.running, 0)} + ${f(t.waiting, 0)} + ${f(t.idleSlots, 0)}`;
const pct = (r: Ratio): string => `${f(r.median * 100, 2)}% (${f(r.min * 100)}–${f(r.max * 100)}%)`;

export function postgresRows(p: PostgresResult): TableRow[] {
  const { password, ledger, proxy } = p;
  const within5 = (r: Ratio): boolean => Math.abs(r.median - 1) <= 0.05;
  const change = 'postgres: password change (HTTPS PUT, scrypt N=2^17)';
  const c = password.perChangeMs;
  const viaProxy = 'postgres: GET /api/something via proxy';
  const us = (label: keyof typeof proxy.cpuMicrosPerRequest): string => f(median(proxy.cpuMicrosPerRequest[label]), 0);
  return [
    {
      benchmark: change,
      figure: `changes/s PostgreSQL ÷ file, both at once (${password.togetherSeconds} s window a round, hashing work done ÷ CPU per change; file ${f(median(password.togetherFileChangesPerSecond))}/s; completions counted: ${spread(password.togetherCounted)})`,
      value: spread(password.together),
      target: '1 ± 0.05',
      met: within5(password.together),
    },
    {
      benchmark: change,
      figure: `both at once: CPU their hashing threads got, PostgreSQL ÷ file (hash slots asleep: file ${pct(password.togetherIdleSlots.file)}, PostgreSQL ${pct(password.togetherIdleSlots.postgres)})`,
      value: spread(password.sideBySide),
      target: '',
      met: undefined,
    },
    {
      benchmark: change,
      figure: `changes/s PostgreSQL ÷ file, alone in turns (file ${f(median(password.fileChangesPerSecond))}/s, ${password.changesPerRound} changes per server and round; follows the CPU other jobs leave each turn; hashing threads pinned one per CPU ${spread(password.ratioPinnedTurns)}, unpinned ${spread(password.ratioUnpinnedTurns)})`,
      value: spread(password.ratio),
      target: '',
      met: undefined,
    },
    {
      benchmark: change,
      figure: `in turns, hashing threads ms/change running + waiting for a CPU + idle slots: file ${threads(password.hashThreads.file)}; PostgreSQL ${threads(password.hashThreads.postgres)}`,
      value: `gate below its slots in ${f(password.hashThreads.file.gateBelowSlots * 100, 1)}% / ${f(password.hashThreads.postgres.gateBelowSlots * 100, 1)}% of samples`,
      target: '',
      met: undefined,
    },
    {
      benchmark: change,
      figure: 'CPU/change the database adds: event-loop difference + PostgreSQL processes, ÷ file server CPU/change',
      value: pct(password.databaseShare),
      target: '',
      met: undefined,
    },
    {
      benchmark: change,
      figure:
        `CPU ms/change: file event loop ${f(c.file.eventLoop, 1)} + other threads ${f(c.file.otherThreads, 0)}; ` +
        `PostgreSQL event loop ${f(c.postgres.eventLoop, 1)} + other threads ${f(c.postgres.otherThreads, 0)} + database processes ${f(c.postgres.database, 1)} (of which after-work in the file slices ${f(c.databaseDuringFile, 1)})`,
      value: `${spread(password.cpuRatio)} (all CPU, PostgreSQL ÷ file)`,
      target: '',
      met: undefined,
    },
    { benchmark: 'postgres: ledgers, one client', figure: 'throttle reserve + settle, median ms', value: spread(ledger.reserveSettleMedianMs, 2), target: '< 2 ms', met: ledger.reserveSettleMedianMs.median < 2 },
    { benchmark: 'postgres: ledgers, one client', figure: 'throttle reserve + settle, p99 ms', value: spread(ledger.reserveSettleP99Ms, 2), target: '', met: undefined },
    { benchmark: 'postgres: ledgers, one client', figure: 'Digest nonce claim, median (p99) ms', value: `${f(ledger.nonceClaimMedianMs.median)} (${f(ledger.nonceClaimP99Ms.median)})`, target: '', met: undefined },
    {
      benchmark: 'postgres: authenticated GET, scrypt ln=1',
      figure: `added median ms, PostgreSQL − file (file ${f(ledger.authFileMedianMs.median)} ms)`,
      value: spread(ledger.authAddedMedianMs, 2),
      target: '< 2 ms',
      met: ledger.authAddedMedianMs.median < 2,
    },
    { benchmark: 'postgres: authenticated GET, scrypt ln=1', figure: 'added p99 ms, PostgreSQL − file', value: spread(ledger.authAddedP99Ms, 2), target: '', met: undefined },
    {
      benchmark: viaProxy,
      figure: `instance CPU/request, 3 instances at ${proxy.ratePerInstance * 3}/s ÷ 1 at ${proxy.ratePerInstance}/s, both at once, the single instance rotating (1: ${f(median(proxy.rotating.postgres.one), 0)} µs; ${proxy.rotating.postgres.ratio.rounds.length} rounds counted)`,
      value: spread(proxy.rotating.postgres.ratio),
      target: '1 ± 0.05',
      met: within5(proxy.rotating.postgres.ratio) && proxy.failed === 0 && proxy.rotating.postgres.ratio.rounds.length > 0,
    },
    { benchmark: viaProxy, figure: 'the same with file-store instances (no database)', value: spread(proxy.rotating.file.ratio), target: '', met: undefined },
    {
      benchmark: viaProxy,
      figure: `one setup at a time: 3 at ${proxy.ratePerInstance * 3}/s ÷ 1 at ${proxy.ratePerInstance}/s (1: ${us('one, paced')} µs; ${proxy.ratioPaced.rounds.length} rounds counted${proxy.shortRuns > 0 ? `, ${proxy.shortRuns} paced runs fell short` : ''})`,
      value: spread(proxy.ratioPaced),
      target: '',
      met: undefined,
    },
    {
      benchmark: viaProxy,
      figure: `the single instance at ${proxy.ratePerInstance}/s: CPU/request with the three idle ÷ beside them (PostgreSQL; file store ${spread(proxy.coreShared.file)})`,
      value: spread(proxy.coreShared.postgres),
      target: '',
      met: undefined,
    },
    { benchmark: viaProxy, figure: `one setup at a time, file-store instances: 3 at ${proxy.ratePerInstance * 3}/s ÷ 1 at ${proxy.ratePerInstance}/s (no database)`, value: spread(proxy.ratioPacedFiles), target: '', met: undefined },
    { benchmark: viaProxy, figure: `1 instance at ${proxy.ratePerInstance}/s, PostgreSQL store ÷ file store`, value: spread(proxy.ratioPacedPostgresOverFile), target: '', met: undefined },
    {
      benchmark: viaProxy,
      figure: `equal total load: 3 instances ÷ 1 on ${proxy.connections} connections (1: ${us('one, N connections')} µs, ${f(median(proxy.requestsPerSecond['one, N connections']), 0)} req/s)`,
      value: spread(proxy.ratioEqualTotal),
      target: '',
      met: undefined,
    },
    { benchmark: viaProxy, figure: `equal total load: 3 instances ÷ 1 on ${proxy.fewerConnections} connections (each instance's share)`, value: spread(proxy.ratioEqualTotalFewer), target: '', met: undefined },
  ];
}
