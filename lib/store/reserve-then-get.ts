// reserveAndGet()'s shared parts. The stores whose ledgers and users are in this process (file,
// memory) reserve, then read, as two calls: neither costs a round trip, so nothing is gained by
// fusing them. PostgreSQL does both in one statement (postgres/postgres-store.ts).
import type { ThrottleLedger } from './ledgers.js';
import type { ReservedRead, Store, UserRecord } from './store.js';

export async function reserveThenGet(store: Pick<Store, 'get' | 'throttle'>, account: string, address: string): Promise<ReservedRead> {
  const reservation = await store.throttle.reserve(account, address);
  if (!reservation.ok) return { reservation };
  return { reservation, record: await releasingOnFailure(store.throttle, reservation.id, account, address, () => store.get(account)) };
}

/**
 * The admitted reservation's user, by `read`; when the read fails (a store that cannot answer, a
 * corrupt record), the reservation is ended without a verdict before the error goes on, as the
 * authenticator does for a failure after it: it must not hold a place in the budgets until its
 * lease expires (P-8).
 */
export async function releasingOnFailure(
  throttle: ThrottleLedger,
  id: string,
  account: string,
  address: string,
  read: () => Promise<UserRecord | undefined> | UserRecord | undefined,
): Promise<UserRecord | undefined> {
  try {
    return await read();
  } catch (error) {
    await throttle.settle(id, account, address, 'none');
    throw error;
  }
}
