// The store conformance suite against the memory store (U-6). One process holds one memory store:
// the suite's "second instance" on a backing store is the same store, reached a second time.
import { computeUserhash } from '../../lib/auth/digest-hash.js';
import { openStore } from '../../lib/store/open.js';
import type { Store } from '../../lib/store/store.js';
import { storeConformance } from './conformance.js';

storeConformance('memory', async () => {
  let store: Promise<Store> | undefined;
  return { open: (options = {}) => (store ??= openStore(':memory:', { ...options, userhash: computeUserhash })) };
});
