// What the `store` option names (U-6): the process's memory, a PostgreSQL URL (S-1), or a file.
import { ServiceError } from '../errors.js';

/** The `store` value of a store in the process's memory (U-6): nothing survives the process. */
export const MEMORY_STORE = ':memory:';

export type StoreKind = 'memory' | 'postgres' | 'file';

/**
 * What `spec` names. A URL of another scheme (`mysql://…`, `file://…`) and a near miss of
 * `:memory:` (`:memory`, `:MEMORY:`) are `ERR_INVALID_OPTION`: taken as file paths, they would
 * make a directory of that name (with a URL's password in it) and a store nobody asked for.
 */
export function storeKind(spec: string): StoreKind {
  if (spec === MEMORY_STORE) return 'memory';
  if (isPostgresUrl(spec)) return 'postgres';
  // Two characters at least: `C://data/users.json` is a Windows path, not a URL of scheme "C".
  const scheme = /^([a-z][a-z0-9+.-]+:)\/\//i.exec(spec)?.[1];
  if (scheme !== undefined) {
    throw new ServiceError('ERR_INVALID_OPTION', `store: a "${scheme}" URL is no store this service knows; give a file path, a postgres:// URL or ${MEMORY_STORE}`);
  }
  if (spec.includes(':') && /^:?memory:?$/i.test(spec.trim())) {
    throw new ServiceError('ERR_INVALID_OPTION', `store: ${JSON.stringify(spec)} is no store; the store in memory is ${MEMORY_STORE}`);
  }
  return 'file';
}

/** Is `spec` a PostgreSQL connection URL rather than a file path (S-1)? */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

/** The URL with its password replaced, for logs and error messages (P-11). */
export function redactUrl(spec: string): string {
  try {
    const url = new URL(spec);
    if (url.password !== '') url.password = '***';
    return url.href;
  } catch {
    return spec.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
  }
}
