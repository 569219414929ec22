// The development certificate of contract T-2: a self-signed X.509 v3 certificate for
// localhost, 127.0.0.1 and ::1, made with node:crypto alone (no openssl binary, no package),
// and kept under a directory so it survives restarts.
//
// Why cA=FALSE (an end-entity certificate that clients trust directly) rather than a
// self-signed CA: Firefox refuses a cA=TRUE certificate as a server certificate even when
// it is trusted (MOZILLA_PKIX_ERROR_CA_CERT_USED_AS_END_ENTITY), and a CA key, should it
// leak from a developer's machine, could mint certificates for any name for whoever trusted
// it. OpenSSL 3 (Node's, curl's, `openssl verify`) and 1.1.1h+ accept a self-signed
// cA=FALSE certificate without keyCertSign as a trust anchor (openssl/openssl#1418);
// RFC 5280 §4.2.1.3 allows keyCertSign only with cA=TRUE, so it stays out.

import { Buffer } from 'node:buffer';
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { lstat, mkdir, open, readFile, realpath, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { process } from '../process.js';
import { writeDurably } from '../fs/durable-write.js';
import { isErrno } from '../fs/errno.js';
import { checkStoreDirectory, type Subject } from '../fs/private-files.js';
import { processExists } from '../fs/process-exists.js';
import { der } from './der.js';

/** A development certificate and key (PEM), and where they are kept. */
export interface DevCertificate {
  readonly cert: string;
  readonly key: string;
  readonly certPath: string;
  readonly keyPath: string;
  /** True when this call generated the pair, false when it reused the files. */
  readonly created: boolean;
  /** The first directory of `dir`'s chain this call created, if it created any. */
  readonly createdDir?: string | undefined;
}

const CERT_FILE = 'localhost-cert.pem';
const KEY_FILE = 'localhost-key.pem';
const LOCK_FILE = 'localhost.lock';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Regenerate when less than this much validity is left. */
const MIN_REMAINING_MS = DAY_MS;
/** CA/Browser Forum and Apple cap TLS server certificates at 398 days; stay under it. */
const MAX_DAYS = 397;
const DEFAULT_DAYS = 365;
/** Allow for clocks a little behind ours. */
const BACKDATE_MS = HOUR_MS;

// Generation takes milliseconds, so a lock this old was left by a crash.
const LOCK_STALE_MS = 10_000;
const LOCK_GIVE_UP_MS = 30_000;

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2', // RFC 5758 §3.2
  commonName: '2.5.4.3',
  organizationName: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

const DNS_NAMES = ['localhost'] as const;
const IP_ADDRESSES: readonly (readonly number[])[] = [
  [127, 0, 0, 1],
  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], // ::1, RFC 5280 §4.2.1.6: 16 octets
];
const IP_TEXT = ['127.0.0.1', '::1'] as const;

// RFC 5280 §4.2.1.3 KeyUsage bit numbers.
const KEY_USAGE = { digitalSignature: 0 } as const;

/**
 * Make a self-signed EC P-256 certificate for localhost, 127.0.0.1 and ::1, valid from an
 * hour before `now()` for `days` days.
 * @default days 365 (at most 397)
 */
