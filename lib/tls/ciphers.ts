import { DEFAULT_CIPHERS } from 'node:tls';

/**
 * TLS 1.2 suites: ECDHE key exchange (forward secrecy) with AEAD ciphers only, AES-GCM and
 * ChaCha20-Poly1305 (RFC 7905), for ECDSA and RSA certificates alike. No CBC suite: their
 * MAC-then-encrypt construction is what LUCKY13 and the padding oracles attack, and testssl.sh
 * rates an offer of them "cipherlist_AVERAGE". This is Mozilla's "intermediate" TLS 1.2 list.
 */
const TLS12_AEAD = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
] as const;

/**
 * The `ciphers` option of the HTTPS listener (T-1). Node takes TLS 1.3 suites (the `TLS_…` names)
 * from the same string and would turn TLS 1.3 off if there were none, so TLS 1.3 keeps exactly
 * the suites Node offers by default (all AEAD by design, RFC 8446 §9.1).
 */
export const TLS_CIPHERS: string = [...DEFAULT_CIPHERS.split(':').filter((suite) => suite.startsWith('TLS_')), ...TLS12_AEAD].join(':');
