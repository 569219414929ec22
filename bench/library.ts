// The `library` section (issue 21's speed targets): one httpskit process with an embedder's
// resource (bench/servers/library.ts) each round; each round is `slices` passes over the runs in
// rotating order, the server's own CPU per request for each run, and every ratio is taken within
// one pass (the two runs seconds apart, on the same process), so the machine's drift between
// passes cancels; the figure is the median over all passes of all rounds:
//   fetch ÷ socket   service.fetch('/api/something.json') in-process ÷ the same over keep-alive HTTPS (≤ 0.5)
//   item ÷ something GET /api/books/2.json ÷ GET /api/something.json, same server (≤ 1.05): item 2
//                    is {"param1":null}, so both answers are the same bytes and only the route differs
//   put ÷ get        PUT /api/books/1 (1 KiB JSON, a schema) ÷ GET /api/books/1 (≤ 1.3)
// and, for reference (no target), the same PUT ÷ GET of a bare node:https handler
// (bench/servers/library-bare.ts) on the same core in the same passes: the transport's own ratio.
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
  /** Passes over the runs per round, each run `seconds` long. */
  readonly slices: number;
  readonly connections: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly pin: boolean;
  readonly cpuProf: readonly string[];
  readonly progress: (line: string) => void;
}

type Run = 'fetch something' | 'socket something' | 'socket small item' | 'socket item get' | 'socket item put' | 'bare item get' | 'bare item put';
const RUNS: readonly Run[] = ['fetch something', 'socket something', 'socket small item', 'socket item get', 'socket item put', 'bare item get', 'bare item put'];
const SOMETHING = '/api/something.json';
/** The same answer as SOMETHING's, from the embedder's item route. */
const SMALL_ITEM = '/api/books/2.json';
/** The 1 KiB book the PUT replaces. */
const ITEM = '/api/books/1';
const PATHS: Readonly<Record<Exclude<Run, 'fetch something'>, string>> = {
  'socket something': SOMETHING,
  'socket small item': SMALL_ITEM,
  'socket item get': ITEM,
  'socket item put': ITEM,
  'bare item get': ITEM,
  'bare item put': ITEM,
};

/** One comparison: `ours ÷ peer` of CPU per request, each round's ratio, median and spread. */
export interface LibraryRatio extends Ratio {
  readonly name: string;
  readonly ours: Run;
  readonly peer: Run;
  /** No target: a reference figure. */
  readonly target: number | undefined;
  readonly met: boolean;
}

export interface LibraryResult {
  /** Median µs of CPU per request of each run, over the passes. */
  readonly cpuPerRequestMicros: Readonly<Record<Run, number>>;
  readonly rps: Readonly<Record<Run, number>>;
  readonly failed: number;
  readonly ratios: readonly LibraryRatio[];
}

const COMPARISONS: ReadonlyArray<readonly [name: string, ours: Run, peer: Run, target: number | undefined]> = [
  ['service.fetch ÷ keep-alive HTTPS (GET /api/something.json)', 'fetch something', 'socket something', 0.5],
  ['item GET ÷ /api/something.json GET (the same answer)', 'socket small item', 'socket something', 1.05],
  ['item PUT (1 KiB, schema) ÷ item GET', 'socket item put', 'socket item get', 1.3],
  ['bare node:https PUT ÷ GET of the same item (reference)', 'bare item put', 'bare item get', undefined],
  ['item GET ÷ bare node:https GET (reference)', 'socket item get', 'bare item get', undefined],
  ['item PUT ÷ bare node:https PUT (reference)', 'socket item put', 'bare item put', undefined],
];

interface Figure {
  readonly cpuPerRequestMicros: number;
  readonly rps: number;
  readonly failed: number;
}

interface Usage {
  readonly cpuMicros: number;
}

type Server = Awaited<ReturnType<typeof startServer>>;

async function measure(run: Run, servers: { readonly httpskit: Server; readonly bare: Server }, load: Child, seconds: number, connections: number): Promise<Figure> {
  const server = run.startsWith('bare ') ? servers.bare : servers.httpskit;
  if (run === 'fetch something') {
    const r = await server.call<{ ok: number; failed: number; seconds: number; cpuMicros: number }>('fetchRun', SOMETHING, 'GET', null, seconds, connections);
    return { cpuPerRequestMicros: r.cpuMicros / Math.max(1, r.ok), rps: r.ok / r.seconds, failed: r.failed };
  }
  const put = run.endsWith(' put');
  const request = {
    kind: 'keepalive',
    url: `${server.url}${PATHS[run]}`,
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
  /** One entry per pass (all rounds). */
  const perRound: Array<Record<Run, Figure>> = [];
  for (let round = 0; round < o.rounds; round++) {
    const server = await startServer('library', 'library.js', { certFile: o.certFile, keyFile: o.keyFile, log: false }, o.cpuProf);
    const bare = await startServer('library-bare', 'library-bare.js', { certFile: o.certFile, keyFile: o.keyFile, log: false });
    const servers = { httpskit: server, bare };
    try {
      if (o.pin) {
        pinToCpu(server.pid, 0);
        pinToCpu(bare.pid, 0);
      }
      // Start-up work (the dummy scrypt hash, U-3) kept out of the figures, as in the http section.
      await sleep(11_000);
      for (const run of RUNS) await measure(run, servers, load, o.warmupSeconds, o.connections);
      for (let slice = 0; slice < o.slices; slice++) {
        const figures = {} as Record<Run, Figure>;
        for (const run of rotate(RUNS, round * o.slices + slice)) figures[run] = await measure(run, servers, load, o.seconds, o.connections);
        perRound.push(figures);
        o.progress(`  library round ${round + 1}/${o.rounds} pass ${slice + 1}/${o.slices}: ${RUNS.map((r) => `${r} ${figures[r].cpuPerRequestMicros.toFixed(1)} µs`).join(', ')}`);
      }
    } finally {
      await Promise.all([server.stop(), bare.stop()]);
    }
  }
  const byRun = <T>(f: (run: Run) => T): Record<Run, T> => Object.fromEntries(RUNS.map((r) => [r, f(r)])) as Record<Run, T>;
  const ratios = COMPARISONS.map(([name, ours, peer, target]): LibraryRatio => {
    const ratio = summarize(perRound.map((f) => f[ours].cpuPerRequestMicros / f[peer].cpuPerRequestMicros));
    return { name, ours, peer, target, ...ratio, met: target === undefined || ratio.median <= target };
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
  const lines = ['library (issue 21): server CPU per request, median of passes'];
  for (const run of RUNS) lines.push(`  ${run.padEnd(19)} ${r.cpuPerRequestMicros[run].toFixed(1).padStart(7)} µs  ${Math.round(r.rps[run]).toString().padStart(6)} req/s`);
  for (const x of r.ratios) {
    const verdict = x.target === undefined ? 'no target' : `target ≤ ${x.target} ${x.met ? 'met' : 'NOT met'}`;
    lines.push(`  ${x.name}: ${x.median.toFixed(3)} (${x.min.toFixed(3)}–${x.max.toFixed(3)}) ${verdict}  [${x.rounds.map((v) => v.toFixed(2)).join(' ')}]`);
  }
  if (r.failed > 0) lines.push(`  ${r.failed} failed responses`);
  return lines;
}
