// The flags of the command line (CONTRACT C-2, C-3), each with its environment variable and the
// library options it sets. Adding a flag is one entry here plus its name in the `flags` list of
// the commands it belongs to (commands.ts).
import { isIP } from 'node:net';
import type { ServiceOptions } from '../config.js';
import { createCommandDelivery } from '../users/deliver-command.js';

interface FlagBase {
  /** The environment variable that stands in when the flag is absent (C-2). */
  readonly env?: string;
  readonly help: string;
  /** A one-letter alias (`-h`). */
  readonly short?: string;
}

export interface StringFlag extends FlagBase {
  readonly type: 'string';
  /** The value's placeholder in help and usage lines: `--port N`. */
  readonly value: string;
  /**
   * The library options this value sets. It checks the text's syntax only, throwing
   * BadFlagValue; ranges and meaning are config.ts's, whose errors the CLI reports in terms
   * of the flag or variable the user typed, because it knows which keys each flag set.
   */
  readonly toOptions?: (text: string) => ServiceOptions;
}

export interface BooleanFlag extends FlagBase {
  readonly type: 'boolean';
  readonly toOptions?: (on: boolean) => ServiceOptions;
}

export type FlagSpec = StringFlag | BooleanFlag;

/** A flag value the CLI refuses before the library sees it; the message is completed with the flag's name. */
export class BadFlagValue extends Error {
  override readonly name = 'BadFlagValue';
}

