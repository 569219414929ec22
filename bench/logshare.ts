// The access log's share of a logged request's CPU (`--only logshare`), measured side by side:
// the log-on server (the default JSON line per request on stdout, /dev/null) and the log-off one
// (the same sink with --log-level off) run AT THE SAME TIME, both on CPU 0, each driven by the same
// paced HTTPS keep-alive load from the load generator on CPU 1. Whatever else the machine does
// during a round (other benchmarks, a profiler) falls on both alike, where the alternating slices of
// the HTTP scenarios give it to whichever server happens to run then. share = (on − off) ÷ on per
// round, from each server's process.cpuUsage() over the measured run; a round whose load was not
// delivered in full to both (a count short, an error, the pacing late) is void.
// Beside it, log-micro.ts: the log's code alone, µs of CPU per line, as a cross-check.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { IDLE_FLUSH_MS } from '../lib/log.js';
import { pinToCpu, runForMessage, startServer, type Child, type ServerChild } from './children.js';
import type { LoadResult } from './load.js';
import type { LogMicroResult } from './log-micro.js';
import { median, range, sleep } from './stats.js';

export interface LogShareOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Where the servers' (empty) stores go. */
  readonly work: string;
  readonly rounds: number;
  /** Measured seconds per round, and the warm-up before them (same load, not counted). */
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Requests per second to each server, and its keep-alive connections. */
  readonly rate: number;
  readonly connections: number;
  /** The load's client: the lean one of paced-tls.ts (default), or node:https's Agent. */
  readonly client?: 'tls' | 'agent';
  readonly pin: boolean;
  readonly settleMs: number;
  /**
   * An A/A check of the method: the "off" server logs too (its share should come out near 0, as
   * wide as this machine's noise), so nothing else tells the two processes apart.
   */
  readonly aa?: boolean;
  /** `node --cpu-prof` for both servers, into <dir>/httpskit+log-on and …/httpskit+log-off. */
  readonly profileDir?: string | undefined;
  readonly progress: (line: string) => void;
}

type Side = 'on' | 'off';

