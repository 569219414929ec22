/**
 * Stable codes for setup and programming failures. Tests and callers branch on the
 * code; the message is prose for humans and may change. Each is described in
 * docs/reference/errors.md (A-11; test/contract/errors-doc.test.ts keeps the two in step).
 */
export const ERROR_CODES = [
  'ERR_INVALID_OPTION',
  'ERR_INVALID_ARGUMENT',
  'ERR_SERVICE_STATE',
  'ERR_STORE_CORRUPT',
  'ERR_STORE_LOCKED',
  'ERR_STORE_WRITE',
  'ERR_STORE_CLOSED',
  'ERR_STORE_UNSAFE',
  'ERR_STORE_UNAVAILABLE',
  'ERR_STORE_DRIVER',
  'ERR_STORE_VERSION',
  'ERR_STORE_SETTINGS',
  'ERR_STORE_NOT_EMPTY',
  'ERR_CERT_UNREADABLE',
  'ERR_USER_EXISTS',
  'ERR_USER_NOT_FOUND',
  'ERR_INVALID_NAME',
  'ERR_LAST_ADMIN',
  'ERR_PASSWORD_POLICY',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

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
  // a closed service opens no store again; a request that needs one is answered 503.
  'ERR_SERVICE_STATE',
]);
