import { Buffer } from 'node:buffer';
import { decodeUtf8Strict } from '../users/prepare.js';
import { splitCredentials } from './credentials.js';
import { assertRealm } from './realm.js';

/** A user-id and password as sent; not yet prepared (RFC 8265) nor checked. */
export interface Credentials {
  readonly name: string;
  readonly password: string;
}

// A 64-code-point name and a 1024-code-point password (U-2, P-6) are at most
// ~4.4 KB of UTF-8, ~5.9 KB of base64; anything much longer is not ours.
const MAX_TOKEN_LENGTH = 8192;

// C0, DEL and C1 controls. RFC 7617 §2: "The user-id and password MUST NOT
// contain any control characters"; we read "control" as Unicode Cc, like U-2.
const CONTROL = /\p{Cc}/u;

/**
 * Reads `Authorization: Basic <base64(user-id ":" password)>` (RFC 7617 §2).
 *
 * - `undefined`: no header, or another scheme.
 * - `'malformed'`: the scheme is Basic but the token is not canonical padded
 *   base64, is too long, is not strict UTF-8 (U-4: refused, never repaired),
 *   has no ':', or contains a control character.
 *
 * Splits at the first ':' (RFC 7617 §2: a user-id cannot contain one).
 */
export function parseBasic(header: string | undefined): Credentials | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const { scheme, rest: token } = splitCredentials(header);
  if (scheme !== 'basic') return undefined;
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || token.length % 4 !== 0) return 'malformed';

  // Buffer's base64 decoder skips junk and tolerates missing padding; a
  // re-encode that gives back the same text proves the token was canonical
  // (alphabet, padding, and zero bits in the last quantum).
  const bytes = Buffer.from(token, 'base64');
  if (bytes.toString('base64') !== token) return 'malformed';

  // A leading U+FEFF stays part of the name instead of being silently dropped.
  const decoded = decodeUtf8Strict(bytes);
  if (decoded === undefined) return 'malformed';
  const colon = decoded.indexOf(':');
  if (colon < 0 || CONTROL.test(decoded)) return 'malformed';
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The Basic challenge, announcing UTF-8 (RFC 7617 §2.1).
 * Throws a TypeError for a realm that cannot be sent as-is (see assertRealm).
 */
export function basicChallenge(realm: string): string {
  assertRealm(realm);
  return `Basic realm="${realm}", charset="UTF-8"`;
}
