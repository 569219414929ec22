import { Buffer } from 'node:buffer';
import { decodeUtf8Strict } from '../users/prepare.js';
import { parseAuthParams, splitCredentials } from './credentials.js';
import type { AuthParam } from './credentials.js';
import { DIGEST_HEX_LENGTH } from './digest-hash.js';
import type { DigestAlgorithm } from './digest-hash.js';

/**
 * The Digest credentials we accept (RFC 7616 §3.4), checked for syntax only.
 *
 * `username` is the real user name (decoded from UTF-8, or from `username*`),
 * or the hex H(username ":" realm) when `userhash` is true. The other strings
 * are as sent, one char per octet (Node's Latin-1 view of header bytes); they
 * are hashed the same way (see computeResponse).
 */
export interface DigestParams {
  readonly username: string;
  readonly realm: string;
  readonly nonce: string;
  readonly uri: string;
  /** Lower-case hex. */
  readonly response: string;
  readonly algorithm: DigestAlgorithm;
  readonly qop: 'auth';
  /** Exactly 8 hex digits, as sent (it is part of the hashed data). */
  readonly nc: string;
  readonly cnonce: string;
  readonly userhash: boolean;
  readonly opaque?: string;
}

// Large enough for an 8 KiB request-target (L-1) in `uri` plus the other
// parameters; Node's 16 KiB header block bounds it anyway.
const MAX_HEADER_LENGTH = 16_384;

const HEX = /^[0-9a-f]+$/i;
const NONCE_COUNT = /^[0-9a-f]{8}$/i;
const LANGUAGE = /^[a-z0-9-]*$/i;

/**
 * Reads `Authorization: Digest …` (RFC 7616 §3.4; auth-param syntax of RFC 9110 §11.2).
 *
 * - `undefined`: no header, or another scheme.
 * - `'malformed'`: the scheme is Digest but the parameters do not parse, a
 *   parameter is repeated, one we need is missing, or one has a value we do
 *   not support: qop other than `auth`, an algorithm other than SHA-256/MD5
 *   (absent means MD5, RFC 7616 §3.3; `-sess` variants are refused since we
 *   never offer them), a user name that is not strict UTF-8 (U-4).
 *
 * Unknown parameters are ignored, as RFC 7616 §3.4 asks.
 */
export function parseDigest(header: string | undefined): DigestParams | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const { scheme, rest } = splitCredentials(header);
  if (scheme !== 'digest') return undefined;
  if (header.length > MAX_HEADER_LENGTH || !isLatin1(header)) return 'malformed';

  const params = parseAuthParams(rest);
  if (params === undefined) return 'malformed';

  const algorithm = readAlgorithm(params.get('algorithm'));
  const userhash = readBoolean(params.get('userhash'));
  const realm = params.get('realm')?.value;
  const nonce = params.get('nonce')?.value;
  const uri = params.get('uri')?.value;
  const response = params.get('response')?.value.toLowerCase();
  const qop = params.get('qop')?.value;
  const nc = params.get('nc')?.value;
  const cnonce = params.get('cnonce')?.value;
  const opaque = params.get('opaque')?.value;
  if (
    algorithm === undefined ||
    userhash === undefined ||
    realm === undefined ||
    !nonce ||
    !uri ||
    !cnonce ||
    qop !== 'auth' ||
    nc === undefined ||
    !NONCE_COUNT.test(nc) ||
    response === undefined ||
    response.length !== DIGEST_HEX_LENGTH[algorithm] ||
    !HEX.test(response)
  ) {
    return 'malformed';
  }

  const username = readUsername(params.get('username'), params.get('username*'), userhash);
  if (username === undefined) return 'malformed';

  const result: DigestParams = { username, realm, nonce, uri, response, algorithm, qop, nc, cnonce, userhash };
  return opaque === undefined ? result : { ...result, opaque };
}

function readAlgorithm(param: AuthParam | undefined): DigestAlgorithm | undefined {
  if (param === undefined) return 'MD5';
  switch (param.value.toUpperCase()) {
    case 'SHA-256':
      return 'SHA-256';
    case 'MD5':
      return 'MD5';
    default:
      return undefined;
  }
}

function readBoolean(param: AuthParam | undefined): boolean | undefined {
  if (param === undefined) return false;
  switch (param.value.toLowerCase()) {
    case 'true':
      return true;
    case 'false':
      return false;
    default:
      return undefined;
  }
}

// Exactly one of username / username* (RFC 7616 §3.4); username* cannot carry
// a userhash, which is plain hex anyway.
function readUsername(
  plain: AuthParam | undefined,
  extended: AuthParam | undefined,
  userhash: boolean,
): string | undefined {
  if (plain !== undefined && extended === undefined) {
    const name = decodeUtf8Strict(Buffer.from(plain.value, 'latin1'));
    return name === '' ? undefined : name;
  }
  if (extended !== undefined && plain === undefined && !userhash && !extended.quoted) {
    const name = decodeExtValue(extended.value);
    return name === '' ? undefined : name;
  }
  return undefined;
}

// ext-value = charset "'" [ language ] "'" value-chars       (RFC 8187 §3.2.1)
// value-chars = *( pct-encoded / attr-char ); only UTF-8 is accepted.
function decodeExtValue(value: string): string | undefined {
  const first = value.indexOf("'");
  const second = first < 0 ? -1 : value.indexOf("'", first + 1);
  if (second < 0) return undefined;
  if (value.slice(0, first).toUpperCase() !== 'UTF-8' || !LANGUAGE.test(value.slice(first + 1, second))) {
    return undefined;
  }
  const bytes: number[] = [];
  for (let i = second + 1; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25 /* % */) {
      const hex = value.slice(i + 1, i + 3);
      if (hex.length !== 2 || !HEX.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (isAttrChar(c)) {
      bytes.push(c);
    } else {
      return undefined;
    }
  }
  return decodeUtf8Strict(Buffer.from(bytes));
}

// attr-char = ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
function isAttrChar(c: number): boolean {
  if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) return true;
  return '!#$&+-.^_`|~'.includes(String.fromCharCode(c));
}

function isLatin1(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) > 0xff) return false;
  }
  return true;
}
