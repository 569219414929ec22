// What the `store` option names (U-6): the process's memory, a PostgreSQL URL (S-1), or a file.
import { ServiceError } from '../errors.js';

/** The `store` value of a store in the process's memory (U-6): nothing survives the process. */
export const MEMORY_STORE = ':memory:';

export type StoreKind = 'memory' | 'postgres' | 'file';

/**
 * What `spec` names. A URL of another scheme (`mysql://…`, `file://…`), a near miss of a
 * PostgreSQL URL (`postgres:/…`, `postgresql:host…`, `postgres//…`, white space around it), a
 * PostgreSQL URL that does not parse (a port that is no number, an unclosed `[`) and a near miss
 * of `:memory:` (`:memory`, `:MEMORY:`) are `ERR_INVALID_OPTION`: taken as file paths, they would
 * make a directory of that name (with a URL's password in it) and a store nobody asked for, and a
 * URL that cannot be read would only fail at the first connection, as "unavailable". A refusal
 * starts with `name` (the option, or a command's argument: `FROM`).
 */
export function storeKind(spec: string, name = 'store'): StoreKind {
  if (spec === MEMORY_STORE) return 'memory';
  const refuse = (why: string): never => {
    throw new ServiceError('ERR_INVALID_OPTION', `${name}: ${why}`);
  };
  const trimmed = spec.trim();
  if (isPostgresUrl(spec)) {
    if (!URL.canParse(spec)) refuse(`${redactUrl(spec)} is no URL (a port is a number up to 65535, an IPv6 address goes in [ ]; percent-encode "@", ":" and "/" in a user name or password)`);
    return 'postgres';
  }
  if (isPostgresUrl(trimmed)) refuse(`the PostgreSQL URL ${JSON.stringify(redactUrl(spec))} has white space around it`);
  if (/^postgres(ql)?(:|\/\/)/i.test(trimmed)) refuse(`${redactUrl(spec)} is no PostgreSQL URL; one starts with postgres:// or postgresql://`);
  // Two characters at least: `C://data/users.json` is a Windows path, not a URL of scheme "C".
  const scheme = /^([a-z][a-z0-9+.-]+:)\/\//i.exec(trimmed)?.[1];
  if (scheme !== undefined) refuse(`a "${scheme}" URL is no store this service knows; give a file path, a postgres:// URL or ${MEMORY_STORE}`);
  if (spec.includes(':') && /^:?memory:?$/i.test(trimmed)) refuse(`${JSON.stringify(spec)} is no store; the store in memory is ${MEMORY_STORE}`);
  return 'file';
}

/** Is `spec` a PostgreSQL connection URL rather than a file path (S-1)? */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

/**
 * `spec` with any password in it replaced by `***`, for logs and error messages (P-11): the
 * user-info's (everything from the user name's `:` to the last `@`, so a password with an
 * unencoded `@` or `/` is hidden whole even where the URL does not parse) and the value of a
 * query parameter named like a password (`?password=…`, `sslpassword=…`, which node-postgres
 * reads too), also in near misses of a URL (`postgresql:user:pw@host`). Any other text is
 * returned as it is.
 */
export function redactUrl(spec: string): string {
  // Where the user-info would begin: after `scheme:` and its slashes, or after a `postgres//` that lost its colon.
  const head = /^\s*(?:[a-z][a-z0-9+.-]*:\/*|postgres(?:ql)?\/+)/i.exec(spec);
  if (head === null) return spec;
  const start = head[0].length;
  const at = spec.lastIndexOf('@');
  const colon = spec.indexOf(':', start);
  const out = at > start && colon >= 0 && colon < at ? `${spec.slice(0, colon + 1)}***${spec.slice(at)}` : spec;
  return out.replace(/([?&][^=&#]*password[^=&#]*=)[^&#]*/gi, '$1***');
}
