// Loads the optional peer dependency `pg` (S-1) only when a postgres:// store is asked for, so
// the package itself keeps zero run-time dependencies.
import type * as PgModule from 'pg';
import { ServiceError } from '../../errors.js';

export type Pg = typeof PgModule;

/** `pg` as its CommonJS namespace; ERR_STORE_DRIVER naming the package when it is not installed. */
export async function loadPg(): Promise<Pg> {
  let loaded: { default?: Pg } & Partial<Pg>;
  try {
    // A variable specifier keeps bundlers and tsc from resolving the optional package eagerly.
    const specifier = 'pg';
    loaded = (await import(specifier)) as typeof loaded;
  } catch (error) {
    if (isMissing(error)) {
      throw new ServiceError('ERR_STORE_DRIVER', 'a postgres:// store needs the optional package "pg": install it beside httpskit with `npm install pg@^8`', { cause: error });
    }
    throw error;
  }
  return (loaded.default ?? loaded) as Pg;
}

function isMissing(error: unknown): boolean {
  const { code, message } = error as NodeJS.ErrnoException;
  // Only pg itself: a broken install of one of pg's own dependencies is a different fault.
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && /['"]pg['"]/.test(String(message));
}
