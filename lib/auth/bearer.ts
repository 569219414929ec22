import { isToken68, splitCredentials } from './credentials.js';
import { assertRealm } from './realm.js';

// Our reset tokens are 43 characters (P-9); this only bounds what we look at.
const MAX_TOKEN_LENGTH = 4096;

/**
 * Reads `Authorization: Bearer <b64token>` (RFC 6750 §2.1):
 *   b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
 *
 * - `undefined`: no header, or another scheme.
 * - `'malformed'`: the scheme is Bearer but the token is missing, too long or not a b64token.
 *
 * The token is returned as sent; whether it is one of ours is the caller's question.
 */
export function parseBearer(header: string | undefined): string | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const { scheme, rest: token } = splitCredentials(header);
  if (scheme !== 'bearer') return undefined;
  if (token.length > MAX_TOKEN_LENGTH || !isToken68(token)) return 'malformed';
  return token;
}

/**
 * The Bearer challenge (RFC 6750 §3), e.g. `Bearer realm="x", error="invalid_token"`.
 * Throws a TypeError for a realm that cannot be sent as-is (see assertRealm).
 */
export function bearerChallenge(realm: string, error?: 'invalid_token' | 'invalid_request'): string {
  assertRealm(realm);
  if (error === undefined) return `Bearer realm="${realm}"`;
  if (error !== 'invalid_token' && error !== 'invalid_request') {
    throw new TypeError(`error must be "invalid_token" or "invalid_request", got ${JSON.stringify(error)}`);
  }
  return `Bearer realm="${realm}", error="${error}"`;
}
