// HTTP throughput sections: keep-alive (autocannon), HTTP/2 (h2load) and a new TLS connection per request.
// The figure that decides is the server's CPU time per request, each server in its own process,
// servers taking turns within a round (the starting one rotates), ratios taken round by round.
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import type { Child } from './children.js';
import type { LoadResult, LoadStep } from './load.js';
import { JSON_BODY, XML_BODY } from './servers/bodies.js';
import { median, range, rotate, sleep } from './stats.js';

/** Chrome's (and Edge's) navigation Accept header. */
export const CHROME_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

export interface Scenario {
  readonly name: string;
  readonly proto: 'https' | 'http';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly expectedBody: string;
  /**
   * Each a CPU-per-request ratio `ours / peer` with its target (at most), or undefined for
   * information only. With `share`, the figure is what `ours` adds to `peer` as a share of ours,
   * `(ours − peer) ÷ ours` (e.g. the access log's part of a logged request's CPU).
   */
  readonly comparisons: ReadonlyArray<readonly [ours: string, peer: string, target: number | undefined, kind?: 'ratio' | 'share']>;
  readonly servers: readonly string[];
  /** keepalive: HTTP/1.1, 10 connections (autocannon); h2: one HTTP/2 connection, 100 streams (h2load); newconn: a TLS connection per request. */
  readonly mode: Mode;
  /** Connections of a keepalive or newconn run, when not the run's own setting. */
  readonly connections?: number;
  /** keepalive only: a cycle of requests each connection sends instead of GET `path`, and the request that prepares every run (load.ts). */
  readonly requests?: readonly LoadStep[];
  readonly prepare?: readonly LoadStep[];
}

export type Mode = 'keepalive' | 'h2' | 'newconn';

/** Keep-alive connections of the saturation scenarios (issue 23 measured the log's share with 50). */
export const SATURATION_CONNECTIONS = 50;

/** Streams in flight on the one connection of the h2 scenario: the service's per-connection limit (H-1, L-1). */
export const H2_STREAMS = 100;

export interface RoundFigure {
  readonly server: string;
  readonly round: number;
  readonly cpuMicros: number;
  /** The kernel's part of cpuMicros. */
  readonly systemMicros: number;
  readonly ok: number;
  readonly failed: number;
  readonly rps: number;
  readonly cpuPerRequestMicros: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Highest resident set size seen during the run (sampled from /proc every 100 ms), KiB. */
  readonly peakRssKiB: number;
}

export interface ServerSummary {
  readonly cpuPerRequestMicros: number;
  /** The kernel's part of it (system time), µs per request. */
  readonly systemPerRequestMicros: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failed: number;
  readonly bodyMatches: boolean;
  /** Highest RSS seen during this scenario's rounds, MiB. */
  readonly peakRssMiB: number;
}

export interface Comparison {
  readonly ours: string;
  readonly peer: string;
  readonly kind: 'ratio' | 'share';
  /** Median of the per-round ratios of CPU per request (or of the shares, see Scenario). */
  readonly ratio: number;
  readonly min: number;
  readonly max: number;
  readonly perRound: readonly number[];
  readonly target: number | undefined;
  readonly met: boolean | undefined;
}

/** One server's figures summed over the slices of a round. */
interface SliceTotals {
  readonly cpuMicros: number;
  readonly systemMicros: number;
  readonly ok: number;
  readonly failed: number;
  readonly seconds: number;
  /** Each slice's percentile times its responses, summed: divided by `ok`, the weighted mean. */
  readonly p50Weighted: number;
  readonly p99Weighted: number;
  readonly peakRssKiB: number;
}

export interface ScenarioResult {
  readonly name: string;
  readonly proto: 'https' | 'http';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly mode: Mode;
  readonly servers: Readonly<Record<string, ServerSummary>>;
  readonly comparisons: readonly Comparison[];
  readonly rounds: readonly RoundFigure[];
}

export interface HttpRunOptions {
  readonly rounds: number;
  /** Load per server and round, split into `slices` runs in alternating order. */
  readonly seconds: number;
  readonly slices: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  readonly progress: (line: string) => void;
}

// ceiling+headers and pipeline are diagnostic steps from the ceiling to httpskit (bench/servers/).
const SERVERS_KEEPALIVE = ['ceiling', 'ceiling+headers', 'pipeline', 'httpskit', 'fastify', 'httpskit+log', 'fastify+log'] as const;

