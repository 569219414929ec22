// HTTP throughput sections: keep-alive (autocannon) and a new TLS connection per request.
// The figure that decides is the server's CPU time per request, each server in its own process,
// servers taking turns within a round (the starting one rotates), ratios taken round by round.
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { Child, ServerChild } from './children.js';
import type { LoadResult } from './load.js';
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
  /** Each a CPU-per-request ratio `ours / peer` with its target (at most), or undefined for information only. */
  readonly comparisons: ReadonlyArray<readonly [ours: string, peer: string, target: number | undefined]>;
  readonly servers: readonly string[];
  readonly mode: 'keepalive' | 'newconn';
}

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
  /** Median of the per-round ratios of CPU per request. */
  readonly ratio: number;
  readonly min: number;
  readonly max: number;
  readonly perRound: readonly number[];
  readonly target: number | undefined;
  readonly met: boolean | undefined;
}

export interface ScenarioResult {
  readonly name: string;
  readonly proto: 'https' | 'http';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly mode: 'keepalive' | 'newconn';
  readonly servers: Readonly<Record<string, ServerSummary>>;
  readonly comparisons: readonly Comparison[];
  readonly rounds: readonly RoundFigure[];
}

export interface HttpRunOptions {
  readonly rounds: number;
  readonly seconds: number;
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
    const fastifyTarget = proto === 'https' ? 0.9 : 0.8;
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
 * Runs one scenario against those of its servers that `servers` holds (`--servers` may leave some
 * out); comparisons need both of their servers.
 */
export async function runScenario(scenario: Scenario, servers: ReadonlyMap<string, ServerChild>, load: Child, options: HttpRunOptions): Promise<ScenarioResult> {
  const contenders = scenario.servers.flatMap((name) => servers.get(name) ?? []);
  if (contenders.length === 0) throw new Error(`none of the servers of "${scenario.name}" is running`);
  const urlOf = (server: ServerChild): string => `${scenario.proto === 'https' ? server.url : server.httpUrl}${scenario.path}`;
  const bodyMatches = new Map<string, boolean>();
  for (const server of contenders) bodyMatches.set(server.name, (await fetchBody(urlOf(server), scenario.headers)) === scenario.expectedBody);

  const drive = (server: ServerChild, seconds: number): Promise<LoadResult> =>
    scenario.mode === 'keepalive'
      ? load.request<LoadResult>({ kind: 'keepalive', url: urlOf(server), headers: scenario.headers, connections: options.connections, seconds })
      : load.request<LoadResult>({ kind: 'newconn', url: urlOf(server), concurrency: options.connections, seconds });

  // Warm-up: JIT, TLS session caches, pools. Not counted.
  for (const server of contenders) await drive(server, options.warmupSeconds);

  const rounds: RoundFigure[] = [];
  for (let round = 0; round < options.rounds; round++) {
    for (const server of rotate(contenders, round)) {
      await sleep(100); // let the previous run's sockets close
      const before = await server.usage();
      const watch = watchRss(server.pid);
      const result = await drive(server, options.seconds);
      const peakRssKiB = watch.stop();
      const after = await server.usage();
      const cpuMicros = after.cpuMicros - before.cpuMicros;
      rounds.push({
        server: server.name,
        round,
        cpuMicros,
        systemMicros: after.systemMicros - before.systemMicros,
        ok: result.ok,
        failed: result.failed,
        rps: result.ok / result.seconds,
        cpuPerRequestMicros: cpuMicros / result.ok,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        peakRssKiB,
      });
    }
    const line = contenders
      .map((s) => {
        const r = rounds.find((x) => x.round === round && x.server === s.name);
        return `${s.name} ${r?.cpuPerRequestMicros.toFixed(1)}µs (sys ${((r?.systemMicros ?? 0) / (r?.ok ?? 1)).toFixed(1)})`;
      })
      .join('  ');
    options.progress(`  ${scenario.name} round ${round + 1}/${options.rounds}: ${line}`);
  }

  const summary: Record<string, ServerSummary> = {};
  for (const server of contenders) {
    const mine = rounds.filter((r) => r.server === server.name);
    summary[server.name] = {
      cpuPerRequestMicros: median(mine.map((r) => r.cpuPerRequestMicros)),
      systemPerRequestMicros: median(mine.map((r) => r.systemMicros / r.ok)),
      rps: median(mine.map((r) => r.rps)),
      p50Ms: median(mine.map((r) => r.p50Ms)),
      p99Ms: median(mine.map((r) => r.p99Ms)),
      failed: mine.reduce((sum, r) => sum + r.failed, 0),
      bodyMatches: bodyMatches.get(server.name) ?? false,
      peakRssMiB: Math.max(...mine.map((r) => r.peakRssKiB)) / 1024,
    };
  }
  const running = (name: string): boolean => servers.has(name);
  const compared = scenario.comparisons.filter(([ours, peer]) => running(ours) && running(peer));
  const comparisons = compared.map(([ours, peer, target]): Comparison => {
    const perRound: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const a = rounds.find((r) => r.round === round && r.server === ours);
      const b = rounds.find((r) => r.round === round && r.server === peer);
      if (a !== undefined && b !== undefined) perRound.push(a.cpuPerRequestMicros / b.cpuPerRequestMicros);
    }
    const ratio = median(perRound);
    const [min, max] = range(perRound);
    return { ours, peer, ratio, min, max, perRound, target, met: target === undefined ? undefined : ratio <= target };
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
function fetchBody(url: string, headers: Readonly<Record<string, string>>): Promise<string> {
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
