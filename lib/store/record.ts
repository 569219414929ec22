// The shape of one user record, checked in both directions: records read from disk (a bad one
// means the store is corrupt) and records handed to Store.update (a bad one is a programming error).
import { ServiceError } from '../errors.js';
import { checkUserName } from '../users/names.js';
import type { ResetTokenRecord, UserRecord, Userhash } from './store.js';

export type RecordCheck = { ok: true; record: UserRecord } | { ok: false; problem: string; nameProblem: boolean };

const KNOWN_KEYS: ReadonlySet<string> = new Set<keyof UserRecord>([
  'name',
  'role',
  'hash',
  'digest',
  'resetTokens',
  'createdAt',
  'passwordChangedAt',
]);

/** Why `name` cannot be stored (U-2, rules in names.ts), or undefined when it can. */
function nameProblem(name: string): string | undefined {
  const check = checkUserName(name);
  if (!check.ok) return `is not a valid user name (${check.violation})`;
  // Stored names are already normalised; storing an NFD twin would make two spellings of one name.
  return check.name === name ? undefined : 'is not in Unicode normalization form NFC';
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Checks an untrusted value against the UserRecord shape and returns a fresh, frozen copy holding
 * only the known fields. Unknown fields are refused rather than carried: a field this version does
 * not understand means the file was written by something else, and silently dropping it on the next
 * compaction would lose data.
 *
 * `names: 'policy'` (for writes) applies U-2 to the name. `names: 'shape'` (for loading) only asks
 * for a non-empty string: the names on disk passed the policy when written, and a later, stricter
 * policy must not turn an existing store into a "corrupt" one. It also keeps loading fast (this
 * runs 100,000 times at start-up).
 */
export function checkRecord(value: unknown, names: 'policy' | 'shape'): RecordCheck {
  if (!isPlainObject(value)) return fail('a user must be a JSON object');
  const { name, role, hash, digest, resetTokens, createdAt, passwordChangedAt } = value;
  // Counting instead of looking up every key: same answer, a fraction of the cost.
  const expected = 5 + ('digest' in value ? 1 : 0) + ('resetTokens' in value ? 1 : 0);
  if (Object.keys(value).length !== expected) {
    const unknown = Object.keys(value).find((key) => !KNOWN_KEYS.has(key));
    return fail(unknown === undefined ? 'a required field is missing' : `unknown field ${JSON.stringify(unknown)}`);
  }
  if (typeof name !== 'string') return fail('"name" must be a string');
  if (names === 'policy') {
    const badName = nameProblem(name);
    if (badName !== undefined) return { ok: false, problem: `user name ${JSON.stringify(name)} ${badName}`, nameProblem: true };
  } else if (name === '') {
    return fail('"name" must not be empty');
  }
  if (role !== 'user' && role !== 'admin') return fail(`"role" of ${JSON.stringify(name)} must be "user" or "admin"`);
  if (typeof hash !== 'string' || hash === '') return fail(`"hash" of ${JSON.stringify(name)} must be a non-empty string`);
  if (!isTime(createdAt)) return fail(`"createdAt" of ${JSON.stringify(name)} must be a finite number`);
  if (!isTime(passwordChangedAt)) return fail(`"passwordChangedAt" of ${JSON.stringify(name)} must be a finite number`);

  const record: Mutable<UserRecord> = { name, role, hash, createdAt, passwordChangedAt };
  if ('digest' in value) {
    if (typeof digest !== 'string') return fail(`"digest" of ${JSON.stringify(name)} must be a string`);
    record.digest = digest;
  }
  if ('resetTokens' in value) {
    if (!Array.isArray(resetTokens)) return fail(`"resetTokens" of ${JSON.stringify(name)} must be an array`);
    const copied: ResetTokenRecord[] = [];
    for (const token of resetTokens as unknown[]) {
      if (!isPlainObject(token) || Object.keys(token).length !== 2 || typeof token.hash !== 'string' || !isTime(token.expiresAt)) {
        return fail(`"resetTokens" of ${JSON.stringify(name)} must hold only {"hash": string, "expiresAt": number}`);
      }
      copied.push(Object.freeze({ hash: token.hash, expiresAt: token.expiresAt }));
    }
    record.resetTokens = Object.freeze(copied);
  }
  return { ok: true, record: Object.freeze(record) };
}

function fail(problem: string): RecordCheck {
  return { ok: false, problem, nameProblem: false };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * The record an update function returned for `name`, checked (a bad one is the caller's error:
 * ERR_INVALID_NAME or ERR_INVALID_OPTION) and frozen; every store writes only what this returns.
 */
export function checkWrite(name: string, next: UserRecord, names: 'policy' | 'shape'): UserRecord {
  const checked = checkRecord(next, names);
  if (!checked.ok) throw new ServiceError(checked.nameProblem ? 'ERR_INVALID_NAME' : 'ERR_INVALID_OPTION', `update(${JSON.stringify(name)}): ${checked.problem}`);
  if (checked.record.name !== name) {
    throw new ServiceError('ERR_INVALID_OPTION', `update(${JSON.stringify(name)}) returned a record named ${JSON.stringify(checked.record.name)}`);
  }
  return checked.record;
}

/** The userhash function a file or memory store was opened with (RFC 7616 §3.4.4), or a clear error. */
export function needUserhash(userhash: Userhash | undefined): Userhash {
  if (userhash === undefined) throw new ServiceError('ERR_INVALID_OPTION', 'this store was opened without a userhash function (the `userhash` store option)');
  return userhash;
}
