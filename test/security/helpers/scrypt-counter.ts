// Counts scrypt computations in this process (issue 5: "count them"). The service runs in-process,
// and lib/users/password-hash.ts imports `scrypt` from node:crypto as an ES module binding, so
// the counter replaces the CommonJS export and syncs the builtin ESM exports to it.
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';

export interface ScryptCounter {
  readonly count: number;
  reset(): void;
  /** Puts the original scrypt back. */
  restore(): void;
}

export function countScrypt(): ScryptCounter {
  const original = crypto.scrypt;
  let count = 0;
  const counting = ((...args: Parameters<typeof crypto.scrypt>) => {
    count++;
    return (original as (...a: unknown[]) => void)(...args);
  }) as typeof crypto.scrypt;
  (crypto as { scrypt: typeof crypto.scrypt }).scrypt = counting;
  syncBuiltinESMExports();
  return {
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
    restore() {
      (crypto as { scrypt: typeof crypto.scrypt }).scrypt = original;
      syncBuiltinESMExports();
    },
  };
}
