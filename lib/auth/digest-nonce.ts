import { Buffer } from 'node:buffer';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Stateless server nonces: the server can check its own nonces without storing them. */
export interface NonceCodec {
  /** A fresh nonce stamped with `issuedAt` (ms since the epoch, or the injected clock's unit). */
  issue(issuedAt: number): string;
  /** The issue time of an authentic nonce of ours; undefined for anything else. */
  read(nonce: string): number | undefined;
  /** A constant opaque value for this realm and secret (RFC 7616 §3.3). */
  readonly opaque: string;
}

// nonce = base64url( issuedAt (8, big-endian) ‖ random (8) ‖ HMAC-SHA256(secret, label ‖ realm ‖ issuedAt ‖ random)[:16] )
// RFC 7616 §3.3 suggests "time-stamp H(time-stamp ":" ETag ":" secret-data)";
// the HMAC plays that role, 128 bits of it are plenty for an online check, and
// binding the realm keeps nonces of one realm from verifying in another.
const TIME_BYTES = 8;
const RANDOM_BYTES = 8;
const MAC_BYTES = 16;
const NONCE_BYTES = TIME_BYTES + RANDOM_BYTES + MAC_BYTES;
const NONCE_LENGTH = Math.ceil((NONCE_BYTES * 4) / 3); // base64url without padding: 43

/** Creates the nonce codec for one realm. `secret` is the HMAC key (kept by the caller). */
export function createNonceCodec(secret: Buffer, realm: string): NonceCodec {
  const label = Buffer.from(`httpskit digest nonce v1\0${realm}\0`, 'utf8');
  const mac = (body: Buffer): Buffer =>
    createHmac('sha256', secret).update(label).update(body).digest().subarray(0, MAC_BYTES);

  return {
    issue(issuedAt: number): string {
      const body = Buffer.alloc(TIME_BYTES + RANDOM_BYTES);
      body.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(issuedAt))), 0);
      randomBytes(RANDOM_BYTES).copy(body, TIME_BYTES);
      return Buffer.concat([body, mac(body)]).toString('base64url');
    },

    read(nonce: string): number | undefined {
      if (nonce.length !== NONCE_LENGTH) return undefined;
      const bytes = Buffer.from(nonce, 'base64url');
      // Buffer's decoder skips junk; the round trip proves the text was canonical.
      if (bytes.length !== NONCE_BYTES || bytes.toString('base64url') !== nonce) return undefined;
      const body = bytes.subarray(0, TIME_BYTES + RANDOM_BYTES);
      if (!timingSafeEqual(mac(body), bytes.subarray(TIME_BYTES + RANDOM_BYTES))) return undefined;
      return Number(body.readBigUInt64BE(0));
    },

    opaque: createHmac('sha256', secret)
      .update(`httpskit digest opaque v1\0${realm}`)
      .digest()
      .subarray(0, MAC_BYTES)
      .toString('base64url'),
  };
}
