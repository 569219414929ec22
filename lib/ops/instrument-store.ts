// H-5: store operation latency and errors, measured around any store implementation (file or
// database) without either knowing. The wrapper forwards everything; the operations listed in
// STORE_OPERATIONS (including the ledgers' methods, `throttle.reserve` …) are timed, and a throw or
// a rejection counts as an error. Method calls keep the real store as `this`, so its #private
// fields keep working.
import { process } from '../process.js';
import { STORE_OPERATIONS, type Metrics, type StoreOperation } from './metrics.js';

const OBSERVED: ReadonlySet<string> = new Set(STORE_OPERATIONS);
const LEDGERS: ReadonlySet<string> = new Set(['throttle', 'nonces', 'issuance']);

export function instrumentStore<S extends object>(store: S, metrics: Pick<Metrics, 'store'>): S {
  return wrap(store, '', metrics);
}

function wrap<T extends object>(target: T, prefix: string, metrics: Pick<Metrics, 'store'>): T {
  const ledgers = new Map<string, object>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof property !== 'string') return value;
      const name = `${prefix}${property}`;
      if (prefix === '' && LEDGERS.has(property) && typeof value === 'object' && value !== null) {
        let ledger = ledgers.get(property);
        if (ledger === undefined) ledgers.set(property, (ledger = wrap(value, `${property}.`, metrics)));
        return ledger;
      }
      if (typeof value !== 'function') return value;
      if (!OBSERVED.has(name)) return (value as (...args: unknown[]) => unknown).bind(object);
      return (...args: unknown[]): unknown => timed(name as StoreOperation, () => (value as (...a: unknown[]) => unknown).apply(object, args), metrics);
    },
  });
}

function timed(operation: StoreOperation, call: () => unknown, metrics: Pick<Metrics, 'store'>): unknown {
  const started = process.hrtime.bigint();
  const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9;
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    metrics.store(operation, seconds(), true);
    throw error;
  }
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    return (result as Promise<unknown>).then(
      (value) => {
        metrics.store(operation, seconds(), false);
        return value;
      },
      (error: unknown) => {
        metrics.store(operation, seconds(), true);
        throw error;
      },
    );
  }
  metrics.store(operation, seconds(), false);
  return result;
}
