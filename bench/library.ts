// The `library` section (issue 21's speed targets): one httpskit process with an embedder's
// resource (bench/servers/library.ts), four runs per round in rotating order, the server's own CPU
// per request for each, ratios taken round by round:
//   fetch ÷ socket   service.fetch('/api/something.json') in-process ÷ the same over keep-alive HTTPS (≤ 0.5)
//   item ÷ something GET /api/books/1 ÷ GET /api/something.json, same server (≤ 1.05)
//   put ÷ get        PUT /api/books/1 (1 KiB JSON, a schema) ÷ GET /api/books/1 (≤ 1.3)
// A fresh server each round; the load generator's process drives the socket runs.
import type { Child } from './children.js';
import { pinToCpu, startServer } from './children.js';
import type { LoadResult } from './load.js';
import { BOOK_BODY } from './servers/bodies.js';
import { summarize, type Ratio } from './postgres-password.js';
import { median, rotate, sleep } from './stats.js';

export interface LibraryOptions {
  readonly rounds: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly pin: boolean;
  readonly cpuProf: readonly string[];
  readonly progress: (line: string) => void;
}

type Run = 'fetch something' | 'socket something' | 'socket item get' | 'socket item put';
const RUNS: readonly Run[] = ['fetch something', 'socket something', 'socket item get', 'socket item put'];
const SOMETHING = '/api/something.json';
const ITEM = '/api/books/1';

/** One comparison: `ours ÷ peer` of CPU per request, each round's ratio, median and spread. */
export interface LibraryRatio extends Ratio {
  readonly name: string;
  readonly ours: Run;
  readonly peer: Run;
  readonly target: number;
  readonly met: boolean;
}

export interface LibraryResult {
  /** Median µs of CPU per request of each run, over the rounds. */
  readonly cpuPerRequestMicros: Readonly<Record<Run, number>>;
  readonly rps: Readonly<Record<Run, number>>;
  readonly failed: number;
  readonly ratios: readonly LibraryRatio[];
}

const COMPARISONS: ReadonlyArray<readonly [name: string, ours: Run, peer: Run, target: number]> = [
  ['service.fetch ÷ keep-alive HTTPS (GET /api/something.json)', 'fetch something', 'socket something', 0.5],
  ['item GET ÷ /api/something.json GET', 'socket item get', 'socket something', 1.05],
  ['item PUT (1 KiB, schema) ÷ item GET', 'socket item put', 'socket item get', 1.3],
];

interface Figure {
  readonly cpuPerRequestMicros: number;
  readonly rps: number;
  readonly failed: number;
}

interface Usage {
  readonly cpuMicros: number;
}

async function measure(run: Run, server: Awaited<ReturnType<typeof startServer>>, load: Child, seconds: number, connections: number): Promise<Figure> {
  if (run === 'fetch something') {
    const r = await server.call<{ ok: number; failed: number; seconds: number; cpuMicros: number }>('fetchRun', SOMETHING, 'GET', null, seconds, connections);
    return { cpuPerRequestMicros: r.cpuMicros / Math.max(1, r.ok), rps: r.ok / r.seconds, failed: r.failed };
  }
  const put = run === 'socket item put';
  const request = {
    kind: 'keepalive',
    url: `${server.url}${run === 'socket something' ? SOMETHING : ITEM}`,
    headers: put ? { 'content-type': 'application/json' } : {},
    connections,
    seconds,
    ...(put ? { method: 'PUT', body: BOOK_BODY } : {}),
  };
  const before = await server.request<Usage>({ kind: 'usage' });
  const r = await load.request<LoadResult>(request);
  const after = await server.request<Usage>({ kind: 'usage' });
  return { cpuPerRequestMicros: (after.cpuMicros - before.cpuMicros) / Math.max(1, r.ok), rps: r.ok / r.seconds, failed: r.failed };
}

export async function runLibraryBench(load: Child, o: LibraryOptions): Promise<LibraryResult> {
  const perRound: Array<Record<Run, Figure>> = [];
  for (let round = 0; round < o.rounds; round++) {
    const server = await startServer('library', 'library.js', { certFile: o.certFile, keyFile: o.keyFile, log: false }, o.cpuProf);
    try {
      if (o.pin) pinToCpu(server.pid, 0);
      // Start-up work (the dummy scrypt hash, U-3) kept out of the figures, as in the http section.
      await sleep(11_000);
      for (const run of RUNS) await measure(run, server, load, o.warmupSeconds, o.connections);
      const figures = {} as Record<Run, Figure>;
      for (const run of rotate(RUNS, round)) figures[run] = await measure(run, server, load, o.seconds, o.connections);
      perRound.push(figures);
      o.progress(`  library round ${round + 1}/${o.rounds}: ${RUNS.map((r) => `${r} ${figures[r].cpuPerRequestMicros.toFixed(1)} µs`).join(', ')}`);
    } finally {
      await server.stop();
    }
  }
  const byRun = <T>(f: (run: Run) => T): Record<Run, T> => Object.fromEntries(RUNS.map((r) => [r, f(r)])) as Record<Run, T>;
  const ratios = COMPARISONS.map(([name, ours, peer, target]): LibraryRatio => {
    const ratio = summarize(perRound.map((f) => f[ours].cpuPerRequestMicros / f[peer].cpuPerRequestMicros));
    return { name, ours, peer, target, ...ratio, met: ratio.median <= target };
  });
  return {
    cpuPerRequestMicros: byRun((r) => median(perRound.map((f) => f[r].cpuPerRequestMicros))),
    rps: byRun((r) => median(perRound.map((f) => f[r].rps))),
    failed: perRound.reduce((n, f) => n + RUNS.reduce((m, r) => m + f[r].failed, 0), 0),
    ratios,
  };
}

/** The section's lines for stdout. */
export function libraryLines(r: LibraryResult): string[] {
  const lines = ['library (issue 21): server CPU per request, median of rounds'];
  for (const run of RUNS) lines.push(`  ${run.padEnd(18)} ${r.cpuPerRequestMicros[run].toFixed(1).padStart(7)} µs  ${Math.round(r.rps[run]).toString().padStart(6)} req/s`);
  for (const x of r.ratios) {
    lines.push(`  ${x.name}: ${x.median.toFixed(3)} (${x.min.toFixed(3)}–${x.max.toFixed(3)}) target ≤ ${x.target} ${x.met ? 'met' : 'NOT met'}  [${x.rounds.map((v) => v.toFixed(2)).join(' ')}]`);
  }
  if (r.failed > 0) lines.push(`  ${r.failed} failed responses`);
  return lines;
}
