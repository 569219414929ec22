// The `soak` section (issue 23): memory under a long mixed load. One httpskit process as the CLI
// runs it (request log on, to /dev/null), 20 keep-alive connections for `seconds` (3 minutes by
// default), each cycling through a mix of paths, Accept headers and errors: JSON and XML by
// extension, by Accept (Chrome's) and by return_type, 404, 406, 405, a 400, a 401 challenge, the
// probes, the OpenAPI document, and a query new on every request (so a cache keyed by the target
// would grow). RSS is sampled every few seconds; the targets are a peak ≤ 100 MiB and a flat line:
// the least-squares slope over the second half of the run at most 1 MiB a minute.
import type { Child } from './children.js';
import { pinToCpu, startServer } from './children.js';
import type { LoadResult, LoadStep } from './load.js';
import { CHROME_ACCEPT } from './http.js';
import { slope, sleep } from './stats.js';

export interface SoakOptions {
  readonly seconds: number;
  readonly connections: number;
  readonly sampleSeconds: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly pin: boolean;
  /** Node's own flags for the server process (`--max-semi-space-size=2`): what NODE_OPTIONS would give the CLI. */
  readonly nodeFlags: readonly string[];
  readonly progress: (line: string) => void;
}

export interface SoakResult {
  readonly seconds: number;
  readonly connections: number;
  readonly nodeFlags: readonly string[];
  /** [seconds since the load began, RSS MiB] every sampleSeconds. */
  readonly samples: ReadonlyArray<readonly [seconds: number, rssMiB: number]>;
  readonly peakRssMiB: number;
  /** Least-squares slope of RSS over the second half of the run, MiB per minute. */
  readonly slopeMiBPerMinute: number;
  readonly responses: number;
  /** Non-2xx answers and errors: most of the mix's errors are on purpose (the count shows they were sent). */
  readonly non2xx: number;
  readonly peakTarget: number;
  readonly slopeTarget: number;
}

const get = (path: string, headers: Readonly<Record<string, string>> = {}): LoadStep => ({ method: 'GET', path, headers });

/** One connection's cycle. */
export const SOAK_MIX: readonly LoadStep[] = [
  get('/api/something.json?param1=hello'),
  get('/api/something?param1=hello', { accept: CHROME_ACCEPT }),
  get('/api/something?param1=x', { accept: 'application/json' }),
  get('/api/something?param1=y&return_type=xml'),
  get('/api/something.json?param1={n}'),
  get('/api/something?param1={n}', { accept: 'text/xml;q=0.9, application/json;q=0.5' }),
  get('/api/nothing.json'),
  get('/api/something', { accept: 'image/png' }),
  get('/api/something.json?param1=%ZZ'),
  { method: 'POST', path: '/api/something', headers: { 'content-type': 'application/json' }, body: '{}' },
  get('/user/alice.json'),
  get('/livez'),
  get('/readyz'),
  get('/openapi.json'),
];

const PEAK_TARGET_MIB = 100;
const SLOPE_TARGET_MIB_PER_MINUTE = 1;

export async function runSoakBench(load: Child, o: SoakOptions): Promise<SoakResult> {
  const server = await startServer('httpskit+log', 'httpskit.js', { certFile: o.certFile, keyFile: o.keyFile, log: true, cli: true }, o.nodeFlags);
  try {
    if (o.pin) pinToCpu(server.pid, 0);
    const samples: Array<[number, number]> = [];
    const started = performance.now();
    const sample = async (): Promise<void> => {
      const usage = await server.request<{ rssKiB: number }>({ kind: 'usage' });
      samples.push([(performance.now() - started) / 1000, usage.rssKiB / 1024]);
    };
    await sample();
    let running = true;
    const sampler = (async () => {
      while (running) {
        await sleep(o.sampleSeconds * 1000);
        if (!running) break;
        await sample();
        const last = samples.at(-1) as [number, number];
        if (Math.round(last[0]) % 30 < o.sampleSeconds) o.progress(`  soak ${Math.round(last[0])} s: RSS ${last[1].toFixed(1)} MiB`);
      }
    })();
    const result = await load.request<LoadResult>({ kind: 'keepalive', url: `${server.url}/`, headers: {}, connections: o.connections, seconds: o.seconds, requests: SOAK_MIX });
    running = false;
    await sampler;
    await sample();
    const half = samples.filter(([t]) => t >= o.seconds / 2);
    return {
      seconds: o.seconds,
      connections: o.connections,
      nodeFlags: o.nodeFlags,
      samples,
      peakRssMiB: Math.max(...samples.map(([, rss]) => rss)),
      slopeMiBPerMinute: slope(half) * 60,
      responses: result.ok + result.failed,
      non2xx: result.failed,
      peakTarget: PEAK_TARGET_MIB,
      slopeTarget: SLOPE_TARGET_MIB_PER_MINUTE,
    };
  } finally {
    await server.stop();
  }
}

export function soakLines(r: SoakResult): string[] {
  return [
    `soak (issue 23): ${r.connections} connections, ${r.seconds} s, mixed paths, Accept headers and errors, request log on, node ${r.nodeFlags.join(' ') || 'with its defaults'}`,
    `  ${r.responses} responses (${r.non2xx} not 2xx, as the mix asks), RSS peak ${r.peakRssMiB.toFixed(1)} MiB (target ≤ ${r.peakTarget}), ` +
      `slope over the second half ${r.slopeMiBPerMinute.toFixed(2)} MiB/min (target ≤ ${r.slopeTarget})`,
    `  RSS MiB every ${Math.round((r.samples[1]?.[0] ?? 0) - (r.samples[0]?.[0] ?? 0))} s: ${r.samples.map(([, rss]) => rss.toFixed(0)).join(' ')}`,
  ];
}
