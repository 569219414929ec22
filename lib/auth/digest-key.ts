// The Digest key a service uses (P-10, S-4), loaded on first use: a command or library call that
// never seals nor checks a Digest secret (user list, del, role, reset-token) never needs it, so it
// works on a Digest cluster from any working directory.
import { Buffer } from 'node:buffer';
import { hkdfSync } from 'node:crypto';
import { ServiceError } from '../errors.js';
import { createDigestVault, digestKeyFingerprint, loadDigestKey, newDigestKey, type DigestVault } from './digest-vault.js';

export interface DigestKeyOptions {
  /** Where the key file is (resolved on first use: it may follow the store's real path). */
  readonly file: () => Promise<string>;
  /** A random key kept in memory, for a store that writes no file (U-6). */
  readonly inMemory: boolean;
  /**
   * The fingerprint the store's servers use (S-4: recorded in the database, or a file store's running servers'), when there is one: the key must match
   * it, and is never created (a new key could not).
   */
  readonly recorded: string | null | undefined;
}

export interface DigestKey {
  readonly vault: DigestVault;
  /** The HMAC key of the stateless Digest nonces, derived from the vault's key. */
  readonly nonceSecret: Buffer;
  /** The key's fingerprint (S-4: servers sharing a store must use one key), never the key. */
  readonly fingerprint: string;
}

/** The key, loaded and checked once on first call (a failure is not remembered). */
export function digestKeyLoader(options: DigestKeyOptions): () => Promise<DigestKey> {
  let loaded: Promise<DigestKey> | undefined;
  const load = async (): Promise<DigestKey> => {
    if (options.inMemory) return fromKey(newDigestKey());
    const file = await options.file();
    const key = await loadDigestKey(file, { create: options.recorded === undefined });
    if (key === undefined) {
      throw new ServiceError('ERR_DIGEST_KEY', `there is no Digest key at ${file}, and this store's servers use Digest (S-4): give the key every instance uses with --digest-key FILE (or HTTPSKIT_DIGEST_KEY); a server joining them also needs --digest`);
    }
    if (options.recorded !== undefined && digestKeyFingerprint(key) !== options.recorded) {
      throw new ServiceError('ERR_STORE_SETTINGS', `the Digest key ${file} is not the one this store's servers use (S-4): give every instance the same --digest-key file`);
    }
    return fromKey(key);
  };
  return () =>
    (loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    }));
}

function fromKey(key: Buffer): DigestKey {
  return { vault: createDigestVault(key), nonceSecret: Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'httpskit digest nonce', 32)), fingerprint: digestKeyFingerprint(key) };
}
