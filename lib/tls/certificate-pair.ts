// H-2: the certificate and key the HTTPS listener serves, read from files, checked before use,
// and watched so that a renewed pair takes effect without a restart.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { ServiceError } from '../errors.js';

export interface CertificatePair {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

/** What a log line may say about a pair: nothing secret. */
export interface CertificateInfo {
  readonly subject: string;
  readonly serialNumber: string;
  readonly fingerprint256: string;
  readonly validTo: string;
}

/**
 * Checks that the pair loads and that the key is the certificate's own (the leaf, the first
 * certificate in the PEM; a chain may follow). Throws ServiceError ERR_CERT_UNREADABLE.
 */
export function checkCertificatePair(pair: CertificatePair): CertificateInfo {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pair.cert);
  } catch (error) {
    throw new ServiceError('ERR_CERT_UNREADABLE', 'the certificate is not a PEM X.509 certificate', { cause: error });
  }
  let key;
  try {
    key = createPrivateKey(pair.key);
  } catch (error) {
    throw new ServiceError('ERR_CERT_UNREADABLE', 'the key is not a PEM private key (or it is encrypted)', { cause: error });
  }
  if (!certificate.checkPrivateKey(key)) throw new ServiceError('ERR_CERT_UNREADABLE', 'the key does not belong to the certificate');
  return { subject: certificate.subject, serialNumber: certificate.serialNumber, fingerprint256: certificate.fingerprint256, validTo: certificate.validTo };
}

/** Reads both files. Throws ServiceError ERR_CERT_UNREADABLE naming the file that cannot be read. */
export async function readCertificatePair(certFile: string, keyFile: string): Promise<CertificatePair> {
  const read = async (path: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new ServiceError('ERR_CERT_UNREADABLE', `cannot read the ${what} file "${path}": ${(error as NodeJS.ErrnoException).code ?? 'error'}`, { cause: error });
    }
  };
  const [cert, key] = await Promise.all([read(certFile, 'certificate'), read(keyFile, 'key')]);
  return { cert, key };
}

export interface PairWatcher {
  close(): void;
}

// Replacing a pair is two writes (or renames); events within this window are one change.
const SETTLE_MS = 250;

/**
 * Calls `onChange` when either file changes: fs.watch on the files' directories (a renamed-in
 * file, as certbot and `mv` do, is an event on the directory, not on the old file) for speed,
 * and a poll of both files' stat every `pollMs` for the file systems where fs.watch says nothing
 * (network mounts, some containers) and for symbolic links whose target moves.
 */
export function watchCertificatePair(certFile: string, keyFile: string, pollMs: number, onChange: () => void): PairWatcher {
  const names = new Set([basename(certFile), basename(keyFile)]);
  let settle: NodeJS.Timeout | undefined;
  let last: string | undefined;
  const stamp = (): Promise<string> =>
    Promise.all([certFile, keyFile].map((file) => stat(file).then((s) => `${s.ino}:${s.size}:${s.mtimeMs}`, () => 'missing'))).then((s) => s.join('|'));
  const changed = (): void => {
    clearTimeout(settle);
    settle = setTimeout(() => {
      // The poll then sees this state as known, so one change is one reload.
      void stamp().then((now) => {
        last = now;
        onChange();
      });
    }, SETTLE_MS);
    settle.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(certFile), dirname(keyFile)])) {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (name === null || names.has(String(name))) changed();
      });
      watcher.on('error', () => watcher.close());
      watchers.push(watcher);
    } catch {
      // The poll below still notices the change.
    }
  }
  let polling = false;
  const check = (): void => {
    if (polling) return;
    polling = true;
    void stamp()
      .then((now) => {
        if (last !== undefined && now !== last) changed();
        last = now;
      })
      .finally(() => (polling = false));
  };
  check();
  const poll = setInterval(check, pollMs);
  poll.unref();
  return {
    close() {
      clearInterval(poll);
      clearTimeout(settle);
      for (const watcher of watchers) watcher.close();
    },
  };
}
