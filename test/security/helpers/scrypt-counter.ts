// Counts the scrypt computations this process runs (issue: "count them, not just the statuses").
// Hashes run on worker threads (lib/users/scrypt-pool.ts), where wrapping node:crypto in this
// thread would see nothing; the pool counts every hash it starts, and this reads that count.
import { scryptStats } from '../../../lib/users/scrypt-pool.js';

export interface ScryptCounter {
  /** Hashes started since the counter was made or last reset. */
  readonly count: number;
  /** Their work, N·r·p summed. */
  readonly work: number;
  reset(): void;
  /** Kept for callers that restored a wrapped scrypt; nothing is wrapped now. */
  restore(): void;
}

export function countScrypt(): ScryptCounter {
  let base = scryptStats();
  return {
    get count() {
      return scryptStats().count - base.count;
    },
    get work() {
      return scryptStats().work - base.work;
    },
    reset() {
      base = scryptStats();
    },
    restore() {},
  };
}