export interface LogShareServerRound {
  readonly cpuMicros: number;
  readonly systemMicros: number;
  readonly ok: number;
  readonly failed: number;
  /** Seconds from the first paced request to the last answer. */
  readonly seconds: number;
  readonly cpuPerRequestMicros: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface LogShareRound {
  readonly round: number;
  /** The server started (and asked for its CPU time) first. */
  readonly first: Side;
  readonly on: LogShareServerRound;
  readonly off: LogShareServerRound;
  /** (on − off) ÷ on, CPU per request; null for a void round. */
  readonly share: number | null;
  /** Why the round does not count. */
  readonly void?: string;
  /** 1, 5 and 15 min, at the end of the round. */
  readonly loadAverage: readonly number[];
}

export interface LogShareResult {
  readonly method: string;
  readonly path: string;
  readonly rate: number;
  readonly connections: number;
  readonly client: 'tls' | 'agent';
  readonly seconds: number;
  readonly pinned: boolean;
  /** The A/A check (both servers logging): the share measures the method's bias and noise, not the log. */
  readonly aa: boolean;
  /** Median and min–max of the counted rounds' shares. */
  readonly share: { readonly median: number; readonly min: number; readonly max: number; readonly counted: number; readonly void: number };
  /** Medians over the counted rounds, µs of CPU per request. */
  readonly onMicros: number;
  readonly offMicros: number;
  readonly loadAverageAtStart: readonly number[];
  readonly loadAverageAtEnd: readonly number[];
  readonly rounds: readonly LogShareRound[];
  /** The log's code alone (log-micro.ts), and that as a share of the log-on server's median request. */
  readonly micro: LogMicroResult & { readonly shareOfOnRequest: number };
}

const PATH = '/api/something.json?param1=hello';
/** A paced run may end this much later than its nominal length (the last answers) before the round is void. */
const LATE_FACTOR = 1.25;
/** The log writer's longest wait (lib/log.ts IDLE_FLUSH_MS) and some: the last lines are written before the CPU is read. */
const QUIET_MS = IDLE_FLUSH_MS + 50;

const loadNow = (): number[] => loadavg().map((l) => Number(l.toFixed(2)));

export async function runLogShareBench(options: LogShareOptions, load: Child): Promise<LogShareResult> {
  const loadAverageAtStart = loadNow();
  const rounds: LogShareRound[] = [];
  for (let round = 0; round < options.rounds; round++) {
    rounds.push(await runRound(options, load, round));
    const r = rounds.at(-1) as LogShareRound;
    const cell = (s: LogShareServerRound): string => `${s.cpuPerRequestMicros.toFixed(1)}µs ×${s.ok}${s.failed > 0 ? ` (${s.failed} failed)` : ''}`;
    options.progress(
      `  logshare round ${round + 1}/${options.rounds} (${r.first} first): on ${cell(r.on)}, off ${cell(r.off)}: ` +
        `${r.share === null ? `void (${r.void ?? ''})` : `share ${(r.share * 100).toFixed(1)}%`}, load ${r.loadAverage.join(' ')}`,
    );
  }
  const counted = rounds.filter((r) => r.share !== null);
  const shares = counted.map((r) => r.share as number);
  const [min, max] = shares.length > 0 ? range(shares) : [Number.NaN, Number.NaN];
  const onMicros = median(counted.map((r) => r.on.cpuPerRequestMicros));
  // The log path alone, at the lines per write the servers' rate gives (a write every IDLE_FLUSH_MS, at most 256 lines).
  options.progress('  logshare: the log path alone (log-micro) …');
  const linesPerWrite = Math.min(256, Math.max(1, Math.round((options.rate * IDLE_FLUSH_MS) / 1000)));
  const micro = await runForMessage<LogMicroResult>('log-micro.js', ['--lines-per-write', String(linesPerWrite)]);
  return {
    method: 'GET',
    path: PATH,
    rate: options.rate,
    connections: options.connections,
    client: options.client ?? 'tls',
    seconds: options.seconds,
    pinned: options.pin,
    aa: options.aa === true,
    share: { median: median(shares), min, max, counted: counted.length, void: rounds.length - counted.length },
    onMicros,
    offMicros: median(counted.map((r) => r.off.cpuPerRequestMicros)),
    loadAverageAtStart,
    loadAverageAtEnd: loadNow(),
    rounds,
    micro: { ...micro, shareOfOnRequest: micro.microsPerLine / onMicros },
  };
}

/** Two fresh servers, started in the round's order, settled, warmed up and measured together. */
async function runRound(options: LogShareOptions, load: Child, round: number): Promise<LogShareRound> {
  const first: Side = round % 2 === 0 ? 'on' : 'off';
  const sides: readonly Side[] = first === 'on' ? ['on', 'off'] : ['off', 'on'];
  const servers = new Map<Side, ServerChild>();
  try {
    for (const side of sides) {
      const args = {
        certFile: options.certFile,
        keyFile: options.keyFile,
        log: true,
        store: join(options.work, `logshare-${side}-${round}.json`),
        // Hashes this cheap run on the main thread (lib/users/scrypt-pool.ts): no hashing worker that
        // would end 10 s after start-up in the middle of a round. No request here hashes a password.
        scrypt: { ln: 1, r: 8, p: 1 },
        ...(side === 'off' && options.aa !== true ? { logLevel: 'off' } : {}),
      };
      const name = `httpskit+log-${side}`;
      const profile = options.profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, name)}`];
      const server = await startServer(name, 'httpskit.js', args, profile);
      if (options.pin) pinToCpu(server.pid, 0);
      servers.set(side, server);
    }
    await sleep(options.settleMs);
    const ordered = sides.map((side) => servers.get(side) as ServerChild);
    const drive = (seconds: number, keep: boolean): Promise<LoadResult[]> =>
      Promise.all(
        ordered.map((server) =>
          load.request<LoadResult>({ kind: 'paced', url: `${server.url}${PATH}`, ratePerSecond: options.rate, seconds, sockets: options.connections, keep, raw: options.client !== 'agent' }),
        ),
      );
    // Warm-up (JIT, TLS handshakes of the kept connections): the same load, not counted.
    await drive(options.warmupSeconds, true);
    await sleep(QUIET_MS);
    const before = await Promise.all(ordered.map((server) => server.usage()));
    const results = await drive(options.seconds, false);
    await sleep(QUIET_MS);
    const after = await Promise.all(ordered.map((server) => server.usage()));
    const figures = new Map<Side, LogShareServerRound>();
    sides.forEach((side, i) => {
      const result = results[i] as LoadResult;
      const cpuMicros = (after[i]?.cpuMicros ?? 0) - (before[i]?.cpuMicros ?? 0);
      figures.set(side, {
        cpuMicros,
        systemMicros: (after[i]?.systemMicros ?? 0) - (before[i]?.systemMicros ?? 0),
        ok: result.ok,
        failed: result.failed,
        seconds: result.seconds,
        cpuPerRequestMicros: cpuMicros / result.ok,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
      });
    });
    const on = figures.get('on') as LogShareServerRound;
    const off = figures.get('off') as LogShareServerRound;
    const why = voidReason(on, off, options);
    return {
      round,
      first,
      on,
      off,
      share: why === undefined ? (on.cpuPerRequestMicros - off.cpuPerRequestMicros) / on.cpuPerRequestMicros : null,
      ...(why === undefined ? {} : { void: why }),
      loadAverage: loadNow(),
    };
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

/** The paced load was delivered to both in full (every request, each answered 200, on time), or why not. */
function voidReason(on: LogShareServerRound, off: LogShareServerRound, options: Pick<LogShareOptions, 'rate' | 'seconds' | 'connections'>): string | undefined {
  // The paced run sends rate × seconds, after one request per connection to open them.
  const expected = Math.round(options.seconds * options.rate) + options.connections;
  for (const [side, s] of [['on', on], ['off', off]] as const) {
    if (s.failed > 0) return `${side}: ${s.failed} failed`;
    if (s.ok !== expected) return `${side}: ${s.ok} answered of ${expected}`;
    if (s.seconds > options.seconds * LATE_FACTOR) return `${side}: took ${s.seconds.toFixed(2)} s for ${options.seconds} s of load`;
  }
  return undefined;
}
