// Options of openPostgresStore(), validated once. The time-outs bound how long a
// request can wait on a database that is down, restarting or slow before it gets 503 (S-6).
import { ServiceError } from '../../errors.js';
import type { ThrottlePolicy } from '../ledgers.js';
import { resolveThrottlePolicy } from '../throttle-policy.js';

export interface PostgresStoreOptions {
  /** Connections in this process's pool. Instances × poolSize must fit under max_connections. @default 10 */
  poolSize?: number;
  /** Longest wait for a connection (new or from the pool). @default 2000 */
  connectTimeoutMs?: number;
  /** Longest time one store operation (all its statements) may take before it is abandoned. @default 3000 */
  queryTimeoutMs?: number;
  /** Run pending schema migrations at open (false: refuse a schema that is behind). @default true */
  migrate?: boolean;
  /** P-8 numbers for the shared throttle. */
  throttle?: Partial<ThrottlePolicy>;
  /** How often this process deletes expired ledger rows; 0 turns it off. @default 60_000 */
  cleanupIntervalMs?: number;
  /** Told about failures of the background clean-up (the next round tries again). */
  onBackgroundError?: (error: unknown) => void;
}

export interface PostgresStoreConfig {
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly queryTimeoutMs: number;
  readonly migrate: boolean;
  readonly throttle: ThrottlePolicy;
  readonly cleanupIntervalMs: number;
  readonly onBackgroundError: (error: unknown) => void;
}

const KNOWN: { [K in keyof PostgresStoreOptions]-?: true } = {
  poolSize: true,
  connectTimeoutMs: true,
  queryTimeoutMs: true,
  migrate: true,
  throttle: true,
  cleanupIntervalMs: true,
  onBackgroundError: true,
};

export function resolvePostgresOptions(options: PostgresStoreOptions): PostgresStoreConfig {
  if (typeof options !== 'object' || options === null) throw invalid('store options must be an object');
  for (const key of Object.keys(options)) {
    if (!(key in KNOWN)) throw invalid(`unknown PostgreSQL store option "${key}"`);
  }
  let throttle: ThrottlePolicy;
  try {
    throttle = resolveThrottlePolicy(options.throttle);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  const onBackgroundError = options.onBackgroundError ?? (() => undefined);
  if (typeof onBackgroundError !== 'function') throw invalid('onBackgroundError must be a function');
  if (options.migrate !== undefined && typeof options.migrate !== 'boolean') throw invalid('migrate must be true or false');
  return Object.freeze({
    poolSize: integerIn(options.poolSize ?? 10, 'poolSize', 1, 1000),
    connectTimeoutMs: integerIn(options.connectTimeoutMs ?? 2_000, 'connectTimeoutMs', 1, 600_000),
    queryTimeoutMs: integerIn(options.queryTimeoutMs ?? 3_000, 'queryTimeoutMs', 1, 600_000),
    migrate: options.migrate ?? true,
    throttle,
    cleanupIntervalMs: integerIn(options.cleanupIntervalMs ?? 60_000, 'cleanupIntervalMs', 0, 2 ** 31 - 1),
    onBackgroundError,
  });
}

function integerIn(value: unknown, name: string, min: number, max: number): number {
  if (Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max) return value as number;
  throw invalid(`${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
}

function invalid(message: string): ServiceError {
  return new ServiceError('ERR_INVALID_OPTION', message);
}
