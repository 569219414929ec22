// One open for every store (U-6): `:memory:` is the process's memory, a postgres:// URL is
// PostgreSQL (S-1, which needs the optional package `pg`), anything else is the JSON file.
import { openFileStore } from './file/file-store.js';
import { openMemoryStore } from './memory/memory-store.js';
import { resolveStoreOptions, type StoreOptions } from './options.js';
import { storeKind } from './spec.js';
import type { Store } from './store.js';

export type { StoreHooks, StoreOptions } from './options.js';
export type { Store, UserRecord } from './store.js';

/**
 * Opens the store `spec` names: a file store is created empty when neither it nor its journal
 * exists; a memory store is always new and empty.
 */
export async function openStore(spec: string, options: StoreOptions = {}): Promise<Store> {
  const config = resolveStoreOptions(spec, options);
  switch (storeKind(spec)) {
    case 'memory':
      return openMemoryStore(config);
    case 'postgres': {
      const { openPostgresStore } = await import('./postgres/postgres-store.js');
      const { onWarning } = config.hooks;
      return openPostgresStore(spec, {
        ...options.postgres,
        throttle: config.throttle,
        ...(onWarning === undefined ? {} : { onBackgroundError: (error: unknown) => onWarning(`store clean-up failed: ${(error as Error).message}`) }),
      });
    }
    case 'file':
      return openFileStore(spec, config);
  }
}
