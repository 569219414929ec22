// The shape of one user record, checked in both directions: records read from disk (a bad one
// means the store is corrupt) and records handed to Store.update (a bad one is a programming error).

/** A reset token as stored: only its SHA-256, never the token itself (P-9). */
export interface ResetTokenRecord {
  /** base64url SHA-256 of the token. */
  readonly hash: string;
  /** Milliseconds since the epoch; the token is dead from this instant on. */
  readonly expiresAt: number;
}

/** One user as the store keeps it (U-2). */
export interface UserRecord {
  readonly name: string;
  readonly role: 'user' | 'admin';
  /** PHC string (U-3). */
  readonly hash: string;
  /** Opaque encrypted Digest secret (P-10); absent while Digest is off. */
  readonly digest?: string;
  readonly resetTokens?: readonly ResetTokenRecord[];
  readonly createdAt: number;
  readonly passwordChangedAt: number;
}

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

const MAX_NAME_LENGTH = 64;

// U-2: control characters (Cc) can't be typed or logged safely; "/" would break the path
// /user/{name}/password and ":" can't appear in an RFC 7617 user-id.
const FORBIDDEN_IN_NAME = /[\p{Cc}/:]/u;
// With the u flag, \p{Cs} matches only unpaired surrogates, which no encoding can carry.
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `name` is not a valid user name (U-2), or undefined when it is. */
export function userNameProblem(name: string): string | undefined {
  // Count code points, not UTF-16 units: "1–64 characters".
  let length = 0;
  for (const _ of name) length++;
  if (length < 1 || length > MAX_NAME_LENGTH) return `must be 1 to ${MAX_NAME_LENGTH} characters, got ${length}`;
  if (FORBIDDEN_IN_NAME.test(name)) return 'must not contain control characters, "/" or ":"';
  if (LONE_SURROGATE.test(name)) return 'must not contain lone surrogates';
  if (name.normalize('NFC') !== name) return 'must be in Unicode normalization form NFC';
  return undefined;
}

/**
 * Checks an untrusted value against the UserRecord shape and returns a fresh, frozen copy holding
 * only the known fields. Unknown fields are refused rather than carried: a field this version does
 * not understand means the file was written by something else, and silently dropping it on the next
 * compaction would lose data.
 */
export function checkRecord(value: unknown): RecordCheck {
  if (!isPlainObject(value)) return fail('a user must be a JSON object');
  for (const key of Object.keys(value)) {
    if (!KNOWN_KEYS.has(key)) return fail(`unknown field ${JSON.stringify(key)}`);
  }
  const { name, role, hash, digest, resetTokens, createdAt, passwordChangedAt } = value;
  if (typeof name !== 'string') return fail('"name" must be a string');
  const nameProblem = userNameProblem(name);
  if (nameProblem !== undefined) return { ok: false, problem: `user name ${JSON.stringify(name)} ${nameProblem}`, nameProblem: true };
  if (role !== 'user' && role !== 'admin') return fail(`"role" of ${JSON.stringify(name)} must be "user" or "admin"`);
  if (typeof hash !== 'string' || hash === '') return fail(`"hash" of ${JSON.stringify(name)} must be a non-empty string`);
  if (digest !== undefined && typeof digest !== 'string') return fail(`"digest" of ${JSON.stringify(name)} must be a string`);
  if (!isTime(createdAt)) return fail(`"createdAt" of ${JSON.stringify(name)} must be a finite number`);
  if (!isTime(passwordChangedAt)) return fail(`"passwordChangedAt" of ${JSON.stringify(name)} must be a finite number`);

  let tokens: readonly ResetTokenRecord[] | undefined;
  if (resetTokens !== undefined) {
    if (!Array.isArray(resetTokens)) return fail(`"resetTokens" of ${JSON.stringify(name)} must be an array`);
    const copied: ResetTokenRecord[] = [];
    for (const token of resetTokens as unknown[]) {
      if (!isPlainObject(token) || Object.keys(token).length !== 2 || typeof token.hash !== 'string' || !isTime(token.expiresAt)) {
        return fail(`"resetTokens" of ${JSON.stringify(name)} must hold only {"hash": string, "expiresAt": number}`);
      }
      copied.push(Object.freeze({ hash: token.hash, expiresAt: token.expiresAt }));
    }
    tokens = Object.freeze(copied);
  }

  const record: UserRecord = {
    name,
    role,
    hash,
    ...(digest === undefined ? {} : { digest }),
    ...(tokens === undefined ? {} : { resetTokens: tokens }),
    createdAt,
    passwordChangedAt,
  };
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
