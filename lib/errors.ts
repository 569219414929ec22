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
  'ERR_RESET_TOKEN_LIMIT',
  'ERR_PASSWORD_POLICY',
  'ERR_HASH_BUSY',
  'ERR_DIGEST_KEY',
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

const STORE_DETAIL = 'The user store cannot answer right now; nothing was changed. Retry shortly.';

/**
 * Codes that mean "the service cannot answer right now; retry shortly": a request gets 503
 * `overloaded` with Retry-After and nothing changed. The one list of them, with what the caller
 * is told: the store is busy, unreachable, unwritable, or found unsafe or unreadable after start (S-6, L-2), or
 * the hashing queue is full (P-8).
 */
export const RETRY_LATER: ReadonlyMap<ErrorCode, string> = new Map<ErrorCode, string>([
  ['ERR_STORE_LOCKED', STORE_DETAIL],
  ['ERR_STORE_WRITE', STORE_DETAIL],
  ['ERR_STORE_CLOSED', STORE_DETAIL],
  ['ERR_STORE_UNAVAILABLE', STORE_DETAIL],
  ['ERR_STORE_UNSAFE', STORE_DETAIL],
  // A store file that stopped parsing while serving (changed by hand, a bad restore): this
  // instance cannot answer from it, and /readyz says so too (H-3); at start it is a refusal.
  ['ERR_STORE_CORRUPT', STORE_DETAIL],
  ['ERR_HASH_BUSY', 'Too many password operations at once; retry shortly.'],
  // a closed service opens no store again; a request that needs one is answered 503.
  ['ERR_SERVICE_STATE', 'The service is shutting down; retry on another instance.'],
]);
