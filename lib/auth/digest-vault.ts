import { Buffer } from 'node:buffer';
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { process } from '../process.js';
import { ServiceError } from '../errors.js';
import { createDurably } from '../fs/durable-write.js';
import { isErrno } from '../fs/errno.js';
import { assertOwner, checkStoreDirectory, unsafe } from '../fs/private-files.js';
import { resolveStorePath } from '../store/file/path.js';

/** The per-algorithm H(user ":" realm ":" password) of one user, lower-case hex. */
export interface DigestHA1 {
  readonly 'SHA-256': string;
  readonly MD5: string;
}

/**
 * Seals HA1 values for the store (P-10): an HA1 is password-equivalent for its
 * realm (RFC 7616 §5.2), so the store only ever holds it encrypted with
 * AES-256-GCM under a key that lives in a separate file.
 */
export interface DigestVault {
  /**
   * Encrypts both HA1s. `aad` binds the blob to its owner (pass the user name,
   * and the realm too if it can change): a blob moved to another user fails to open.
   */
  seal(ha1: DigestHA1, aad: string): string;
  /** Decrypts a sealed blob; undefined if it was tampered with, belongs to another `aad`, or another key. */
  open(blob: string, aad: string): DigestHA1 | undefined;
}

const KEY_BYTES = 32;
const IV_BYTES = 12; // the GCM nonce size NIST SP 800-38D recommends
const TAG_BYTES = 16;
const SHA256_BYTES = 32;
const MD5_BYTES = 16;
const BLOB_PREFIX = 'v1.';
const BLOB_BYTES = IV_BYTES + SHA256_BYTES + MD5_BYTES + TAG_BYTES;
const AAD_LABEL = 'httpskit digest-ha1 v1\0';

/**
 * Loads the 32-byte vault key from `keyPath`, or creates it (mode 0600, its
 * directory 0700) when absent. The key is a side file of the store (U-1): its
 * path is resolved through symbolic links, and a key file owned by another
 * user, or in a directory others could write, is refused (ERR_STORE_UNSAFE),
 * as is one readable by group or others (it may have been copied: replace it
 * rather than narrow it) or of the wrong size.
 */
export async function openDigestVault(keyPath: string): Promise<DigestVault> {
  return createDigestVault(await loadDigestKey(keyPath));
}

/**
 * The vault key at `keyPath`, created when absent (unless `create: false`: then undefined, and
 * nothing is created); the same checks as openDigestVault().
 */
export async function loadDigestKey(keyPath: string, options?: { readonly create: true }): Promise<Buffer>;
export async function loadDigestKey(keyPath: string, options: { readonly create: boolean }): Promise<Buffer | undefined>;
export async function loadDigestKey(keyPath: string, options: { readonly create: boolean } = { create: true }): Promise<Buffer | undefined> {
  if (typeof keyPath !== 'string' || keyPath === '') throw new ServiceError('ERR_INVALID_ARGUMENT', 'keyPath must be a non-empty string');
  const real = await resolveStorePath(keyPath, options.create);
  if (!options.create) {
    const key = await readKey(real);
    if (key !== undefined) await checkStoreDirectory(dirname(real));
    return key;
  }
  await checkStoreDirectory(dirname(real));
  return (await readKey(real)) ?? (await createKey(real));
}

/** A new random vault key, for a key that lives in memory only (a `:memory:` store's, U-6). */
export function newDigestKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/** The vault over a 32-byte key. */
export function createDigestVault(key: Buffer): DigestVault {
  const aadOf = (aad: string): Buffer => Buffer.from(AAD_LABEL + aad, 'utf8');

  return {
    seal(ha1: DigestHA1, aad: string): string {
      const sha256 = hexBytes(ha1['SHA-256'], SHA256_BYTES, 'SHA-256');
      const md5 = hexBytes(ha1.MD5, MD5_BYTES, 'MD5');
      // A random 96-bit IV per seal: far below the 2^32 messages per key where GCM collisions matter.
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aadOf(aad));
      const sealed = Buffer.concat([iv, cipher.update(Buffer.concat([sha256, md5])), cipher.final(), cipher.getAuthTag()]);
      return BLOB_PREFIX + sealed.toString('base64url');
    },

    open(blob: string, aad: string): DigestHA1 | undefined {
      // The blob comes from the store file: treat it as untrusted input, never throw.
      if (typeof blob !== 'string' || typeof aad !== 'string' || !blob.startsWith(BLOB_PREFIX)) return undefined;
      const text = blob.slice(BLOB_PREFIX.length);
      const bytes = Buffer.from(text, 'base64url');
      if (bytes.length !== BLOB_BYTES || bytes.toString('base64url') !== text) return undefined;
      const iv = bytes.subarray(0, IV_BYTES);
      const tag = bytes.subarray(BLOB_BYTES - TAG_BYTES);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aadOf(aad));
        decipher.setAuthTag(tag);
        const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, BLOB_BYTES - TAG_BYTES)), decipher.final()]);
        return {
          'SHA-256': plain.subarray(0, SHA256_BYTES).toString('hex'),
          MD5: plain.subarray(SHA256_BYTES).toString('hex'),
        };
      } catch {
        return undefined; // authentication failed
      }
    },
  };
}

async function readKey(keyPath: string): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(keyPath, 'r');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new ServiceError('ERR_DIGEST_KEY', `digest key ${keyPath} is not a regular file`);
    assertOwner(info, `the digest key ${keyPath}`);
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      throw unsafe(
        `the digest key ${keyPath} is open to group or others (mode ${(info.mode & 0o777).toString(8)})`,
        'run chmod 600 on it if nobody else can have read it, or else delete it (users then log in with Basic once to re-seal their Digest secrets)',
      );
    }
    if (info.size !== KEY_BYTES) throw new ServiceError('ERR_DIGEST_KEY', `digest key ${keyPath} must hold exactly ${KEY_BYTES} bytes`);
    const key = Buffer.alloc(KEY_BYTES);
    const { bytesRead } = await handle.read(key, 0, KEY_BYTES, 0);
    if (bytesRead !== KEY_BYTES) throw new ServiceError('ERR_DIGEST_KEY', `digest key ${keyPath} must hold exactly ${KEY_BYTES} bytes`);
    return key;
  } finally {
    await handle.close();
  }
}

// Created whole or not at all, and never over an existing key (createDurably links a synced
// temporary file into place), so two processes starting at once agree on one key.
async function createKey(keyPath: string): Promise<Buffer> {
  await mkdir(dirname(keyPath), { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  if (await createDurably(keyPath, key)) return key;
  const theirs = await readKey(keyPath); // another process won the race
  if (theirs === undefined) throw new ServiceError('ERR_DIGEST_KEY', `digest key ${keyPath} vanished while being created`);
  return theirs;
}

function hexBytes(value: string, length: number, name: string): Buffer {
  if (typeof value !== 'string' || value.length !== length * 2 || !/^[0-9a-f]+$/i.test(value)) {
    throw new TypeError(`${name} HA1 must be ${length * 2} hex digits`);
  }
  return Buffer.from(value, 'hex');
}

/** Names the Digest key without revealing it: an HMAC under the key of a fixed label. */
export function digestKeyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('httpskit digest key fingerprint v1').digest('hex').slice(0, 32);
}
