import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instrumentStore } from '../../lib/ops/instrument-store.js';

/** A store-shaped object with #private state, as the real stores have. */
class FakeStore {
  readonly #users = new Map([['a', 1]]);
  readonly throttle = { reserve: async (ok: boolean) => (ok ? 'ok' : Promise.reject(new Error('down'))) };
  get(name: string): number | undefined {
    return this.#users.get(name);
  }
  async update(name: string, value: number): Promise<void> {
    this.#users.set(name, value);
  }
  async ping(): Promise<void> {
    throw new Error('unreachable');
  }
  helper(): string {
    return 'not observed';
  }
}

test('H-5 instrumentStore times listed operations (ledgers too), counts failures, and forwards everything', async () => {
  const seen: string[] = [];
  const store = instrumentStore(new FakeStore(), { store: (op, seconds, failed) => seen.push(`${op}:${failed}:${seconds >= 0}`) });
  assert.equal(store.get('a'), 1, '#private fields still work');
  await store.update('b', 2);
  assert.equal(store.get('b'), 2);
  await assert.rejects(store.ping(), /unreachable/);
  assert.equal(await store.throttle.reserve(true), 'ok');
  await assert.rejects(store.throttle.reserve(false), /down/);
  assert.equal(store.helper(), 'not observed');
  assert.deepEqual(seen, ['get:false:true', 'update:false:true', 'get:false:true', 'ping:true:true', 'throttle.reserve:false:true', 'throttle.reserve:true:true']);
  assert.equal(store.throttle, store.throttle, 'one wrapper per ledger');
});
