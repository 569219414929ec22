// Options of openStore() (open.ts), validated once and frozen; one set for every store.
import { ServiceError } from '../errors.js';
import type { ThrottlePolicy } from './ledgers.js';
import type { Userhash } from './store.js';
import { resolveThrottlePolicy } from './throttle-policy.js';
import type { PostgresStoreOptions } from './postgres/postgres-options.js';

/** Points where a test (or an embedder) can observe or fail the store's writes. */
export interface StoreHooks {
  /** Runs before a journal line is written; throwing makes that update fail (ERR_STORE_WRITE). */
  beforeAppend?: () => void | Promise<void>;
  /** Runs after the line is written, before its fsync; throwing simulates a failed fsync. */
  beforeSync?: () => void | Promise<void>;
  /** Runs before a compaction writes a new snapshot; throwing makes the compaction fail. */
  beforeCompact?: () => void | Promise<void>;
  /** Told when a background compaction fails (the journal stays valid; it is retried later). */
  onCompactError?: (error: unknown) => void;
  /**
   * Told about something an operator should know that does not stop the store: a torn last
   * journal line (an unacknowledged write) being ignored, a file's mode narrowed to 0600.
   * The message is one line of prose; `fields`, when given, hold `file` and what was found.
   */
  onWarning?: (message: string, fields?: Readonly<Record<string, unknown>>) => void;
}

export interface StoreOptions {
  /** Clock used to judge a lock file's age. @default Date.now */
  now?: () => number;
  /** Compact once the journal is larger than this many bytes. @default 4 MiB */
  compactBytes?: number;
  /** How long to wait for another process's lock before ERR_STORE_LOCKED. @default 10_000 */
  lockTimeoutMs?: number;
  /** A lock file its holder has not refreshed for this long is taken over. @default 30_000 */
  staleLockMs?: number;
  hooks?: StoreHooks;
  /** P-8 numbers for the store's throttle ledger. @default DEFAULT_THROTTLE_POLICY */
  throttle?: Partial<ThrottlePolicy>;
  /** Pool and time-outs of a postgres:// store (S-6); ignored by the others. */
  postgres?: Omit<PostgresStoreOptions, 'throttle' | 'onBackgroundError'>;
  /**
   * RFC 7616 userhash, for findByUserhash() on the file and memory stores (PostgreSQL computes it
   * itself). The domain passes it in: the store knows nothing of Digest.
   */
  userhash?: Userhash;
}

export interface StoreConfig {
  readonly now: () => number;
  readonly compactBytes: number;
  readonly lockTimeoutMs: number;
  readonly staleLockMs: number;
  readonly hooks: StoreHooks;
  readonly throttle: ThrottlePolicy;
  readonly userhash: Userhash | undefined;
}

const KNOWN: { [K in keyof StoreOptions]-?: true } = { now: true, compactBytes: true, lockTimeoutMs: true, staleLockMs: true, hooks: true, throttle: true, postgres: true, userhash: true };
const KNOWN_HOOKS: { [K in keyof StoreHooks]-?: true } = { beforeAppend: true, beforeSync: true, beforeCompact: true, onCompactError: true, onWarning: true };

export function resolveStoreOptions(path: unknown, options: StoreOptions): StoreConfig {
  if (typeof path !== 'string' || path === '') throw invalid(`the store path must be a non-empty string, got ${JSON.stringify(path)}`);
  if (typeof options !== 'object' || options === null) throw invalid('store options must be an object');
  for (const key of Object.keys(options)) {
    if (!(key in KNOWN)) throw invalid(`unknown store option "${key}"`);
  }
  const hooks = options.hooks ?? {};
  if (typeof hooks !== 'object' || hooks === null) throw invalid('hooks must be an object');
  for (const [key, value] of Object.entries(hooks)) {
    if (!(key in KNOWN_HOOKS)) throw invalid(`unknown store hook "${key}"`);
    if (typeof value !== 'function') throw invalid(`hook ${key} must be a function`);
  }
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw invalid('now must be a function');
  if (options.userhash !== undefined && typeof options.userhash !== 'function') throw invalid('userhash must be a function');
  return Object.freeze({
    now,
    compactBytes: integerAtLeast(options.compactBytes ?? 4 * 1024 * 1024, 'compactBytes', 1),
    lockTimeoutMs: integerAtLeast(options.lockTimeoutMs ?? 10_000, 'lockTimeoutMs', 0),
    staleLockMs: integerAtLeast(options.staleLockMs ?? 30_000, 'staleLockMs', 1),
    hooks: Object.freeze({ ...hooks }),
    throttle: throttlePolicy(options.throttle),
    userhash: options.userhash,
  });
}

function throttlePolicy(options: Partial<ThrottlePolicy> | undefined): ThrottlePolicy {
  try {
    return resolveThrottlePolicy(options);
  } catch (error) {
    throw invalid((error as Error).message);
  }
}

function integerAtLeast(value: unknown, name: string, min: number): number {
  if (Number.isSafeInteger(value) && (value as number) >= min) return value as number;
  throw invalid(`${name} must be an integer of at least ${min}, got ${String(value)}`);
}

function invalid(message: string): ServiceError {
  return new ServiceError('ERR_INVALID_OPTION', message);
}
