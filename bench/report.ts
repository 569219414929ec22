// Turns the results into the ratio table (Markdown, printed and pasted into bench/README.md).
import type { ScenarioResult } from './http.js';
import type { LogShareResult } from './logshare.js';
import type { LibraryResult } from './library.js';
import type { SoakResult } from './soak.js';
import type { NegotiationRow } from './negotiation.js';
import type { PasswordResult } from './password.js';
import { f, spread } from './format.js';
import { postgresRows } from './postgres-report.js';
import type { PostgresResult } from './postgres.js';
import type { UsersResult } from './users.js';
import type { XmlRow } from './xml.js';

/** A hashing worker thread's own memory (its V8 isolate), measured: 6–8 MiB. */
const HASH_THREAD_MIB = 8;

export interface StoreRow {
  readonly users: number;
  readonly loadMs: number;
  readonly medianMs: number;
  readonly p90Ms: number;
  readonly meanMs: number;
}

export interface MemoryRow {
  readonly server: string;
  /** Highest RSS sampled during the keep-alive runs. */
  readonly peakRssMiB: number;
  /** getrusage's peak over the whole process life, start-up included. */
  readonly lifetimePeakRssMiB: number;
}

export interface Results {
  readonly machine: Readonly<Record<string, unknown>>;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly http: readonly ScenarioResult[];
  readonly memory: readonly MemoryRow[];
  readonly negotiation: readonly NegotiationRow[] | undefined;
  readonly xml: readonly XmlRow[] | undefined;
  readonly password: readonly { readonly label: string; readonly result: PasswordResult }[];
  readonly store: readonly StoreRow[] | undefined;
  readonly postgres?: PostgresResult | undefined;
  readonly users?: UsersResult | undefined;
  readonly logshare?: LogShareResult | undefined;
  readonly library?: LibraryResult | undefined;
  readonly soak?: SoakResult | undefined;
}

/** One line of the ratio table. `met` is undefined for figures shown for information. */
export interface TableRow {
  readonly benchmark: string;
  readonly figure: string;
  readonly value: string;
  readonly target: string;
  readonly met: boolean | undefined;
}

const mark = (met: boolean | undefined): string => (met === undefined ? '' : met ? 'yes' : '**no**');

