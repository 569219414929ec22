import { Buffer } from 'node:buffer';
import { timingSafeEqual } from 'node:crypto';
import { computeResponse, DIGEST_HEX_LENGTH } from './digest-hash.js';
import type { DigestAlgorithm } from './digest-hash.js';
import { createNonceCodec } from './digest-nonce.js';
import type { DigestParams } from './digest-params.js';
import { assertRealm } from './realm.js';

export { computeHA1, computeResponse, computeUserhash } from './digest-hash.js';
export type { DigestAlgorithm, DigestResponseInput } from './digest-hash.js';
export { parseDigest } from './digest-params.js';
export type { DigestParams } from './digest-params.js';

export interface DigestAuthOptions {
  /** The protection space; printable ASCII without '"' or '\'. */
  readonly realm: string;
  /** HMAC key for the stateless nonces, at least 16 bytes (32 random bytes recommended). */
  readonly secret: Buffer;
  /** How long a nonce is good for. @default 300_000 */
  readonly nonceTtlMs?: number;
  /** The clock, in ms. @default Date.now */
  readonly now?: () => number;
}

/** A user found by the lookup: the real name (needed when the client sent a userhash) and the hex HA1. */
export interface DigestUser {
  readonly name: string;
  readonly ha1: string;
}

/**
 * Finds the HA1 for `username` under `algorithm`. With `userhash` true, `username`
 * is the hex H(name ":" realm) and the lookup resolves it (see computeUserhash).
 * Returning a bare hex string means "the name is `username` as sent".
 * Returns undefined for an unknown user.
 */
export type DigestLookup = (
  username: string,
  userhash: boolean,
  algorithm: DigestAlgorithm,
) => string | DigestUser | undefined;

/** The request as received: its method and its request-target (`req.url`). */
export interface DigestRequest {
  readonly method: string;
  readonly uri: string;
}

/**
 * `ok`: the response is right and the nonce fresh. The caller must still claim `count` of `nonce`
 * in a nonce ledger (lib/store/ledgers.ts) before trusting it: replay protection lives there, so
 * that it holds across restarts and processes (P-10).
 */
export type DigestVerdict =
  | { readonly result: 'ok'; readonly username: string; readonly nonce: string; readonly count: number; readonly expiresAt: number }
  | { readonly result: 'stale' }
  | { readonly result: 'invalid' }
  | { readonly result: 'bad-request' };

export interface DigestAuth {
  /**
   * One challenge per algorithm, SHA-256 first (curl answers the first one it
   * can, RFC 7616 §3.7 lists them in order of preference), sharing one fresh nonce.
   * Send each as its own WWW-Authenticate field line.
   */
  challenges(stale?: boolean): string[];
  /** Checks parsed credentials against the request; see DigestVerdict. */
  verify(params: DigestParams, request: DigestRequest, lookupHA1: DigestLookup): DigestVerdict;
}

const ALGORITHMS: readonly DigestAlgorithm[] = ['SHA-256', 'MD5'];
const HEX = /^[0-9a-f]+$/i;

// Used for unknown users so that they cost the same hashing as a wrong password.
const DUMMY_HA1: Readonly<Record<DigestAlgorithm, string>> = { 'SHA-256': '0'.repeat(64), MD5: '0'.repeat(32) };

const INVALID = { result: 'invalid' } as const;
const STALE = { result: 'stale' } as const;
const BAD_REQUEST = { result: 'bad-request' } as const;

/**
 * RFC 7616 Digest with qop="auth", SHA-256 and MD5, userhash, and stateless
 * expiring nonces (P-10). Replayed nonce counts are the nonce ledger's to refuse
 * (see DigestVerdict): this object keeps no state.
 */
export function createDigestAuth(options: DigestAuthOptions): DigestAuth {
  const { realm, secret, nonceTtlMs = 300_000, now = Date.now } = options;
  assertRealm(realm);
  if (!Buffer.isBuffer(secret) || secret.length < 16) {
    throw new TypeError('secret must be a Buffer of at least 16 bytes');
  }
  if (!Number.isSafeInteger(nonceTtlMs) || nonceTtlMs <= 0) {
    throw new RangeError(`nonceTtlMs must be a positive integer, got ${String(nonceTtlMs)}`);
  }

  const codec = createNonceCodec(secret, realm);

  return {
    challenges(stale = false): string[] {
      const nonce = codec.issue(now());
      // charset=UTF-8 (RFC 7616 §3.3): names are hashed as UTF-8. stale is a
      // token, not a quoted string (§3.3); curl needs it to retry instead of giving up.
      const tail =
        `nonce="${nonce}", opaque="${codec.opaque}", charset=UTF-8, userhash=true` + (stale ? ', stale=true' : '');
      return ALGORITHMS.map((algorithm) => `Digest realm="${realm}", qop="auth", algorithm=${algorithm}, ${tail}`);
    },

    verify(params: DigestParams, request: DigestRequest, lookupHA1: DigestLookup): DigestVerdict {
      // RFC 7616 §3.4.6: a uri that is not the request-target is a 400.
      if (params.uri !== request.uri) return BAD_REQUEST;
      if (params.realm !== realm) return INVALID;
      // opaque is optional on the way back; when present it must be ours.
      if (params.opaque !== undefined && params.opaque !== codec.opaque) return INVALID;
      const issuedAt = codec.read(params.nonce);
      if (issuedAt === undefined) return INVALID; // not ours: forged, another realm, another secret

      const found = lookupHA1(params.username, params.userhash, params.algorithm);
      const user: DigestUser | undefined = typeof found === 'string' ? { name: params.username, ha1: found } : found;
      const ha1 = user?.ha1 ?? DUMMY_HA1[params.algorithm];
      if (ha1.length !== DIGEST_HEX_LENGTH[params.algorithm] || !HEX.test(ha1)) {
        throw new TypeError(`lookupHA1 must return a hex ${params.algorithm} HA1`);
      }
      const expected = computeResponse(params.algorithm, ha1.toLowerCase(), {
        nonce: params.nonce,
        nc: params.nc,
        cnonce: params.cnonce,
        qop: params.qop,
        method: request.method,
        uri: params.uri,
      });
      const matches =
        expected.length === params.response.length &&
        timingSafeEqual(Buffer.from(expected, 'latin1'), Buffer.from(params.response.toLowerCase(), 'latin1'));
      if (user === undefined || !matches) return INVALID;

      // The client knows the password from here on, so "stale" is safe to say
      // (RFC 7616 §3.3: only with a valid digest for that nonce; P-10).
      const age = now() - issuedAt;
      if (age < 0 || age > nonceTtlMs) return STALE;
      const count = Number.parseInt(params.nc, 16);
      if (!(count > 0)) return INVALID;
      return { result: 'ok', username: user.name, nonce: params.nonce, count, expiresAt: issuedAt + nonceTtlMs };
    },
  };
}
