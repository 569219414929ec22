/**
 * Stable codes for setup and programming failures. Tests and callers branch on the
 * code; the message is prose for humans and may change.
 */
export type ErrorCode =
  | 'ERR_INVALID_OPTION'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_STORE_CORRUPT'
  | 'ERR_STORE_LOCKED'
  | 'ERR_STORE_WRITE'
  | 'ERR_STORE_CLOSED'
  | 'ERR_STORE_UNSAFE'
  | 'ERR_STORE_UNAVAILABLE'
  | 'ERR_STORE_DRIVER'
  | 'ERR_STORE_VERSION'
  | 'ERR_STORE_SETTINGS'
  | 'ERR_STORE_NOT_EMPTY'
  | 'ERR_CERT_UNREADABLE'
  | 'ERR_USER_EXISTS'
  | 'ERR_USER_NOT_FOUND'
  | 'ERR_INVALID_NAME'
  | 'ERR_LAST_ADMIN'
  | 'ERR_PASSWORD_POLICY';

/** A failure of setup, configuration or storage, identified by a stable `code`. */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Codes that mean "the store cannot answer right now" (busy, unreachable, unwritable, or a file
 * found unsafe after start): a request gets 503 with Retry-After and nothing changed (S-6, L-2).
 */
export const STORE_UNAVAILABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'ERR_STORE_LOCKED',
  'ERR_STORE_WRITE',
  'ERR_STORE_CLOSED',
  'ERR_STORE_UNAVAILABLE',
  'ERR_STORE_UNSAFE',
]);
