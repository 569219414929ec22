// reserveAndGet() for the stores whose ledgers and users are in this process (file, memory): the
// reservation, then the read, as two calls; neither costs a round trip, so nothing is gained by
// fusing them. PostgreSQL does both in one statement (postgres/postgres-store.ts).
import type { ReservedRead, Store } from './store.js';

export async function reserveThenGet(store: Pick<Store, 'get' | 'throttle'>, account: string, address: string): Promise<ReservedRead> {
  const reservation = await store.throttle.reserve(account, address);
  return reservation.ok ? { reservation, record: await store.get(account) } : { reservation };
}