/** The four keep-alive scenarios of the issue, and the new-connection one. */
export function scenarios(): Scenario[] {
  const list: Scenario[] = [];
  for (const proto of ['https', 'http'] as const) {
    // Issue 23: at most 0.75 × Fastify doing the same job over HTTPS (and the CLI's log against
    // Fastify's default pino logger); plain HTTP keeps the earlier 0.8.
    const fastifyTarget = proto === 'https' ? 0.75 : 0.8;
    for (const [kind, path, headers, body, ceilingTarget] of [
      ['json', '/api/something.json?param1=hello', {}, JSON_BODY, 1.05],
      ['xml (Chrome Accept)', '/api/something?param1=hello', { accept: CHROME_ACCEPT }, XML_BODY, 1.1],
    ] as const) {
      list.push({
        name: `${proto} keep-alive ${kind}`,
        proto,
        path,
        headers,
        expectedBody: body,
        mode: 'keepalive',
        servers: SERVERS_KEEPALIVE,
        comparisons: [
          ['httpskit', 'ceiling', ceilingTarget],
          // Issue 23: against a bare handler sending the same headers, at most 1.10.
          ['httpskit', 'ceiling+headers', proto === 'https' ? 1.1 : undefined],
          ['httpskit', 'fastify', fastifyTarget],
          ['httpskit+log', 'fastify+log', fastifyTarget],
          ['httpskit+log', 'httpskit', undefined],
          ['fastify', 'ceiling', undefined],
          ['ceiling+headers', 'ceiling', undefined],
          ['pipeline', 'ceiling+headers', undefined],
          ['httpskit', 'pipeline', undefined],
        ],
      });
    }
  }
  // What the operator's switches cost (README "Logging", "Metrics"): the access log on, the same
  // sink turned off by --log-level off, and metrics on, each against httpskit with no logger.
  list.push({
    name: 'https keep-alive json, access log and metrics',
    proto: 'https',
    path: '/api/something.json?param1=hello',
    headers: {},
    expectedBody: JSON_BODY,
    mode: 'keepalive',
    servers: ['httpskit', 'httpskit+log-on', 'httpskit+log-off', 'httpskit+metrics'],
    comparisons: [
      // The access log at most 10% of a logged request's CPU, against the same service
      // and sink with the log switched off (what an operator's --log-level off saves). Both are
      // processes used in this scenario only: `httpskit+log` has served four scenarios before it
      // in a full run, and a better-warmed process looks cheaper (0.5 s of warm-up is not enough
      // to even that out: a process new to the round measured 1.2–3.6x a warm one of the same
      // code in the first run of these scenarios).
      ['httpskit+log-on', 'httpskit+log-off', 0.1, 'share'],
      ['httpskit+log-on', 'httpskit', undefined],
      ['httpskit+log-off', 'httpskit', undefined],
      ['httpskit+metrics', 'httpskit', undefined],
    ],
  });
  // Issue 23: the access log's share at saturation, 50 keep-alive connections with no pacing (the
  // logshare section paces at a few hundred requests a second; this is the other end): the same
  // service logging to stdout (/dev/null) against it with --log-level off, JSON and XML.
  for (const [kind, path, headers, body] of [
    ['json', '/api/something.json?param1=hello', {}, JSON_BODY],
    ['xml (Chrome Accept)', '/api/something?param1=hello', { accept: CHROME_ACCEPT }, XML_BODY],
  ] as const) {
    list.push({
      name: `https keep-alive ${kind}, saturation (50 connections), access log`,
      proto: 'https',
      path,
      headers,
      expectedBody: body,
      mode: 'keepalive',
      connections: SATURATION_CONNECTIONS,
      servers: ['httpskit+log-on', 'httpskit+log-off'],
      comparisons: [['httpskit+log-on', 'httpskit+log-off', 0.05, 'share']],
    });
  }
  // H-1: HTTP/2 on the HTTPS port. One connection with 100 streams in flight (h2load),
  // against Fastify's own http2 server doing the same job with the same headers.
  list.push({
    name: 'h2 json, one connection, 100 streams',
    proto: 'https',
    path: '/api/something.json?param1=hello',
    headers: {},
    expectedBody: JSON_BODY,
    mode: 'h2',
    servers: ['httpskit+h2', 'fastify+h2'],
    comparisons: [['httpskit+h2', 'fastify+h2', 0.9]],
  });
  // What serving HTTP/2 costs the HTTP/1.1 clients of the same port: node:http2's server with
  // allowHTTP1 (the default) against the node:https-only listener (http2: false).
  list.push({
    name: 'https keep-alive json, HTTP/1.1 on the HTTP/2 port',
    proto: 'https',
    path: '/api/something.json?param1=hello',
    headers: {},
    expectedBody: JSON_BODY,
    mode: 'keepalive',
    servers: ['httpskit+h2port', 'httpskit+h1only'],
    comparisons: [['httpskit+h2port', 'httpskit+h1only', 1.03]],
  });
  list.push({
    name: 'https new connection per request, json',
    proto: 'https',
    path: '/api/something.json?param1=hello',
    headers: {},
    expectedBody: JSON_BODY,
    mode: 'newconn',
    servers: ['ceiling', 'ceiling+headers', 'pipeline', 'httpskit'],
    // "We add nothing to the handshake": within measurement noise of the ceiling.
    comparisons: [
      ['httpskit', 'ceiling', 1.05],
      ['ceiling+headers', 'ceiling', undefined],
      ['pipeline', 'ceiling+headers', undefined],
      ['httpskit', 'pipeline', undefined],
    ],
  });
  return list;
}

