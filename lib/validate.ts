import { ServiceError } from './errors.js';

/**
 * Argument checks for the library's public calls (A-11), in the manner of Node core's
 * `validators.js`: `(value, name)`, and a ServiceError `ERR_INVALID_ARGUMENT` that names the
 * argument and what it got, instead of a TypeError from somewhere inside. Each asserts the type
 * for TypeScript callers too.
 */

/** ERR_INVALID_ARGUMENT with a message of the caller's that names the argument. */
export function argumentError(message: string): ServiceError {
  return new ServiceError('ERR_INVALID_ARGUMENT', message);
}

/** `name must be …, got …`: the message every check below throws. */
export function invalidArgument(name: string, expected: string, value: unknown): ServiceError {
  return new ServiceError('ERR_INVALID_ARGUMENT', `${name} must be ${expected}, got ${describe(value)}`);
}

export function validateString(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string') throw invalidArgument(name, 'a string', value);
}

/** A plain options object, or undefined (the usual optional last argument). */
export function validateOptionalObject(value: unknown, name: string): asserts value is Readonly<Record<string, unknown>> | undefined {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) throw invalidArgument(name, 'an object', value);
}

export function validateOptionalBoolean(value: unknown, name: string): asserts value is boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') throw invalidArgument(name, 'true or false', value);
}

export function validateOptionalInteger(value: unknown, name: string, min: number, max: number): asserts value is number | undefined {
  if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)) {
    throw invalidArgument(name, `an integer from ${min} to ${max}`, value);
  }
}

export function validateFunction(value: unknown, name: string): asserts value is (...args: never[]) => unknown {
  if (typeof value !== 'function') throw invalidArgument(name, 'a function', value);
}

/** What a value is, for a message: its type, and a short rendering of a primitive. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case 'number':
    case 'bigint':
    case 'boolean':
      return `${typeof value} ${String(value)}`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return `an object (${(value as object).constructor?.name ?? 'null prototype'})`;
  }
}