export function createSelfSignedCertificate(options: { now?: () => number; days?: number } = {}): { cert: string; key: string } {
  const nowMs = readNow(options.now);
  const days = options.days ?? DEFAULT_DAYS;
  if (!Number.isInteger(days) || days < 1 || days > MAX_DAYS) {
    throw new RangeError(`days must be an integer from 1 to ${MAX_DAYS}, got ${String(days)}`);
  }
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

  const algorithm = der.sequence(der.oid(OID.ecdsaWithSha256)); // parameters absent for ECDSA
  const name = der.sequence(
    der.set(der.sequence(der.oid(OID.organizationName), der.utf8String('httpskit development'))),
    der.set(der.sequence(der.oid(OID.commonName), der.utf8String('localhost'))),
  );
  // RFC 5280 §4.1.2.2: positive, at most 20 octets, unpredictable. 0x40 fixes the length at 16.
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;

  const tbs = der.sequence(
    der.explicit(0, der.integer(2)), // version v3
    der.integer(serial),
    algorithm,
    name, // issuer = subject: self-signed
    der.sequence(der.time(new Date(nowMs - BACKDATE_MS)), der.time(new Date(nowMs + days * DAY_MS))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der.explicit(3, der.sequence(...extensions(publicKey))),
  );
  // For an EC key crypto.sign gives the DER ECDSA-Sig-Value that X.509 wants (RFC 5758 §3.2).
  const signature = sign('sha256', tbs, privateKey);
  const certificate = der.sequence(tbs, algorithm, der.bitString(signature));

  return {
    cert: toPem('CERTIFICATE', certificate),
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/**
 * Load the development certificate from `dir`, or create it there (mode 0600 for the key)
 * when it is missing, unreadable, mismatched, not for localhost, or has less than 24 hours
 * of validity left at `now()`. Safe to call from several processes at once: generation
 * happens under a lock file, and files are replaced by rename, so the pair on disk always
 * matches.
 */
export async function ensureDevCertificate(dir: string, options: { now?: () => number } = {}): Promise<DevCertificate> {
  if (typeof dir !== 'string' || dir === '') throw new TypeError('dir must be a non-empty path');
  const now = options.now ?? Date.now;
  readNow(now); // refuse a broken clock before touching the file system
  const certPath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  // Private, whatever the umask: another local user who could replace the pair here would be served as us.
  const createdDir = await mkdir(dir, { recursive: true, mode: 0o700 });
  await checkCertDirectory(dir);

  for (let attempt = 0; attempt < 3; attempt += 1) {
    const existing = await readUsablePair(certPath, keyPath, readNow(now));
    if (existing !== undefined) return { ...existing, certPath, keyPath, created: false, createdDir };

    const written = await withLock(join(dir, LOCK_FILE), async () => {
      // Another process may have made the pair while we waited for the lock.
      if ((await readUsablePair(certPath, keyPath, readNow(now))) !== undefined) return undefined;
      const made = createSelfSignedCertificate({ now });
      await writeDurably(keyPath, made.key, { mode: 0o600 });
      await writeDurably(certPath, made.cert, { mode: 0o644 });
      return made;
    });
    if (written === undefined) continue;
    // Read back: only if a lock was wrongly judged stale could another writer have interleaved.
    const onDisk = await readUsablePair(certPath, keyPath, readNow(now));
    if (onDisk?.cert === written.cert && onDisk.key === written.key) return { ...written, certPath, keyPath, created: true, createdDir };
  }
  throw new Error(`could not create a consistent development certificate in ${dir}`);
}

/**
 * Undoes what ensureDevCertificate() made, for a start that failed after it (address in use): a
 * pair it generated, then the directories it created, as long as they are empty.
 */
export async function removeDevCertificate(dev: DevCertificate): Promise<void> {
  if (!dev.created) return;
  await Promise.all([rm(dev.certPath, { force: true }), rm(dev.keyPath, { force: true })]);
  if (dev.createdDir === undefined) return;
  for (let dir = dirname(dev.certPath); ; dir = dirname(dir)) {
    // ENOTEMPTY (another file came meanwhile) or gone: leave the rest.
    if (!(await rmdir(dir).then(() => true, () => false)) || dir === dev.createdDir || dir === dirname(dir)) return;
  }
}

const DEV_CERT: Subject = { owner: 'the development certificate', files: 'the certificate', heading: 'unsafe development certificate' };

/** Refuses a directory (or one above it) where another user could replace the pair (the store's rules: private-files.ts). */
export async function checkCertDirectory(dir: string): Promise<void> {
  await checkStoreDirectory(await realpath(dir), DEV_CERT);
}

function readNow(now: (() => number) | undefined): number {
  const value = (now ?? Date.now)();
  if (!Number.isFinite(value)) throw new TypeError(`now() must return a finite number of milliseconds, got ${String(value)}`);
  return value;
}

function extensions(publicKey: KeyObject): Buffer[] {
  // RFC 5280 §4.2.1.2 method (1): SHA-1 of the subjectPublicKey bits (the uncompressed point).
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);
  const keyId = createHash('sha1').update(point).digest();

  const generalNames = [
    ...DNS_NAMES.map((dns) => der.implicit(2, Buffer.from(dns, 'ascii'))), // dNSName [2] IA5String
    ...IP_ADDRESSES.map((ip) => der.implicit(7, Buffer.from(ip))), // iPAddress [7] OCTET STRING
  ];
  return [
    // BasicConstraints with cA absent: DEFAULT FALSE is omitted in DER (X.690 §11.5).
    extension(OID.basicConstraints, true, der.sequence()),
    // An EC key only signs in (EC)DHE handshakes; RFC 5480 §3 forbids keyEncipherment for it.
    extension(OID.keyUsage, true, der.namedBits([KEY_USAGE.digitalSignature])),
    extension(OID.extKeyUsage, false, der.sequence(der.oid(OID.serverAuth))),
    // Critical only when the subject is empty (§4.2.1.6); ours has a CN.
    extension(OID.subjectAltName, false, der.sequence(...generalNames)),
    extension(OID.subjectKeyIdentifier, false, der.octetString(keyId)),
  ];
}

/** Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING } */
function extension(id: string, critical: boolean, value: Buffer): Buffer {
  // DER omits a value equal to its DEFAULT (X.690 §11.5).
  return critical ? der.sequence(der.oid(id), der.boolean(true), der.octetString(value)) : der.sequence(der.oid(id), der.octetString(value));
}

function toPem(label: string, body: Buffer): string {
  const lines = body.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** The pair on disk if it can be used as is; undefined for anything else (the files are ours to replace). */
async function readUsablePair(certPath: string, keyPath: string, nowMs: number): Promise<{ cert: string; key: string } | undefined> {
  try {
    // A key someone else may have read (open to group or others, another user's, a link) is replaced.
    const keyInfo = await lstat(keyPath);
    if (!keyInfo.isFile()) return undefined;
    if (process.platform !== 'win32' && ((keyInfo.mode & 0o077) !== 0 || keyInfo.uid !== process.geteuid?.())) return undefined;
    const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    const x509 = new X509Certificate(cert);
    const notBefore = Date.parse(x509.validFrom);
    const notAfter = Date.parse(x509.validTo);
    if (!(notBefore <= nowMs && notAfter - nowMs >= MIN_REMAINING_MS)) return undefined;
    if (x509.checkHost('localhost') === undefined) return undefined;
    if (IP_TEXT.some((ip) => x509.checkIP(ip) === undefined)) return undefined;
    if (!x509.checkPrivateKey(createPrivateKey(key))) return undefined;
    return { cert, key };
  } catch {
    return undefined; // missing, unreadable or not PEM: make a new pair
  }
}

/**
 * Run `task` while holding `lockPath`, created exclusively ('wx') and holding our pid.
 * A lock whose process is gone, or older than LOCK_STALE_MS, was left by a crash and is
 * taken over.
 */
async function withLock<T>(lockPath: string, task: () => Promise<T>): Promise<T> {
  const token = `${process.pid} ${randomBytes(8).toString('hex')}\n`;
  const giveUpAt = Date.now() + LOCK_GIVE_UP_MS;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      try {
        await handle.writeFile(token);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if (!isErrno(error, 'EEXIST')) throw error;
    }
    const stale = await staleLockContent(lockPath);
    if (stale !== undefined) {
      // Remove it only if nobody has replaced it meanwhile (their token would differ).
      const current = await readFile(lockPath, 'utf8').catch(() => undefined);
      if (current === stale) await unlink(lockPath).catch(() => undefined);
      continue;
    }
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for the certificate lock ${lockPath}`);
    await delay(20 + Math.floor(Math.random() * 40));
  }
  try {
    return await task();
  } finally {
    // Only remove the lock if it is still ours (it is, unless someone judged it stale).
    const holder = await readFile(lockPath, 'utf8').catch(() => undefined);
    if (holder === token) await unlink(lockPath).catch(() => undefined);
  }
}

/** The lock's content when the lock is stale, undefined when it is live or gone. */
async function staleLockContent(lockPath: string): Promise<string | undefined> {
  try {
    const [content, info] = await Promise.all([readFile(lockPath, 'utf8'), stat(lockPath)]);
    if (Date.now() - info.mtimeMs > LOCK_STALE_MS) return content;
    const pid = Number.parseInt(content, 10);
    // An empty lock is one being written this instant: live.
    if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
    return processExists(pid) ? undefined : content;
  } catch {
    return undefined; // released meanwhile: just try again
  }
}