/**
 * What a round measures: a server process on loopback whose CPU time can be read (a bench server's
 * own report over IPC, ServerChild, or /proc for any process, against.ts).
 */
export interface Measured {
  readonly name: string;
  readonly url: string;
  readonly httpUrl: string;
  readonly pid: number;
  usage(): Promise<{ readonly cpuMicros: number; readonly systemMicros: number }>;
}

/** The scenario's servers that are running (`--servers` may leave some out), in its order. */
function contendersOf(scenario: Scenario, servers: ReadonlyMap<string, Measured>): Measured[] {
  const contenders = scenario.servers.flatMap((name) => servers.get(name) ?? []);
  if (contenders.length === 0) throw new Error(`none of the servers of "${scenario.name}" is running`);
  return contenders;
}

const urlOf = (scenario: Scenario, server: Measured): string => `${scenario.proto === 'https' ? server.url : server.httpUrl}${scenario.path}`;

/** One GET per server: does each send the expected bytes? */
export async function checkBodies(scenario: Scenario, servers: ReadonlyMap<string, Measured>): Promise<Map<string, boolean>> {
  const matches = new Map<string, boolean>();
  for (const server of contendersOf(scenario, servers)) {
    const url = urlOf(scenario, server);
    const body = scenario.mode === 'h2' ? await fetchBodyH2(url, scenario.headers) : await fetchBody(url, scenario.headers);
    matches.set(server.name, body === scenario.expectedBody);
  }
  return matches;
}

/**
 * One round of a scenario, on server processes started for this round (run.ts starts a fresh set
 * every round: two processes of the same server differ by up to ±15% for their whole life, so
 * keeping one process per server for all rounds would put that difference into every ratio).
 * A warm-up run per server first (JIT, TLS session caches), not counted. Then every server gets
 * `seconds` of load in `slices` runs, the order reversed from one slice to the next (A B C, C B A,
 * …): a drift of the machine's speed during the round falls on every server alike.
 */
export async function runRound(scenario: Scenario, servers: ReadonlyMap<string, Measured>, load: Child, options: HttpRunOptions, round: number): Promise<RoundFigure[]> {
  const contenders = contendersOf(scenario, servers);
  const drive = (server: Measured, seconds: number): Promise<LoadResult> =>
    scenario.mode === 'keepalive'
      ? load.request<LoadResult>({
          kind: 'keepalive',
          url: urlOf(scenario, server),
          headers: scenario.headers,
          connections: scenario.connections ?? options.connections,
          seconds,
          ...(scenario.requests === undefined ? {} : { requests: scenario.requests }),
          ...(scenario.prepare === undefined ? {} : { prepare: scenario.prepare }),
        })
      : scenario.mode === 'h2'
        ? load.request<LoadResult>({ kind: 'h2', url: urlOf(scenario, server), headers: scenario.headers, streams: H2_STREAMS, seconds })
        : load.request<LoadResult>({ kind: 'newconn', url: urlOf(scenario, server), concurrency: scenario.connections ?? options.connections, seconds });
  for (const server of contenders) await drive(server, options.warmupSeconds);

  const slices = Math.max(1, options.slices);
  const totals = new Map<string, SliceTotals>();
  for (let slice = 0; slice < slices; slice++) {
    const order = rotate(contenders, round);
    if (slice % 2 === 1) order.reverse();
    for (const server of order) {
      await sleep(100); // let the previous run's sockets close
      const before = await server.usage();
      const watch = watchRss(server.pid);
      const result = await drive(server, options.seconds / slices);
      const peakRssKiB = watch.stop();
      const after = await server.usage();
      const total = totals.get(server.name) ?? { cpuMicros: 0, systemMicros: 0, ok: 0, failed: 0, seconds: 0, p50Weighted: 0, p99Weighted: 0, peakRssKiB: 0 };
      totals.set(server.name, {
        cpuMicros: total.cpuMicros + after.cpuMicros - before.cpuMicros,
        systemMicros: total.systemMicros + after.systemMicros - before.systemMicros,
        ok: total.ok + result.ok,
        failed: total.failed + result.failed,
        seconds: total.seconds + result.seconds,
        // A slice without a 2xx has no percentiles (NaN): it adds nothing to the weighted means.
        p50Weighted: total.p50Weighted + (result.ok > 0 ? result.p50Ms * result.ok : 0),
        p99Weighted: total.p99Weighted + (result.ok > 0 ? result.p99Ms * result.ok : 0),
        peakRssKiB: Math.max(total.peakRssKiB, peakRssKiB),
      });
    }
  }
  const figures = contenders.map((server): RoundFigure => {
    const t = totals.get(server.name) as SliceTotals;
    return {
      server: server.name,
      round,
      cpuMicros: t.cpuMicros,
      systemMicros: t.systemMicros,
      ok: t.ok,
      failed: t.failed,
      rps: t.ok / t.seconds,
      cpuPerRequestMicros: t.cpuMicros / t.ok,
      p50Ms: t.p50Weighted / t.ok,
      p99Ms: t.p99Weighted / t.ok,
      peakRssKiB: t.peakRssKiB,
    };
  });
  const line = figures.map((f) => `${f.server} ${f.cpuPerRequestMicros.toFixed(1)}µs (sys ${(f.systemMicros / f.ok).toFixed(1)})`).join('  ');
  options.progress(`  ${scenario.name} round ${round + 1}/${options.rounds}: ${line}`);
  return figures;
}

