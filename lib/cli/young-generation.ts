import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { process } from '../process.js';

/**
 * V8's young generation (its two semi-spaces) as the server the CLI runs keeps it: 8 MiB in all,
 * two semi-spaces of 4 MiB. V8 grows it, under a sustained load, to its default ceiling of two
 * 16 MiB semi-spaces: 32 MiB of resident memory that a server of this size gets little for
 * (bench/README.md, "Memory under a long mixed load": the soak's steady 108–113 MiB → 86–87, peak
 * 99.4; CPU per request beside the unheld CLI 1.014, 0.88–1.24; by instructions +0.7% on the main
 * thread and 1.8k a request more in V8's collector threads).
 */
export const YOUNG_GENERATION_BYTES = 8 * 1024 * 1024;

/** Node's flags that size the young generation: given any of them, the operator chose, and it is left alone. */
const SIZING_FLAGS = /--(?:max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor|--max[-_]young[-_]generation[-_]size/;

/**
 * Holds the young generation at `bytes` for the rest of the process (the CLI's `serve` only: a
 * library does not change its host process's heap). Node's `--max-semi-space-size` is read once,
 * when the process starts, but V8 reads its growth factor each time it grows the young generation
 * (by that factor, after a collection, when enough has survived): after every collection the
 * factor is set so that the next growth lands on `bytes` at most (4 from V8's first 2 MiB, then 1:
 * no growth). V8 still shrinks it when the process idles, and it grows back to `bytes` after.
 * Returns the function that stops it (V8's default factor again), or undefined when Node's own
 * flags (`NODE_OPTIONS`, `execArgv`) size it already.
 */
export function holdYoungGeneration(bytes = YOUNG_GENERATION_BYTES, flags: readonly string[] = [...process.execArgv, process.env['NODE_OPTIONS'] ?? '']): (() => void) | undefined {
  if (flags.some((flag) => SIZING_FLAGS.test(flag))) return undefined;
  let factor = DEFAULT_GROWTH_FACTOR;
  const check = (): void => {
    const next = Math.max(1, Math.floor(bytes / Math.max(1, youngGenerationSize())));
    if (next === factor) return;
    factor = next;
    setFlagsFromString(`--semi-space-growth-factor=${next}`);
  };
  // Called after each collection (node:perf_hooks' 'gc' entries), when a growth may have happened.
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  return () => {
    observer.disconnect();
    if (factor !== DEFAULT_GROWTH_FACTOR) setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  };
}

/** V8's own `--semi-space-growth-factor`. */
const DEFAULT_GROWTH_FACTOR = 2;

/** The young generation's size now (both semi-spaces), in bytes. */
export function youngGenerationSize(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}
