// User names (CONTRACT U-2). A name travels in a path segment and as an RFC 7617
// user-id, so it must survive both, and it must not hide characters a human
// reading an admin list cannot see.

import { isDotSegment } from '../http/path-segment.js';
import { hasLoneSurrogate } from './prepare.js';

/** Why a user name was refused; the first rule broken, in the order listed. */
export type NameViolation =
  | 'ill-formed' //          a lone UTF-16 surrogate: not Unicode text at all (U-4)
  | 'empty'
  | 'too-long' //            more than 64 code points after NFC
  | 'control-character' //   Unicode Cc, or a line/paragraph separator (Zl, Zp)
  | 'format-character' //    Unicode Cf: invisible or bidi controls (U+200B, U+202E, U+FEFF …)
  | 'forbidden-character' // '/' (path separator) or ':' (RFC 7617 §2: cannot be in a user-id)
  | 'surrounding-space' //   leading or trailing white space: "alice " would look like "alice"
  | 'representation-suffix' // ends in .json or .xml (any case): /user/{name}.json selects a format
  | 'dot-segment' //          `.` or `..`: RFC 3986 removes such path segments, so /user/.. would mean /
  | 'invisible-character'; // a default-ignorable code point that is not Cf (a Hangul filler U+3164,
  //                          a variation selector, U+034F): shown as nothing, "alice\u3164" looks like "alice"

export type NameCheck = { ok: true; name: string } | { ok: false; violation: NameViolation };

/** Longest name, in code points (U-2). */
export const MAX_NAME_LENGTH = 64;

const CONTROL = /[\p{Cc}\p{Zl}\p{Zp}]/u;
const FORMAT = /\p{Cf}/u;
const FORBIDDEN = /[/:]/;
const SURROUNDING_SPACE = /^\s|\s$/u;
const REPRESENTATION_SUFFIX = /\.(?:json|xml)$/i;
// Unicode's Default_Ignorable_Code_Point: what a renderer shows as nothing when it cannot show it.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;

/**
 * Normalises a user name to NFC and checks it against U-2. Names are
 * case-sensitive: the returned name is the one to store and compare.
 */
export function checkUserName(name: string): NameCheck {
  if (hasLoneSurrogate(name)) return { ok: false, violation: 'ill-formed' };
  // Normalise first: U-2 says names ARE NFC; a client that sends NFD means the same name.
  const nfc = name.normalize('NFC');
  const violation = firstViolation(nfc);
  return violation === undefined ? { ok: true, name: nfc } : { ok: false, violation };
}

/**
 * `checkUserName` plus the rules that apply only to a name being created (U-2, amended): no
 * `.json` / `.xml` ending in any case, since `/user/{name}.json` selects a representation,
 * not `.` or `..`, which RFC 3986 removes from a path, and no invisible character, by which a new
 * name could look exactly like another user's (`alice` and `alice` with a Hangul filler). Existing users with such a name keep
 * working (lookups, logins, password changes use `checkUserName`); their paths have the dots
 * percent-encoded (`/user/a%2Ejson`, `/user/%2E%2E`: lib/http/path-segment.ts).
 */
export function checkNewUserName(name: string): NameCheck {
  const check = checkUserName(name);
  if (check.ok && REPRESENTATION_SUFFIX.test(check.name)) return { ok: false, violation: 'representation-suffix' };
  if (check.ok && isDotSegment(check.name)) return { ok: false, violation: 'dot-segment' };
  if (check.ok && INVISIBLE.test(check.name)) return { ok: false, violation: 'invisible-character' };
  return check;
}

function firstViolation(name: string): NameViolation | undefined {
  if (name === '') return 'empty';
  if (codePointLength(name) > MAX_NAME_LENGTH) return 'too-long';
  if (CONTROL.test(name)) return 'control-character';
  if (FORMAT.test(name)) return 'format-character';
  if (FORBIDDEN.test(name)) return 'forbidden-character';
  if (SURROUNDING_SPACE.test(name)) return 'surrounding-space';
  return undefined;
}

function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}