export function tableRows(results: Results): TableRow[] {
  const rows: TableRow[] = [];
  for (const scenario of results.http) {
    for (const c of scenario.comparisons) {
      const pct = (n: number): string => `${f(n * 100, 1)}%`;
      rows.push(
        c.kind === 'share'
          ? {
              benchmark: scenario.name,
              figure: `share of ${c.ours}'s CPU/request: (${c.ours} − ${c.peer}) ÷ ${c.ours}`,
              value: `${pct(c.ratio)} (${pct(c.min)}–${pct(c.max)})`,
              target: c.target === undefined ? '' : `≤ ${pct(c.target)}`,
              met: c.met,
            }
          : {
              benchmark: scenario.name,
              figure: `CPU/request ${c.ours} ÷ ${c.peer}`,
              value: `${f(c.ratio, 3)} (${f(c.min)}–${f(c.max)})`,
              target: c.target === undefined ? '' : `≤ ${c.target.toFixed(2)}`,
              met: c.met,
            },
      );
    }
  }
  for (const m of results.memory) {
    rows.push({
      benchmark: 'memory, keep-alive runs',
      figure: `peak RSS ${m.server} (lifetime peak, start-up included)`,
      value: `${f(m.peakRssMiB, 1)} MiB (${f(m.lifetimePeakRssMiB, 1)})`,
      target: m.server.startsWith('httpskit') ? '< 100 MiB' : '',
      met: m.server.startsWith('httpskit') ? m.peakRssMiB < 100 : undefined,
    });
  }
  for (const n of results.negotiation ?? []) {
    rows.push({
      benchmark: `negotiation: ${n.client}`,
      figure: 'ns/call ours (cache, fresh strings) ÷ negotiator',
      value: `${f(n.cachedRatio, 3)} (uncached ${f(n.uncachedRatio, 3)})`,
      target: '≤ 0.25',
      met: n.cachedRatio <= 0.25 && n.uncachedRatio <= 0.25,
    });
  }
  for (const x of results.xml ?? []) {
    rows.push({ benchmark: `XML: ${x.document}`, figure: 'time toXml ÷ JSON.stringify', value: f(x.oursOverJson), target: '≤ 2.5', met: x.oursOverJson <= 2.5 });
    rows.push({ benchmark: `XML: ${x.document}`, figure: 'time fast-xml-parser ÷ toXml', value: f(x.fxpOverOurs, 1), target: '≥ 3', met: x.fxpOverOurs >= 3 });
    rows.push({ benchmark: `XML: ${x.document}`, figure: 'time xmlbuilder2 ÷ toXml', value: f(x.xmlbuilder2OverOurs, 1), target: '', met: undefined });
  }
  for (const { label, result: p } of results.password) {
    rows.push({ benchmark: `password (${label})`, figure: 'one change (verify + hash + store write)', value: `${f(p.changeMedianMs, 0)} ms`, target: '', met: undefined });
    rows.push({
      benchmark: `password (${label})`,
      figure: `GET p99 during ${p.concurrentChanges} changes ÷ idle`,
      value: `${f(p.getP99Ratio)} (${f(p.busy.getP99Ms)} / ${f(p.idle.getP99Ms)} ms; rounds ${p.getP99Ratios.map((r) => f(r)).join(', ')})`,
      target: '≤ 1.5',
      met: p.getP99Ratio <= 1.5,
    });
    rows.push({
      benchmark: `password (${label})`,
      figure: 'event-loop delay p99 busy / idle',
      value: `${f(p.busy.eventLoop.p99Ms)} / ${f(p.idle.eventLoop.p99Ms)} ms`,
      target: '',
      met: undefined,
    });
    const used = p.peakRssMiB - p.rssBeforeMiB;
    rows.push({
      benchmark: `password (${label})`,
      figure: `peak RSS (${p.hashesAtOnce} hash${p.hashesAtOnce === 1 ? '' : 'es'} running at once at most)`,
      value: `${f(p.peakRssMiB, 0)} MiB = ${f(p.rssBeforeMiB, 0)} + ${f(used, 0)}`,
      // Each hash in flight: scrypt's 128 MiB, and (on Linux) the worker thread it runs on (lib/users/scrypt-pool.ts).
      target: `+ ≤ ${p.hashesAtOnce} × (128 + ${HASH_THREAD_MIB}) MiB + 16 MiB`,
      met: used <= p.hashesAtOnce * (128 + HASH_THREAD_MIB) + 16,
    });
  }
  const store = results.store ?? [];
  const small = store[0];
  const large = store.at(-1);
  if (small !== undefined && large !== undefined) {
    for (const row of store) {
      rows.push({ benchmark: `store, ${row.users.toLocaleString('en')} users`, figure: 'one change: store write median (p90)', value: `${f(row.medianMs)} ms (${f(row.p90Ms)})`, target: '', met: undefined });
    }
    const ratio = large.medianMs / small.medianMs;
    rows.push({ benchmark: 'store growth', figure: `write at ${large.users.toLocaleString('en')} ÷ at ${small.users}`, value: f(ratio), target: '≤ 2', met: ratio <= 2 });
    rows.push({ benchmark: 'store growth', figure: `load ${large.users.toLocaleString('en')} users at start-up`, value: `${f(large.loadMs, 0)} ms`, target: '< 1000 ms', met: large.loadMs < 1000 });
  }
  if (results.users !== undefined) rows.push(...usersRows(results.users));
  if (results.logshare !== undefined) rows.push(...logShareRows(results.logshare));
  for (const r of results.library?.ratios ?? []) {
    rows.push({ benchmark: 'library (issue 21)', figure: `${r.name}, CPU/request`, value: spread(r), target: r.target === undefined ? '' : `≤ ${r.target}`, met: r.target === undefined ? undefined : r.met });
  }
  if (results.postgres !== undefined) rows.push(...postgresRows(results.postgres));
  const soak = results.soak;
  if (soak !== undefined) {
    const benchmark = `soak (${soak.connections} connections, ${soak.seconds} s, mixed, log on${soak.nodeFlags.length === 0 ? '' : `, node ${soak.nodeFlags.join(' ')}`})`;
    rows.push({ benchmark, figure: 'peak RSS', value: `${f(soak.peakRssMiB, 1)} MiB`, target: `≤ ${soak.peakTarget} MiB`, met: soak.peakRssMiB <= soak.peakTarget });
    rows.push({ benchmark, figure: 'RSS slope over the second half', value: `${f(soak.slopeMiBPerMinute, 2)} MiB/min`, target: `≤ ${soak.slopeTarget} MiB/min`, met: soak.slopeMiBPerMinute <= soak.slopeTarget });
  }
  return rows;
}

