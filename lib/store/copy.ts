// `store copy FROM TO` (S-5): every user from one store into another (file to PostgreSQL and back),
// records verbatim (hashes, sealed Digest secrets, reset tokens, times). The target must hold no
// user: a copy never merges, so it can never overwrite anyone.
import { ServiceError } from '../errors.js';
import type { Store } from './store.js';

/** Users written at once; enough to hide a database round trip, few enough for any pool. */
const PARALLEL = 8;

export async function copyStore(from: Store, to: Store): Promise<{ readonly copied: number }> {
  const existing = await to.count();
  if (existing > 0) throw new ServiceError('ERR_STORE_NOT_EMPTY', `the target store already holds ${existing} user${existing === 1 ? '' : 's'}; store copy needs an empty one`);
  const users = await from.list();
  let next = 0;
  async function worker(): Promise<void> {
    for (let user = users[next++]; user !== undefined; user = users[next++]) {
      const record = user;
      const created = await to.update(record.name, (current) => (current === undefined ? { next: record, result: true } : { next: undefined, result: false }), { verbatim: true });
      // Someone else wrote to the target during the copy: stop rather than overwrite them.
      if (!created) throw new ServiceError('ERR_STORE_NOT_EMPTY', `user "${record.name}" appeared in the target store during the copy`);
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, users.length) }, worker));
  return { copied: users.length };
}
