// The service's metrics (H-5), one set per service instance. What a label may hold is decided
// here, from fixed sets: a route is the router's pattern (`/user/{name}`), never the raw path, so
// no user name reaches a scrape; a method outside the standard ones counts as `other`.
import { counter, gauge, histogram, type Family } from './exposition.js';

/** Why an authentication attempt was refused before any hashing (P-8) or for lack of room to hash. */
export type ThrottleKind = 'locked' | 'busy' | 'hash-queue-full';
export const THROTTLE_KINDS: readonly ThrottleKind[] = ['locked', 'busy', 'hash-queue-full'];

/** Store operations observed; any other method of a store is passed through unobserved. */
export const STORE_OPERATIONS = [
  'get', 'page', 'list', 'count', 'findByUserhash', 'update', 'ping', 'reserveAndGet',
  'throttle.reserve', 'throttle.settle', 'nonces.claim', 'issuance.take',
] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** The label of a request that matched no route (404s, and requests refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
// Seconds: from a cached 200 (sub-millisecond) to a queued scrypt hash under load (seconds).
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/** Every metric name this module exposes (the README lists them; a test checks both agree). */
export const METRIC_NAMES = [
  'httpskit_http_requests_total',
  'httpskit_http_request_duration_seconds',
  'httpskit_password_hashes_running',
  'httpskit_password_hashes_queued',
  'httpskit_throttle_refusals_total',
  'httpskit_store_operation_duration_seconds',
  'httpskit_store_operation_errors_total',
] as const;

export interface Metrics {
  /**
   * One answered request: its route label, method, status and time to the last byte handed to the
   * socket; without `seconds` (a request the HTTP parser refused, timed by nobody) it is counted only.
   */
  request(route: string, method: string, status: number, seconds?: number): void;
  /** A refused authentication attempt, by kind (the authenticator's onRefused, the hash gate). */
  throttled(kind: ThrottleKind): void;
  /** One store operation and whether it failed. */
  store(operation: StoreOperation, seconds: number, failed: boolean): void;
  /** The scrape body, in the text exposition format 0.0.4. */
  render(): string;
}

export interface MetricsOptions {
  /** Hashes running and waiting, read at scrape time (lib/users/hash-gate.ts). */
  readonly hashes: { readonly active: number; readonly queued: number };
}

export function createMetrics(options: MetricsOptions): Metrics {
  const requests = counter('httpskit_http_requests_total', 'Requests answered, by route pattern, method and status code.', ['route', 'method', 'status']);
  const durations = histogram('httpskit_http_request_duration_seconds', 'Time from a request to its response, by route pattern.', ['route'], REQUEST_BUCKETS);
  const refusals = counter(
    'httpskit_throttle_refusals_total',
    'Authentication attempts refused before hashing: locked (P-8 account or address limit, 429), busy (attempts in flight fill the budget; the attempt waits, then 503), hash-queue-full (503).',
    ['kind'],
    THROTTLE_KINDS.map((kind) => ({ kind })),
  );
  const storeTimes = histogram('httpskit_store_operation_duration_seconds', 'Time of user store operations, by operation.', ['operation'], STORE_BUCKETS);
  const storeErrors = counter('httpskit_store_operation_errors_total', 'User store operations that failed, by operation.', ['operation']);
  const families: Family[] = [
    requests,
    durations,
    gauge('httpskit_password_hashes_running', 'Password hashes running now.', () => options.hashes.active),
    gauge('httpskit_password_hashes_queued', 'Password hashes waiting for a slot now.', () => options.hashes.queued),
    refusals,
    storeTimes,
    storeErrors,
  ];
  return {
    request(route, method, status, seconds) {
      const m = METHODS.has(method) ? method : 'other';
      requests.inc({ route, method: m, status: String(status) });
      if (seconds !== undefined) durations.observe({ route }, seconds);
    },
    throttled(kind) {
      refusals.inc({ kind });
    },
    store(operation, seconds, failed) {
      storeTimes.observe({ operation }, seconds);
      if (failed) storeErrors.inc({ operation });
    },
    render: () => families.map((f) => f.render()).join(''),
  };
}