function usersRows(u: UsersResult): TableRow[] {
  const benchmark = 'GET /user/{name}.json (Basic, scrypt ln=1)';
  const pages = `GET /user/?limit=1000, ${u.paging.users.toLocaleString('en')} users`;
  return [
    { benchmark, figure: 'CPU/request ÷ /api/something.json, as measured', value: spread(u.ratio), target: '', met: undefined },
    { benchmark, figure: 'the same without the one verification (scrypt)', value: spread(u.ratioWithoutVerification), target: '', met: undefined },
    ...(u.ratioWithoutAuthentication === undefined
      ? []
      : [{ benchmark, figure: 'the same without the authentication (negotiation, view, serialization, headers)', value: spread(u.ratioWithoutAuthentication), target: '≤ 1.10', met: u.ratioWithoutAuthentication.median <= 1.1 }]),
    { benchmark: pages, figure: 'median (worst) ms', value: `${f(u.paging.medianMs, 1)} (${f(u.paging.worstMs, 1)})`, target: '< 50 ms', met: u.paging.medianMs < 50 },
    { benchmark: pages, figure: 'server RSS before → after 50 pages, MiB', value: `${f(u.paging.rssBeforeMiB, 0)} → ${f(u.paging.rssAfterMiB, 0)}`, target: '', met: undefined },
  ];
}

function logShareRows(l: LogShareResult): TableRow[] {
  const pct = (n: number): string => `${f(n * 100, 1)}%`;
  const benchmark = `access log${l.aa ? ', A/A check (both servers log)' : ''}, side by side (${l.rate} req/s each, ${l.share.counted} rounds${l.share.void > 0 ? `, ${l.share.void} void` : ''}, load ${l.loadAverageAtStart.join(' ')})`;
  return [
    {
      benchmark,
      figure: 'share of a logged request\'s CPU: (log-on − log-off) ÷ log-on',
      value: `${pct(l.share.median)} (${pct(l.share.min)}–${pct(l.share.max)})`,
      // The A/A check measures the method (its share should be near 0), not the log.
      target: l.aa ? '' : '≤ 10.0%',
      met: l.aa ? undefined : l.share.median <= 0.1,
    },
    { benchmark, figure: 'CPU µs/request log-on / log-off', value: `${f(l.onMicros, 1)} / ${f(l.offMicros, 1)}`, target: '', met: undefined },
    {
      benchmark: 'access log, its code alone',
      figure: `CPU µs per line (${l.micro.linesPerWrite} lines per write), and ÷ log-on's request`,
      value: `${f(l.micro.microsPerLine)} (${f(l.micro.min)}–${f(l.micro.max)}), ${pct(l.micro.shareOfOnRequest)}`,
      target: '',
      met: undefined,
    },
  ];
}

export function markdownTable(rows: readonly TableRow[]): string {
  const lines = ['| Benchmark | Figure | Result | Target | Met |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.benchmark} | ${r.figure} | ${r.value} | ${r.target} | ${mark(r.met)} |`);
  return lines.join('\n');
}

/** Per-server figures of each HTTP scenario (medians over rounds). */
export function markdownServers(http: readonly ScenarioResult[]): string {
  const lines = ['| Scenario | Server | CPU µs/request | of which kernel | req/s | p50 ms | p99 ms | peak RSS MiB | failed | same bytes |', '|---|---|---|---|---|---|---|---|---|---|'];
  for (const s of http) {
    for (const [name, v] of Object.entries(s.servers)) {
      lines.push(`| ${s.name} | ${name} | ${f(v.cpuPerRequestMicros, 1)} | ${f(v.systemPerRequestMicros, 1)} | ${f(v.rps, 0)} | ${f(v.p50Ms)} | ${f(v.p99Ms)} | ${f(v.peakRssMiB, 1)} | ${v.failed} | ${v.bodyMatches ? 'yes' : '**no**'} |`);
    }
  }
  return lines.join('\n');
}

export function markdownNegotiation(rows: readonly NegotiationRow[]): string {
  const lines = ['| Client | ours, cached ns | ours, uncached ns | negotiator ns | same answer |', '|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(`| ${r.client} | ${f(r.cachedNs, 0)} | ${f(r.uncachedNs, 0)} | ${f(r.negotiatorNs, 0)} | ${r.sameAnswer ? `yes (${r.oursAnswer ?? '406'})` : `no: ours ${r.oursAnswer ?? '406'}, negotiator ${r.negotiatorAnswer ?? '406'}`} |`);
  }
  return lines.join('\n');
}

export function markdownXml(rows: readonly XmlRow[]): string {
  const lines = ['| Document | toXml ns | JSON.stringify ns | xmlbuilder2 ns | fast-xml-parser ns | same document |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(
      `| ${r.document} (${r.bytes} B) | ${f(r.ns.httpskit, 0)} | ${f(r.ns['JSON.stringify'], 0)} | ${f(r.ns.xmlbuilder2, 0)} | ${f(r.ns['fast-xml-parser'], 0)} | ${Object.entries(r.sameDocument).map(([k, v]) => `${k}: ${v ? 'yes' : 'no'}`).join(', ')} |`,
    );
  }
  return lines.join('\n');
}
