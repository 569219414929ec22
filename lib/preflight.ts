// What listen() checks before it writes anything (the store, a development certificate, the
// Digest key): a bad value leaves nothing behind. Only reads: the certificate pair given, the host
// name, the ports (each bound once and let go: one in use or not ours fails here), the development
// certificate's directory (a file, or open to other users), a Digest key file that is already there.
import { lookup } from 'node:dns/promises';
import { stat } from 'node:fs/promises';
import { createServer, isIP } from 'node:net';
import { listen } from './http/server.js';
import { loadDigestKey } from './auth/digest-vault.js';
import type { Config } from './config.js';
import { ServiceError } from './errors.js';
import { checkCertificatePair, readCertificatePair, type CertificatePair } from './tls/certificate-pair.js';
import { checkCertDirectory } from './tls/dev-cert.js';

/** The certificate pair to serve (read and checked), or undefined for a development certificate. */
export async function preflight(config: Config): Promise<CertificatePair | undefined> {
  let { cert, key } = config;
  if (config.certFile !== undefined && config.keyFile !== undefined) ({ cert, key } = await readCertificatePair(config.certFile, config.keyFile));
  const pair = cert !== undefined && key !== undefined ? { cert, key } : undefined;
  if (pair !== undefined) checkCertificatePair(pair);
  if (isIP(config.host) === 0) {
    await lookup(config.host).catch((error: unknown) => {
      throw new ServiceError('ERR_INVALID_OPTION', `host "${config.host}" does not resolve to an address to listen on (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
    });
  }
  for (const port of new Set([config.port, config.httpPort, config.metricsPort])) {
    if (port !== undefined && port !== 0) await probePort(config.host, port);
  }
  if (pair === undefined) {
    const info = await stat(config.certDir).catch(() => undefined);
    if (info !== undefined && !info.isDirectory()) throw new ServiceError('ERR_INVALID_OPTION', `certDir "${config.certDir}" is not a directory (the development certificate goes there)`);
    if (info !== undefined) await checkCertDirectory(config.certDir);
  }
  if (config.digest && !config.digestKeyBesideStore) await loadDigestKey(config.digestKeyFile, { create: false });
  return pair;
}

/**
 * Binds `port` and lets it go: rejects as listen() would (EADDRINUSE, EACCES) while nothing is
 * written yet. Another process may still take the port before the service binds it; listen()
 * then fails as before, and undoes its development certificate.
 */
async function probePort(host: string, port: number): Promise<void> {
  const probe = createServer();
  await listen(probe, port, host);
  await new Promise((resolve) => probe.close(resolve));
}
