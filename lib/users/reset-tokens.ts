// Password reset tokens (P-9): 32 random bytes, base64url, handed out once; the store keeps only
// their SHA-256. 256 bits of entropy need no salt or slow hash (ASVS 5.0 6.5.2: secrets of at
// least 112 bits may be stored with a plain cryptographic hash).
import { Buffer } from 'node:buffer';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../errors.js';
import type { ResetTokenRecord, Store, UserRecord } from '../store/store.js';

export interface IssueOptions {
  /** Lifetime of the token. @default 15 minutes */
  ttlMs?: number;
  now?: () => number;
  /** Live tokens a user may hold; one more is refused (ERR_RESET_TOKEN_LIMIT), never an earlier one dropped (P-12). @default MAX_LIVE_TOKENS */
  maxPerUser?: number;
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: number;
}

/** P-12: the live reset tokens a user may hold at once by default (HTTP issues at most 3 an hour). */
export const MAX_LIVE_TOKENS = 5;

const TOKEN_BYTES = 32;
const DEFAULT_TTL_MS = 15 * 60 * 1000;
const MAX_TTL_MS = 24 * 60 * 60 * 1000;
// base64url of 32 bytes is 43 characters; anything else cannot be one of ours.
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Issues a reset token for an existing user: ERR_USER_NOT_FOUND when there is none, and
 * ERR_RESET_TOKEN_LIMIT when the user already holds `maxPerUser` live tokens (P-12: issuing never
 * invalidates an earlier one, so one must be used or expire first).
 */
export async function issueResetToken(store: Store, name: string, options: IssueOptions = {}): Promise<IssuedToken> {
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  const maxPerUser = options.maxPerUser ?? MAX_LIVE_TOKENS;
  const now = options.now ?? Date.now;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) {
    throw new ServiceError('ERR_INVALID_OPTION', `ttlMs must be an integer from 1 to ${MAX_TTL_MS} (24 hours), got ${String(ttlMs)}`);
  }
  if (!Number.isSafeInteger(maxPerUser) || maxPerUser < 1) {
    throw new ServiceError('ERR_INVALID_OPTION', `maxPerUser must be a positive integer, got ${String(maxPerUser)}`);
  }
  if (typeof now !== 'function') throw new ServiceError('ERR_INVALID_OPTION', 'now must be a function');
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const hash = sha256(token);
  return store.update(name, (current) => {
    if (current === undefined) throw new ServiceError('ERR_USER_NOT_FOUND', `no user ${JSON.stringify(name)}`);
    const at = now();
    const expiresAt = at + ttlMs;
    const live = (current.resetTokens ?? []).filter((t) => t.expiresAt > at);
    if (live.length >= maxPerUser) {
      const first = Math.min(...live.map((t) => t.expiresAt));
      throw new ServiceError(
        'ERR_RESET_TOKEN_LIMIT',
        `"${name}" already holds ${live.length} live reset tokens, the most allowed; another can be issued once one is used or expires (the first at ${new Date(first).toISOString()})`,
      );
    }
    const tokens: ResetTokenRecord[] = [...live, { hash, expiresAt }];
    return { next: { ...current, resetTokens: tokens }, result: { token, expiresAt } };
  });
}

/**
 * Spends a token of `name`: true exactly once per live token. The check and the removal happen
 * in one store update, so of two concurrent calls with the same token only one succeeds.
 * A token of another user, an expired or unknown one, or one that is not even shaped like a
 * token gives false. Expired tokens of the user are pruned on the way.
 */
export async function consumeResetToken(store: Store, name: string, token: string, options: { now?: () => number } = {}): Promise<boolean> {
  const now = options.now ?? Date.now;
  // Wire input: malformed is simply "not a valid token", and costs no store access.
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) return false;
  return store.update(name, (current) => {
    if (current === undefined) return { next: undefined, result: false };
    const at = now();
    const stored = current.resetTokens ?? [];
    const live = stored.filter((t) => t.expiresAt > at);
    const match = findToken(live, token);
    if (match < 0) {
      const pruned = live.length !== stored.length;
      return { next: pruned ? { ...current, resetTokens: live } : undefined, result: false };
    }
    return { next: { ...current, resetTokens: live.filter((_, index) => index !== match) }, result: true };
  });
}

/**
 * True when `token` is one of the record's live tokens, without spending it. The password change
 * spends it by writing `resetTokens: []` in the same store update that sets the new hash.
 */
export function hasLiveResetToken(record: UserRecord, token: string, now: number): boolean {
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) return false;
  return findToken((record.resetTokens ?? []).filter((t) => t.expiresAt > now), token) >= 0;
}

/** Index of `token` among `tokens`, comparing every stored hash in constant time (no early stop); -1 if absent. */
function findToken(tokens: readonly ResetTokenRecord[], token: string): number {
  const presented = Buffer.from(sha256(token), 'base64url');
  let match = -1;
  tokens.forEach((t, index) => {
    const candidate = Buffer.from(t.hash, 'base64url');
    if (candidate.length === presented.length && timingSafeEqual(candidate, presented)) match = index;
  });
  return match;
}

function sha256(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}
