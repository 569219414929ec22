import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';

/** The Digest algorithms we offer (RFC 7616 §3.2; no -sess variants, no SHA-512-256). */
export type DigestAlgorithm = 'SHA-256' | 'MD5';

/** The request-side inputs of the response hash (RFC 7616 §3.4.1), as they arrived. */
export interface DigestResponseInput {
  readonly nonce: string;
  readonly nc: string;
  readonly cnonce: string;
  readonly qop: 'auth';
  readonly method: string;
  readonly uri: string;
}

const NODE_HASH: Readonly<Record<DigestAlgorithm, string>> = { 'SHA-256': 'sha256', MD5: 'md5' };

/** Hex length of H(…) for each algorithm. */
export const DIGEST_HEX_LENGTH: Readonly<Record<DigestAlgorithm, number>> = { 'SHA-256': 64, MD5: 32 };

/**
 * H(A1) = H(username ":" realm ":" passwd), hex (RFC 7616 §3.4.2), over UTF-8
 * (the charset=UTF-8 we announce). Password-equivalent for this realm: keep it sealed (P-10).
 */
export function computeHA1(algorithm: DigestAlgorithm, username: string, realm: string, password: string): string {
  return hash(algorithm, Buffer.from(`${username}:${realm}:${password}`, 'utf8'));
}

/** userhash = H(username ":" realm), hex (RFC 7616 §3.4.4). */
export function computeUserhash(algorithm: DigestAlgorithm, username: string, realm: string): string {
  return hash(algorithm, Buffer.from(`${username}:${realm}`, 'utf8'));
}

/**
 * response = KD(H(A1), nonce ":" nc ":" cnonce ":" qop ":" H(A2)) with
 * A2 = method ":" uri and KD(secret, data) = H(secret ":" data) (RFC 7616 §3.4.1, §3.4.3).
 *
 * The request-side strings are hashed as Latin-1, i.e. as the very octets the
 * client sent: that is how Node decodes header values and the request-target.
 */
export function computeResponse(algorithm: DigestAlgorithm, ha1: string, input: DigestResponseInput): string {
  const ha2 = hash(algorithm, Buffer.from(`${input.method}:${input.uri}`, 'latin1'));
  const data = `${ha1}:${input.nonce}:${input.nc}:${input.cnonce}:${input.qop}:${ha2}`;
  return hash(algorithm, Buffer.from(data, 'latin1'));
}

function hash(algorithm: DigestAlgorithm, data: Buffer): string {
  return createHash(NODE_HASH[algorithm]).update(data).digest('hex');
}
