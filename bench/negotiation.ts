// Negotiation micro-benchmark: httpskit's createNegotiator against the `negotiator` package on real
// Accept headers, ns per call, rounds interleaved (the order of contenders rotates), medians.
//   node --expose-gc bench/results/build/bench/negotiation.js [--rounds N] [--json]
// Every call gets a fresh string (as the HTTP parser hands each request its own), so the cache
// pays for hashing the header every time; "uncached" turns the cache off to time the parser itself.
// The service's list is timed with the service's options (N-2's charset rule on); the "library"
// rows time an application's list with parameters on the offered side (A-3), options off.
import Negotiator from 'negotiator';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createNegotiator } from '../lib/negotiate/negotiate.js';
import { median, rotate } from './stats.js';
import { collectGarbage } from './xml.js';

/** The service's offered list and options (lib/representation/select.ts): the hot path. */
const OFFERED = ['application/json', 'application/xml', 'text/xml'];
const SERVICE = { charsetUtf8: true } as const;
/** An application's list (A-3): versioned types, parameters on the offered side. */
const VERSIONED = ['application/vnd.example+json;version=1', 'application/vnd.example+json;version=2', 'application/json'];

/** Real Accept headers, as sent by the clients named; against the service's list unless another is given. */
export const HEADERS: ReadonlyArray<readonly [client: string, accept: string, offered?: readonly string[]]> = [
  ['Chrome/Edge navigation', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7'],
  ['Firefox navigation', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/png,image/svg+xml,*/*;q=0.8'],
  ['Safari navigation', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ['curl, wget, fetch()', '*/*'],
  ['axios', 'application/json, text/plain, */*'],
  ['jQuery getJSON', 'application/json, text/javascript, */*; q=0.01'],
  ['jQuery dataType xml', 'application/xml, text/xml, */*; q=0.01'],
  ['HTTPie', 'application/json, */*;q=0.5'],
  ['Java HttpURLConnection', 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2'],
  ['Spring RestTemplate', 'application/json, application/*+json'],
  ['GitHub API client', 'application/vnd.github+json'],
  ['XML API client', 'application/xml;charset=utf-8'],
  ['IE 11', 'text/html, application/xhtml+xml, image/jxr, */*'],
  [
    'long, 10 parameterised entries',
    'text/html;level=1;q=0.9, text/html;level=2;q=0.4, application/xhtml+xml;profile="http://www.w3.org/1999/xhtml";q=0.8, ' +
      'application/xml;charset=utf-8;q=0.7, text/xml;charset="utf-8";q=0.7, application/json;charset=utf-8;q=0.6, ' +
      'text/plain;format=flowed;q=0.5, image/webp;q=0.3;ext=1, application/*;charset=utf-8;q=0.2, */*;q=0.1;ext="a,b"',
  ],
  ['library, versioned offers: API client', 'application/vnd.example+json;version=2, application/json;q=0.5', VERSIONED],
  ['library, versioned offers: axios', 'application/json, text/plain, */*', VERSIONED],
  ['library, versioned offers: Firefox', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/png,image/svg+xml,*/*;q=0.8', VERSIONED],
];

export interface NegotiationRow {
  readonly client: string;
  readonly accept: string;
  readonly oursAnswer: string | null;
  readonly negotiatorAnswer: string | null;
  readonly sameAnswer: boolean;
  /** Median ns per call. */
  readonly cachedNs: number;
  readonly uncachedNs: number;
  readonly negotiatorNs: number;
  /** Median of per-round ratios ours / negotiator. */
  readonly cachedRatio: number;
  readonly uncachedRatio: number;
}

type Contender = 'cached' | 'uncached' | 'negotiator';
const CONTENDERS: readonly Contender[] = ['cached', 'uncached', 'negotiator'];

/** `count` copies of `text` that are distinct string objects (no shared hash, not internalised). */
function freshCopies(text: string, count: number): string[] {
  const bytes = Buffer.from(text, 'latin1');
  return Array.from({ length: count }, () => bytes.toString('latin1'));
}

type Run = Record<Contender, (accept: string) => string | undefined>;

// One negotiator per offered list, as an application (or the service) makes it once.
function contenders(offered: readonly string[]): Run {
  const options = offered === OFFERED ? SERVICE : {};
  const list = [...offered];
  return {
    cached: createNegotiator(offered, options),
    uncached: createNegotiator(offered, { ...options, cacheSize: 0 }),
    negotiator: (accept) => new Negotiator({ headers: { accept } }).mediaType(list),
  };
}

export function runNegotiationBench(options: { rounds?: number; calls?: number } = {}): NegotiationRow[] {
  const rounds = options.rounds ?? 15;
  const calls = options.calls ?? 20_000;
  const runs = new Map<readonly string[], Run>();
  const runFor = (offered: readonly string[] = OFFERED): Run => {
    let run = runs.get(offered);
    if (run === undefined) runs.set(offered, (run = contenders(offered)));
    return run;
  };
  let sink = 0;
  const time = (fn: (accept: string) => string | undefined, inputs: readonly string[]): number => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < inputs.length; i++) sink += fn(inputs[i] as string)?.length ?? 1;
    return Number(process.hrtime.bigint() - start) / inputs.length;
  };
  // Warm-up, every path of every contender.
  for (const [, accept, offered] of HEADERS) for (const c of CONTENDERS) time(runFor(offered)[c], freshCopies(accept, 2_000));

  const samples = HEADERS.map(() => ({ cached: [] as number[], uncached: [] as number[], negotiator: [] as number[] }));
  for (let round = 0; round < rounds; round++) {
    HEADERS.forEach(([, accept, offered], h) => {
      for (const c of rotate(CONTENDERS, round + h)) {
        const inputs = freshCopies(accept, calls);
        collectGarbage(); // each contender pays for its own garbage, not the previous one's
        samples[h]![c].push(time(runFor(offered)[c], inputs));
      }
    });
  }
  if (sink === 0) console.error('(sink)');
  return HEADERS.map(([client, accept, offered], h) => {
    const s = samples[h]!;
    const ours = runFor(offered).cached(accept) ?? null;
    const theirs = runFor(offered).negotiator(accept) ?? null;
    return {
      client,
      accept,
      oursAnswer: ours,
      negotiatorAnswer: theirs,
      sameAnswer: ours === theirs,
      cachedNs: median(s.cached),
      uncachedNs: median(s.uncached),
      negotiatorNs: median(s.negotiator),
      cachedRatio: median(s.cached.map((v, i) => v / (s.negotiator[i] as number))),
      uncachedRatio: median(s.uncached.map((v, i) => v / (s.negotiator[i] as number))),
    };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, calls: { type: 'string' }, json: { type: 'boolean' } } });
  const rows = runNegotiationBench({
    ...(values.rounds === undefined ? {} : { rounds: Number(values.rounds) }),
    ...(values.calls === undefined ? {} : { calls: Number(values.calls) }),
  });
  if (values.json === true) console.log(JSON.stringify(rows));
  else {
    for (const r of rows) {
      console.log(
        `${r.client.padEnd(32)} cached ${r.cachedNs.toFixed(0).padStart(5)} ns  uncached ${r.uncachedNs.toFixed(0).padStart(5)} ns  negotiator ${r.negotiatorNs.toFixed(0).padStart(6)} ns  ` +
          `ratio ${r.cachedRatio.toFixed(3)} / ${r.uncachedRatio.toFixed(3)}  ${r.sameAnswer ? 'same' : `DIFFERS ours=${r.oursAnswer} negotiator=${r.negotiatorAnswer}`}`,
      );
    }
  }
}
