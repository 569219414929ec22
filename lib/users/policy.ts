// The password policy of CONTRACT P-6 (NIST SP 800-63B-4 §3.1.1.2): length in
// code points, no control characters, not common, not the username, not the
// current password. No composition rules (NIST: "SHALL NOT impose").

import { isCommonPassword } from './common-passwords.js';
import { hasLoneSurrogate, preparePassword } from './prepare.js';

/** A broken rule. Codes, not prose: the HTTP layer and the CLI word them. */
export type PolicyViolation =
  | 'too-short'
  | 'too-long'
  | 'control-character'
  | 'common-password'
  | 'contains-username'
  | 'same-as-current';

export interface PolicyContext {
  /** The user whose password this is (the target, not the caller). */
  readonly username: string;
  /** Fewest code points allowed (P-6: 15 by default, configurable down to 8). */
  readonly minLength: number;
  /** Most code points allowed. @default 1024 */
  readonly maxLength?: number;
  /** True when the prepared candidate is the current password (verify it against the stored hash). */
  readonly isCurrent?: (prepared: string) => Promise<boolean>;
}

/** Default maximum length in code points (P-6). */
export const MAX_PASSWORD_LENGTH = 1024;

// Usernames shorter than this are only refused as the whole password, not as a
// part of it: "contains 'al'" would ban a good share of all passphrases.
const MIN_CONTAINED_USERNAME = 4;

const CONTROL = /\p{Cc}/u;

/**
 * Checks a new password, as received, against P-6 and returns every rule it
 * breaks, in the order of {@link PolicyViolation} (empty = acceptable).
 * The expensive `isCurrent` check (a full scrypt) runs only when nothing else
 * is wrong: the answer is a refusal either way, and refusals should be cheap.
 * The candidate must be well-formed (see hasLoneSurrogate): refusing that is a
 * 400 the caller owes before the policy (U-4), so it throws TypeError here.
 */
export async function checkPasswordPolicy(candidate: string, ctx: PolicyContext): Promise<PolicyViolation[]> {
  const maxLength = ctx.maxLength ?? MAX_PASSWORD_LENGTH;
  checkContext(ctx, maxLength);
  if (hasLoneSurrogate(candidate)) throw new TypeError('password has a lone surrogate; refuse it before the policy (U-4)');

  // P-6 counts characters of the password as it will be hashed (U-4).
  const prepared = preparePassword(candidate);
  const length = Array.from(prepared).length;
  const violations: PolicyViolation[] = [];
  if (length < ctx.minLength) violations.push('too-short');
  if (length > maxLength) violations.push('too-long');
  // Cc covers \t \n \r, NUL, DEL and C1: a stray trailing newline is refused, never trimmed.
  if (CONTROL.test(prepared)) violations.push('control-character');
  if (isCommonPassword(prepared)) violations.push('common-password');
  if (containsUsername(prepared, ctx.username)) violations.push('contains-username');
  if (violations.length === 0 && ctx.isCurrent !== undefined && (await ctx.isCurrent(prepared))) {
    violations.push('same-as-current');
  }
  return violations;
}

// NIST: "context-specific words, such as … the username, and derivatives thereof".
// Case-insensitive on NFC text, as P-6 says; Zs spaces mapped as in the password.
function containsUsername(prepared: string, username: string): boolean {
  const password = fold(prepared);
  const name = fold(username);
  if (name === '') return false;
  if (password === name) return true;
  return Array.from(name).length >= MIN_CONTAINED_USERNAME && password.includes(name);
}

function fold(s: string): string {
  return preparePassword(s).toLowerCase().normalize('NFC');
}

function checkContext(ctx: PolicyContext, maxLength: number): void {
  if (typeof ctx.username !== 'string') throw new TypeError('policy: username must be a string');
  if (!Number.isInteger(maxLength) || maxLength < 1) {
    throw new RangeError(`policy: maxLength must be a positive integer, got ${String(maxLength)}`);
  }
  if (!Number.isInteger(ctx.minLength) || ctx.minLength < 1 || ctx.minLength > maxLength) {
    throw new RangeError(`policy: minLength must be an integer from 1 to ${maxLength}, got ${String(ctx.minLength)}`);
  }
}
