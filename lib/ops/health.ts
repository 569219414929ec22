// H-3: /healthz and /readyz are resources like /api/something (same negotiation, ETag, Vary),
// served by the representation path from a registry of their own.
import type { ResourceLoader } from '../config.js';
import { HttpError, problem } from '../http/problem.js';
import { withTimeout } from '../with-timeout.js';

export interface HealthOptions {
  /** Resolves when the store can serve (its `ping()`), rejects otherwise. */
  readonly ready: () => Promise<void>;
  /** A readiness check that takes longer counts as a failure: a probe must get an answer. @default 4000 */
  readonly timeoutMs?: number;
  /** Told why a readiness check failed (the 503 itself says nothing about the store). */
  readonly onNotReady?: (error: unknown) => void;
}

/** The body of both resources when they answer 200. */
const OK = Object.freeze({ status: 'ok' });

/** The loaders of /healthz and /readyz (service.ts makes them a registry). */
export function createHealthRegistry(options: HealthOptions): ReadonlyMap<string, ResourceLoader> {
  const timeoutMs = options.timeoutMs ?? 4_000;
  // The process answers, so it is alive; nothing else is asked (a liveness probe that checked the
  // store would restart a healthy process whenever the store is away).
  const healthz: ResourceLoader = () => OK;
  const readyz: ResourceLoader = async () => {
    try {
      await withTimeout(options.ready(), timeoutMs);
    } catch (error) {
      options.onNotReady?.(error);
      throw new HttpError(problem(503, 'overloaded', { detail: 'The user store is not answering; this instance cannot serve password operations now.' }), {
        'retry-after': '5',
      });
    }
    return OK;
  };
  return new Map<string, ResourceLoader>([
    ['healthz', healthz],
    ['readyz', readyz],
  ]);
}
