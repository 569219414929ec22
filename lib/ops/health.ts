// H-3: /healthz and /readyz are resources like /api/something (same negotiation, ETag, Vary),
// served by the representation path from a registry of their own.
//
// L-2 (amended 2026-11-27): a flood of probes must not change any other request's latency, so
// readiness runs at most one store check at a time, probes that arrive meanwhile share its answer,
// and an answer is kept for `cacheMs`: however many probes arrive, the store sees about one check
// per `cacheMs`. A check that outlives the time-out is not repeated while it still runs (the store
// would queue one more for every probe): probes answer 503 until it settles.
import type { ResourceLoader } from '../config.js';
import { HttpError, problem } from '../http/problem.js';
import { withTimeout } from '../with-timeout.js';

export interface HealthOptions {
  /** Resolves when the store can serve (its `ping()`), rejects otherwise. */
  readonly ready: () => Promise<void>;
  /** A readiness check that takes longer counts as a failure: a probe must get an answer. @default 4000 */
  readonly timeoutMs?: number;
  /** How long a check's answer serves further probes. @default 1000 */
  readonly cacheMs?: number;
  /** Told why a readiness check failed (the 503 itself says nothing about the store); once per check. */
  readonly onNotReady?: (error: unknown) => void;
}

export interface Health {
  /** The loaders of /healthz and /readyz (service.ts makes them a registry). */
  readonly loaders: ReadonlyMap<string, ResourceLoader>;
  /** C-5 (amended): from now on /readyz answers 503 at once, so a load balancer stops sending here. */
  stopServing(): void;
}

/** The body of both resources when they answer 200. */
const OK = Object.freeze({ status: 'ok' });

const NOT_ANSWERING = 'The user store is not answering; this instance cannot serve password operations now.';
const STOPPING = 'This instance is shutting down.';

export function createHealth(options: HealthOptions): Health {
  const timeoutMs = options.timeoutMs ?? 4_000;
  const cacheMs = options.cacheMs ?? 1_000;
  let stopping = false;
  /** The store's own check, from its start until it settles (past the time-out too). */
  let underway: Promise<void> | undefined;
  /** Its answer within the time-out, shared by the probes waiting for it. */
  let shared: Promise<boolean> | undefined;
  let last: { readonly ready: boolean; readonly at: number } | undefined;

  const check = (): Promise<boolean> => {
    if (last !== undefined && performance.now() - last.at < cacheMs) return Promise.resolve(last.ready);
    if (shared !== undefined) return shared;
    // The last check timed out and the store has not answered it yet: no second one behind it.
    if (underway !== undefined) return Promise.resolve(false);
    const task = Promise.resolve().then(options.ready);
    underway = task;
    void task.then(
      () => (underway = undefined),
      () => (underway = undefined),
    );
    const answer = withTimeout(task, timeoutMs).then(
      () => true,
      (error: unknown) => {
        options.onNotReady?.(error);
        return false;
      },
    );
    shared = answer.then((ready) => {
      last = { ready, at: performance.now() };
      shared = undefined;
      return ready;
    });
    return shared;
  };

  // The process answers, so it is alive; nothing else is asked (a liveness probe that checked the
  // store would restart a healthy process whenever the store is away).
  const healthz: ResourceLoader = () => OK;
  const readyz: ResourceLoader = async () => {
    if (!stopping && (await check()) && !stopping) return OK;
    throw new HttpError(problem(503, 'overloaded', { detail: stopping ? STOPPING : NOT_ANSWERING }), { 'retry-after': '5' });
  };
  return {
    loaders: new Map<string, ResourceLoader>([
      ['healthz', healthz],
      ['readyz', readyz],
    ]),
    stopServing() {
      stopping = true;
    },
  };
}