/** Medians per server and the per-round ratios of the scenario's comparisons (both servers needed). */
export function summarizeScenario(scenario: Scenario, running: ReadonlySet<string>, rounds: readonly RoundFigure[], bodyMatches: ReadonlyMap<string, boolean>): ScenarioResult {
  const summary: Record<string, ServerSummary> = {};
  for (const name of scenario.servers.filter((n) => running.has(n))) {
    const mine = rounds.filter((r) => r.server === name);
    summary[name] = {
      cpuPerRequestMicros: median(mine.map((r) => r.cpuPerRequestMicros)),
      systemPerRequestMicros: median(mine.map((r) => r.systemMicros / r.ok)),
      rps: median(mine.map((r) => r.rps)),
      p50Ms: median(mine.map((r) => r.p50Ms)),
      p99Ms: median(mine.map((r) => r.p99Ms)),
      failed: mine.reduce((sum, r) => sum + r.failed, 0),
      bodyMatches: bodyMatches.get(name) ?? false,
      peakRssMiB: Math.max(...mine.map((r) => r.peakRssKiB)) / 1024,
    };
  }
  const roundNumbers = [...new Set(rounds.map((r) => r.round))].sort((a, b) => a - b);
  const compared = scenario.comparisons.filter(([ours, peer]) => running.has(ours) && running.has(peer));
  const comparisons = compared.map(([ours, peer, target, kind = 'ratio']): Comparison => {
    const perRound: number[] = [];
    for (const round of roundNumbers) {
      const a = rounds.find((r) => r.round === round && r.server === ours);
      const b = rounds.find((r) => r.round === round && r.server === peer);
      if (a === undefined || b === undefined) continue;
      const ratio = a.cpuPerRequestMicros / b.cpuPerRequestMicros;
      perRound.push(kind === 'share' ? 1 - 1 / ratio : ratio);
    }
    const ratio = median(perRound);
    const [min, max] = range(perRound);
    return { ours, peer, kind, ratio, min, max, perRound, target, met: target === undefined ? undefined : ratio <= target };
  });
  return { name: scenario.name, proto: scenario.proto, path: scenario.path, headers: scenario.headers, mode: scenario.mode, servers: summary, comparisons, rounds };
}

/** Samples a process's resident set size (VmRSS) from outside it, so the server does no extra work. */
function watchRss(pid: number): { stop(): number } {
  let peak = 0;
  const sample = (): void => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
      if (m !== null) peak = Math.max(peak, Number(m[1]));
    } catch {
      // the process is gone; keep what was seen
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** One GET from this process, to check every server sends the expected bytes. */
export function fetchBody(url: string, headers: Readonly<Record<string, string>>): Promise<string> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, rejectUnauthorized: false, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** One GET over HTTP/2 (ALPN h2), to check the h2 scenario's servers send the expected bytes. */
function fetchBodyH2(url: string, headers: Readonly<Record<string, string>>): Promise<string> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const session = http2Connect(target.origin, { rejectUnauthorized: false });
    session.on('error', reject);
    const stream = session.request({ ':path': `${target.pathname}${target.search}`, ...headers });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      session.close();
      resolve(body);
    });
    stream.end();
  });
}
