// P-8's numbers: their defaults, their check, and the wait they give after a run of failures.
import type { ThrottlePolicy } from './ledgers.js';

export const DEFAULT_THROTTLE_POLICY: ThrottlePolicy = Object.freeze({
  accountFreeFailures: 5,
  baseDelayMs: 1_000,
  maxDelayMs: 900_000,
  addressMaxFailures: 50,
  addressWindowMs: 900_000,
  leaseMs: 30_000,
});

/** Checks policy numbers given by a programmer (loud, not lenient). */
export function resolveThrottlePolicy(options: Partial<ThrottlePolicy> = {}): ThrottlePolicy {
  const policy = { ...DEFAULT_THROTTLE_POLICY, ...options };
  for (const [name, value] of Object.entries(policy)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`throttle: ${name} must be a positive integer, got ${String(value)}`);
  }
  if (policy.maxDelayMs < policy.baseDelayMs) throw new RangeError('throttle: maxDelayMs must be at least baseDelayMs');
  return Object.freeze(policy);
}

/** The wait after `failures` consecutive failures (0 while still within the free ones). */
export function lockMs(policy: ThrottlePolicy, failures: number): number {
  if (failures < policy.accountFreeFailures) return 0;
  // 2 ** 40 already dwarfs any sane maxDelay; capping the exponent keeps it finite.
  return Math.min(policy.baseDelayMs * 2 ** Math.min(failures - policy.accountFreeFailures, 40), policy.maxDelayMs);
}
