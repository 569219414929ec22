// The access log's own code, without a server: CPU per request line of what a logged request does
// and an unlogged one does not (lib/http/dispatch.ts `answered()`: the two clock reads, the entry;
// lib/log.ts: the line, the time string, the batched write to standard output). A cross-check of
// the side-by-side servers of logshare.ts. Run as a child of logshare.ts with stdout on /dev/null
// and an IPC channel; the result goes back over IPC.
//   node bench/results/build/bench/log-micro.js --lines-per-write 15 [--lines 200000] [--rounds 9]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createLineWriter, createLogger, type RequestLog } from '../lib/log.js';
import { median, range } from './stats.js';

export interface LogMicroResult {
  /** Lines per write(2): the server's rate × the writer's IDLE_FLUSH_MS, at most 256 (lib/log.ts). */
  readonly linesPerWrite: number;
  readonly linesPerRound: number;
  /** CPU (user + system) per line, logged minus unlogged loop, µs: median and min–max of the rounds. */
  readonly microsPerLine: number;
  readonly min: number;
  readonly max: number;
  readonly perRound: readonly number[];
  /** The unlogged loop alone (request id, the dispatcher's counter), µs per iteration. */
  readonly baseMicros: number;
}

const { values } = parseArgs({ options: { 'lines-per-write': { type: 'string' }, lines: { type: 'string' }, rounds: { type: 'string' } } });
const linesPerWrite = Number(values['lines-per-write'] ?? 15);
const lines = Number(values.lines ?? 200_000);
const rounds = Number(values.rounds ?? 9);

// Standard output is /dev/null here, as for the servers: the same sink as stdoutLines(), with the
// writer's flush called every `linesPerWrite` lines, where the server's writer would write them
// (IDLE_FLUSH_MS after the oldest pending line, or at the 256th). The wake-ups of a server that
// sleeps between requests are not in this loop: see bench/README.md, "The access log side by side".
const writer = createLineWriter((chunk) => void process.stdout.write(chunk));
const logger = createLogger(writer.write);
const idPrefix = randomBytes(4).toString('hex');
// Addresses and paths as a service sees them; the duration a fresh clock reading, as answered() takes it.
const ADDRESSES = ['127.0.0.1', '::ffff:10.1.2.3', '192.168.17.201', '2001:db8::8a2e:370:7334'];
// A path is cut out of the request target (RequestContext), so V8 holds it as a slice of the target:
// read through it, as the logger does, it costs what the server's paths cost.
const PATHS = ['/api/something.json?param1=hello', '/api/something?a=1', '/user/alice.json?b=2', '/readyz?c=3'].map((target) => target.slice(0, target.indexOf('?')));

/** The loop every request runs, logged or not: its id (RequestContext builds it either way). */
function unlogged(n: number): number {
  let sink = 0;
  let counter = 0;
  for (let i = 0; i < n; i++) sink += `${idPrefix}-${(++counter).toString(36)}`.length;
  return sink;
}

/** The same, plus what a logged request adds: the start time, answered()'s entry and the logger. */
function logged(n: number): number {
  let sink = 0;
  let counter = 0;
  for (let i = 0; i < n; i++) {
    const id = `${idPrefix}-${(++counter).toString(36)}`;
    sink += id.length;
    const started = performance.now();
    const path = PATHS[i & 3] as string;
    const at = performance.now();
    const entry: RequestLog = {
      id,
      method: 'GET',
      path: path.length > 512 ? `${path.slice(0, 512)}…` : path,
      status: 200,
      durationMs: at - started + 0.25,
      address: ADDRESSES[(i >> 2) & 3] as string,
      at,
    };
    logger.request(entry);
    if ((i + 1) % linesPerWrite === 0) writer.flush();
  }
  writer.flush();
  return sink;
}

const cpu = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const time = (run: (n: number) => number): number => {
  const before = cpu();
  run(lines);
  return (cpu() - before) / lines;
};

// Warm-up (JIT), then alternating rounds so a drift of the machine falls on both loops alike.
time(logged);
time(unlogged);
const perRound: number[] = [];
const bases: number[] = [];
for (let r = 0; r < rounds; r++) {
  let withLog: number;
  let without: number;
  if (r % 2 === 0) {
    withLog = time(logged);
    without = time(unlogged);
  } else {
    without = time(unlogged);
    withLog = time(logged);
  }
  bases.push(without);
  perRound.push(withLog - without);
}
const [min, max] = range(perRound);
const result: LogMicroResult = { linesPerWrite, linesPerRound: lines, microsPerLine: median(perRound), min, max, perRound, baseMicros: median(bases) };
process.send?.(result, () => process.exit(0));
