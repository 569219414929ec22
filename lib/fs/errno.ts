// The `code` of a Node.js system error (ENOENT, EEXIST …), asked without a cast at every use.

export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

/** True when `error` is a system error with this code. */
export function isErrno(error: unknown, code: string): boolean {
  return errorCode(error) === code;
}