export const FLAGS = {
  host: { type: 'string', value: 'H', env: 'HTTPSKIT_HOST', help: 'address to bind: an IP address or a host name (default 127.0.0.1)', toOptions: (t) => ({ host: hostText(t) }) },
  port: { type: 'string', value: 'N', env: 'HTTPSKIT_PORT', help: 'HTTPS port, 0 picks a free one (default 8443)', toOptions: (t) => ({ port: wholeNumber(t) }) },
  store: { type: 'string', value: 'PATH|URL', env: 'HTTPSKIT_STORE', help: 'user store file (default ./data/users.json), postgres://… (needs the package pg), or :memory: (serve only: a throwaway server, nothing is kept)', toOptions: (t) => ({ store: nonEmpty(t) }) },
  cert: { type: 'string', value: 'FILE', env: 'HTTPSKIT_CERT', help: 'PEM certificate file, with --key (default: a development certificate)' },
  key: { type: 'string', value: 'FILE', env: 'HTTPSKIT_KEY', help: 'PEM private key file, with --cert' },
  'cert-dir': { type: 'string', value: 'DIR', env: 'HTTPSKIT_CERT_DIR', help: 'where the development certificate lives (default ./certs)', toOptions: (t) => ({ certDir: nonEmpty(t) }) },
  'http-port': { type: 'string', value: 'N', env: 'HTTPSKIT_HTTP_PORT', help: 'also listen on plain HTTP, representations only (default off)', toOptions: (t) => ({ httpPort: wholeNumber(t) }) },
  digest: {
    type: 'boolean',
    env: 'HTTPSKIT_DIGEST',
    help: 'HTTP Digest (RFC 7616): serve accepts it; user add/passwd write its secret (default off)',
    toOptions: (on) => (on ? { digest: true } : {}),
  },
  'trust-proxy': { type: 'string', value: 'LIST', env: 'HTTPSKIT_TRUST_PROXY', help: 'comma-separated proxy addresses/CIDRs whose X-Forwarded-* count', toOptions: (t) => ({ trustProxy: t }) },
  'min-length': { type: 'string', value: 'N', env: 'HTTPSKIT_MIN_LENGTH', help: 'minimum password length, 8..64 (default 15)', toOptions: (t) => ({ minPasswordLength: wholeNumber(t) }) },
  'scrypt-ln': { type: 'string', value: 'N', env: 'HTTPSKIT_SCRYPT_LN', help: 'scrypt cost as log2(N) (default 17)', toOptions: (t) => ({ scrypt: { ln: wholeNumber(t), r: 8, p: 1 } }) },
  'no-hsts': { type: 'boolean', env: 'HTTPSKIT_NO_HSTS', help: 'do not send Strict-Transport-Security', toOptions: (on) => (on ? { hstsMaxAge: false } : {}) },
  'no-http2': { type: 'boolean', env: 'HTTPSKIT_NO_HTTP2', help: 'HTTP/1.1 only on the HTTPS port, no HTTP/2', toOptions: (on) => (on ? { http2: false } : {}) },
  'on-reset-token': {
    type: 'string',
    value: 'COMMAND',
    env: 'HTTPSKIT_ON_RESET_TOKEN',
    help: 'turns on POST /user/NAME/resettoken: COMMAND (split at spaces, run without a shell) gets each token as one JSON line on stdin',
    toOptions: (t) => ({ onResetToken: commandDelivery(t) }),
  },
  'metrics-port': {
    type: 'string',
    value: 'N',
    env: 'HTTPSKIT_METRICS_PORT',
    help: 'serve Prometheus metrics at http://HOST:N/metrics, plain HTTP (default off)',
    toOptions: (t) => ({ metricsPort: wholeNumber(t) }),
  },
  'shutdown-delay': {
    type: 'string',
    value: 'MS',
    env: 'HTTPSKIT_SHUTDOWN_DELAY',
    help: 'on SIGTERM/SIGINT, /readyz answers 503 and the server serves on this long before it stops accepting (default 0)',
    toOptions: (t) => ({ shutdownDelayMs: wholeNumber(t) }),
  },
  'log-level': {
    type: 'string',
    value: 'LEVEL',
    env: 'HTTPSKIT_LOG_LEVEL',
    help: 'info (a line per request), warn (4xx and 5xx), error (5xx), off or silent (errors only); default info',
    toOptions: (t) => ({ logLevel: t as NonNullable<ServiceOptions['logLevel']> }),
  },
  'digest-key': { type: 'string', value: 'FILE', env: 'HTTPSKIT_DIGEST_KEY', help: 'the Digest key file, the same on every instance (default beside a file store, ./data/digest.key with a database)', toOptions: (t) => ({ digestKeyFile: nonEmpty(t) }) },
  'pg-pool-size': { type: 'string', value: 'N', env: 'HTTPSKIT_PG_POOL_SIZE', help: 'PostgreSQL connections per instance (default 10)', toOptions: (t) => ({ postgres: { poolSize: wholeNumber(t) } }) },
  'pg-connect-timeout': { type: 'string', value: 'MS', env: 'HTTPSKIT_PG_CONNECT_TIMEOUT', help: 'longest wait for a PostgreSQL connection, ms (default 2000)', toOptions: (t) => ({ postgres: { connectTimeoutMs: wholeNumber(t) } }) },
  'pg-query-timeout': { type: 'string', value: 'MS', env: 'HTTPSKIT_PG_QUERY_TIMEOUT', help: 'longest PostgreSQL operation before a 503, ms (default 3000)', toOptions: (t) => ({ postgres: { queryTimeoutMs: wholeNumber(t) } }) },
  'no-migrate': { type: 'boolean', env: 'HTTPSKIT_NO_MIGRATE', help: 'do not migrate the PostgreSQL schema at start (run "store migrate" instead)', toOptions: (on) => (on ? { postgres: { migrate: false } } : {}) },
  admin: { type: 'boolean', help: 'make the user an admin' },
  force: { type: 'boolean', help: 'delete the user even if it is the only admin' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
  version: { type: 'boolean', help: 'show the version' },
} as const satisfies Record<string, FlagSpec>;

export type FlagName = keyof typeof FLAGS;

/** Flags every command takes. */
export const GLOBAL_FLAGS: readonly FlagName[] = ['help', 'version'];

/** What the environment variable of a boolean flag may hold, exactly (an empty variable is unset). */
export const TRUE_WORDS: readonly string[] = ['1', 'true'];
export const FALSE_WORDS: readonly string[] = ['0', 'false'];

function commandDelivery(text: string): NonNullable<ServiceOptions['onResetToken']> {
  try {
    return createCommandDelivery(text);
  } catch (error) {
    throw new BadFlagValue((error as Error).message);
  }
}

function wholeNumber(text: string): number {
  if (!/^[0-9]+$/.test(text)) throw new BadFlagValue(`must be a whole number, got "${text}"`);
  return Number(text);
}

function nonEmpty(text: string): string {
  if (text === '') throw new BadFlagValue('must not be empty');
  return text;
}

// RFC 1123 §2.1 host name: dot-separated labels of letters, digits and inner hyphens, each at
// most 63 octets, 253 in all; a trailing dot is the DNS root.
const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/**
 * An IP address or a host name. Checked here so that a typo fails before the service writes a
 * store or a certificate; whether the name resolves to an address of this machine only
 * listen() can tell.
 */
function hostText(text: string): string {
  const unbracketed = /^\[.*\]$/.test(text) ? text.slice(1, -1) : text;
  if (isIP(unbracketed) !== 0) return unbracketed;
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  const labels = name.split('.');
  // A name whose last label is numeric is read as IPv4 by resolvers (WHATWG URL host parser,
  // inet_aton), so "999.1.1.1" is a bad address, not a host name.
  const numeric = /^[0-9]+$/.test(labels.at(-1) ?? '');
  if (name.length === 0 || name.length > 253 || numeric || !labels.every((l) => LABEL.test(l))) {
    throw new BadFlagValue(`must be an IP address or a host name, got "${text}"`);
  }
  return text;
}
