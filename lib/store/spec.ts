// What the `store` option names (U-6): the process's memory, a PostgreSQL URL (S-1), or a file.

/** The `store` value of a store in the process's memory (U-6): nothing survives the process. */
export const MEMORY_STORE = ':memory:';

export type StoreKind = 'memory' | 'postgres' | 'file';

export function storeKind(spec: string): StoreKind {
  if (spec === MEMORY_STORE) return 'memory';
  return isPostgresUrl(spec) ? 'postgres' : 'file';
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
