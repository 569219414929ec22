import { Buffer } from 'node:buffer';
import { dirname, join, resolve } from 'node:path';
import { process } from './process.js';
import { ServiceError } from './errors.js';
import { DEFAULT_MAX_UNSENT_BYTES, DEFAULT_MAX_UNSENT_BYTES_TOTAL } from './http/http2-sessions.js';
import { validateOptionalObject } from './validate.js';
import { parseTrustProxy, type TrustProxy } from './http/trust-proxy.js';
import { defineResource, type ServedResource } from './resources/definition.js';
import type { ResourceEntry } from './resources/resource.js';
import { storeKind } from './store/spec.js';
import { LOG_LEVELS, stdoutLines, type LogLevel } from './log.js';

/** The password-change events an embedder can subscribe to (CONTRACT A-4). */
export interface ResetTokenEvent { readonly name: string; readonly token: string; readonly expiresAt: Date }
export interface PasswordChangedEvent {
  readonly name: string;
  /** Who made the change: the user themself, an admin's name, or `null` for a reset token or the CLI. */
  readonly by: string | null;
  readonly via: 'basic' | 'digest' | 'token' | 'form' | 'cli' | 'library';
  readonly at: Date;
}

/** a user was created, deleted or given another role over HTTPS. */
export interface UserChangedEvent {
  readonly name: string;
  readonly change: 'created' | 'deleted' | 'role';
  /** The admin who made the change. */
  readonly by: string;
  readonly at: Date;
}

export type { ResourceLoader } from './resources/resource.js';

/** Public options of createService(); every field is optional. */
export interface ServiceOptions {
  /** Address the HTTPS listener binds. @default '127.0.0.1' */
  host?: string;
  /** HTTPS port; 0 picks a free one. @default 8443 */
  port?: number;
  /** Optional plain-HTTP port (T-3); representations only. @default undefined (off) */
  httpPort?: number;
  /** HTTP/2 (ALPN h2) beside HTTP/1.1 on the HTTPS port (H-1); false serves HTTP/1.1 only. @default true */
  http2?: boolean;
  /**
   * JSON-file user store (U-1), a postgres:// URL (S-1; needs the optional package `pg`), or
   * `':memory:'`: users and ledgers in this process's memory, no file written (U-6). @default './data/users.json'
   */
  store?: string;
  /** Connection pool and time-outs of a postgres:// store (S-6), and whether it migrates at open (S-5). */
  postgres?: PostgresOptions;
  /** PEM certificate and key. Without them (or the files below) a development certificate is created under `certDir` (T-2). */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** PEM certificate and key files, instead of `cert`/`key`: read at listen() and watched, a changed pair is served to new connections (H-2). */
  certFile?: string;
  keyFile?: string;
  /** How often the certificate files are checked for a change, besides fs.watch (H-2). @default 5000 */
  certPollIntervalMs?: number;
  /** Where the development certificate lives. @default './certs' */
  certDir?: string;
  /** Accept RFC 7616 Digest on the password PUT (P-10). @default false */
  digest?: boolean;
  /** AES-256-GCM key file for the Digest secrets, kept apart from the store. @default '<store dir>/digest.key', './data/digest.key' with a database */
  digestKeyFile?: string;
  /** Addresses or CIDR ranges of TLS-terminating proxies (T-5). @default none */
  trustProxy?: string | readonly string[];
  /** Minimum password length in code points, 8..64 (P-6). @default 15 */
  minPasswordLength?: number;
  /** Authentication realm. @default 'httpskit' */
  realm?: string;
  /** Strict-Transport-Security max-age in seconds, or false for none (T-4). @default 31536000 */
  hstsMaxAge?: number | false;
  /** scrypt cost as log2(N), r, p (U-3); a member left out keeps its default. @default { ln: 17, r: 8, p: 1 } */
  scrypt?: { readonly ln?: number; readonly r?: number; readonly p?: number };
  /** Lifetime of a reset token (P-9). @default 900000 (15 minutes) */
  resetTokenTtlMs?: number;
  /** Hashes in flight at once, and waiting (P-8). @default libuv pool size, and 4x that */
  hashConcurrency?: number;
  hashQueueLimit?: number;
  /** L-1 limits. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  maxHeaderBytes?: number;
  maxTargetLength?: number;
  maxBodyBytes?: number;
  /**
   * L-2: response bytes one HTTP/2 connection may hold unsent across its streams (a reader that does
   * not read). A body over 16 KiB that would go past it is refused with RST_STREAM(ENHANCE_YOUR_CALM);
   * one response of any size may be held alone. @default 4194304 (4 MiB)
   */
  maxUnsentBytes?: number;
  /**
   * L-2 across connections: what all HTTP/2 connections together may hold for their open streams
   * (the response bytes not yet sent, and 8 KiB for each open stream). Past it a connection holding
   * more than its share has new streams refused with RST_STREAM(REFUSED_STREAM), which a client may
   * retry, and a larger body is refused unless it is all its connection holds; past half of it
   * requests that sent less than 1 KiB in 2 s are reset and responses that took nothing for 2 s are
   * cut, so readers that read nothing lose their connections within seconds. @default 67108864 (64 MiB)
   */
  maxUnsentBytesTotal?: number;
  /**
   * Resources served at /api/<name> besides the built-in `something`: a loader `(query, context) => value`
   * (A-2), or a definition with methods and items `{ get, post, item: { get, put, delete }, schema, … }`
   * (A-5). A method that needs the caller calls `await context.authenticate()` (R-1's machinery).
   */
  resources?: Readonly<Record<string, ResourceEntry>>;
  /**
   * the path prefix every route is served under (`'/svc'`), written into every Location,
   * Content-Location, Link and `next` the service sends; nothing outside it is served. @default '' (none)
   */
  basePath?: string;
  /**
   * Where log lines go (one JSON object per line): a function of one line, `true` for standard
   * output (batched, flushed at exit), or false for none (A-10: a library is quiet unless asked).
   * @default false
   */
  log?: boolean | ((line: string) => void);
  /** What is logged: 'info' (a line per request), 'warn' (4xx and 5xx), 'error' (5xx), 'off'/'silent' (errors only). @default 'info' */
  logLevel?: 'info' | 'warn' | 'error' | 'off' | 'silent';
  /**
   * C-5 (amended): on close() (the CLI: SIGTERM, SIGINT) /readyz answers 503 at once and the
   * listeners keep serving this long before they stop, so a load balancer stops sending first. @default 0
   */
  shutdownDelayMs?: number;
  /** Port of the plain-HTTP Prometheus scrape listener on `host` (H-5); 0 picks a free one. @default undefined (off) */
  metricsPort?: number;
  /** A-4 hooks. A hook that throws or hangs is logged and never blocks the change. */
  onResetToken?: (event: ResetTokenEvent) => unknown;
  onPasswordChanged?: (event: PasswordChangedEvent) => unknown;
  /** after a user is created, deleted or changes role over HTTPS. */
  onUserChanged?: (event: UserChangedEvent) => unknown;
}

/** See PostgresStoreOptions (lib/store/postgres/postgres-options.ts) for the defaults. */
export interface PostgresOptions {
  /** Connections per instance. @default 10 */
  readonly poolSize?: number;
  /** Longest wait for a connection, in ms. @default 2000 */
  readonly connectTimeoutMs?: number;
  /** Longest time one store operation may take, in ms; then 503. @default 3000 */
  readonly queryTimeoutMs?: number;
  /** Apply pending schema migrations at open (false: `store migrate` does it). @default true */
  readonly migrate?: boolean;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly httpPort: number | undefined;
  readonly http2: boolean;
  readonly store: string;
  readonly postgres: PostgresOptions;
  readonly cert: string | Buffer | undefined;
  readonly key: string | Buffer | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly certPollIntervalMs: number;
  readonly certDir: string;
  readonly digest: boolean;
  readonly digestKeyFile: string;
  /** No key file was given and the store is a file: the key lives beside the store's real file (U-1). */
  readonly digestKeyBesideStore: boolean;
  /** No key file was given and the store is in memory: so is the key (U-6, A-10: no file written). */
  readonly digestKeyInMemory: boolean;
  readonly trustProxy: TrustProxy;
  readonly minPasswordLength: number;
  readonly realm: string;
  readonly hstsMaxAge: number | false;
  readonly scrypt: { readonly ln: number; readonly r: number; readonly p: number };
  readonly resetTokenTtlMs: number;
  readonly hashConcurrency: number;
  readonly hashQueueLimit: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxHeaderBytes: number;
  readonly maxTargetLength: number;
  readonly maxBodyBytes: number;
  readonly maxUnsentBytes: number;
  readonly maxUnsentBytesTotal: number;
  /** The embedder's resources, checked (A-5: a wrong shape is ERR_INVALID_OPTION naming the resource). */
  readonly resources: ReadonlyMap<string, ServedResource>;
  /** '' or `/segment[/segment…]` without a trailing slash. */
  readonly basePath: string;
  readonly log: false | ((line: string) => void);
  readonly logLevel: LogLevel;
  readonly metricsPort: number | undefined;
  readonly shutdownDelayMs: number;
  readonly onResetToken: ((event: ResetTokenEvent) => unknown) | undefined;
  readonly onPasswordChanged: ((event: PasswordChangedEvent) => unknown) | undefined;
  readonly onUserChanged: ((event: UserChangedEvent) => unknown) | undefined;
}

const KNOWN: { readonly [K in keyof ServiceOptions]-?: true } = {
  host: true, port: true, httpPort: true, http2: true, store: true, postgres: true, cert: true, key: true, certFile: true, keyFile: true, certPollIntervalMs: true, certDir: true, digest: true,
  digestKeyFile: true, trustProxy: true, minPasswordLength: true, realm: true, hstsMaxAge: true, scrypt: true,
  resetTokenTtlMs: true, hashConcurrency: true, hashQueueLimit: true, headersTimeoutMs: true, requestTimeoutMs: true,
  keepAliveTimeoutMs: true, maxHeaderBytes: true, maxTargetLength: true, maxBodyBytes: true, maxUnsentBytes: true, maxUnsentBytesTotal: true, resources: true, basePath: true, log: true,
  logLevel: true, metricsPort: true, shutdownDelayMs: true, onResetToken: true, onPasswordChanged: true, onUserChanged: true,
};

/** Resource names: a lowercase letter, then letters, digits, '-' and '_' (no '.', which starts an extension; also the XML root name). */
export const RESOURCE_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** Validates options once and returns a frozen Config with every default filled in. */
export function resolveConfig(options: ServiceOptions = {}): Config {
  validateOptionalObject(options as unknown, 'options');
  for (const key of Object.keys(options)) {
    if (!(key in KNOWN)) invalid(`unknown option "${key}"`);
  }
  const o = options;
  // A database URL (or ':memory:') is not a path: resolving it would make "postgres:/…" a file in the working directory.
  const storeSpec = text(o.store ?? './data/users.json', 'store');
  const kind = storeKind(storeSpec);
  const store = kind === 'file' ? resolve(storeSpec) : storeSpec;
  const poolSize = Number(process.env['UV_THREADPOOL_SIZE']) || 4;
  // L-1: the headers are part of the request, and node:http refuses a listener whose headersTimeout
  // exceeds its requestTimeout (a RangeError at listen(), not here, with the caller's name lost):
  // a shorter requestTimeoutMs alone shortens the headers' default with it; both given must agree.
  const requestTimeoutMs = integer(o.requestTimeoutMs ?? 30_000, 'requestTimeoutMs', 100, 3_600_000);
  const headersTimeoutMs = integer(o.headersTimeoutMs ?? Math.min(10_000, requestTimeoutMs), 'headersTimeoutMs', 100, 600_000);
  if (headersTimeoutMs > requestTimeoutMs) invalid(`headersTimeoutMs (${headersTimeoutMs}) must not exceed requestTimeoutMs (${requestTimeoutMs})`);
  const hashConcurrency = integer(o.hashConcurrency ?? poolSize, 'hashConcurrency', 1, 1024);
  if ((o.cert === undefined) !== (o.key === undefined)) invalid('cert and key must be given together');
  if ((o.certFile === undefined) !== (o.keyFile === undefined)) invalid('certFile and keyFile must be given together');
  if (o.cert !== undefined && o.certFile !== undefined) invalid('give either cert and key (PEM) or certFile and keyFile (paths), not both');
  const realm = text(o.realm ?? 'httpskit', 'realm');
  // Printable ASCII without '"' or '\\': sent as a quoted-string, and Digest clients hash its bytes.
  if (!/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/.test(realm)) invalid('realm must be printable ASCII without quotes or backslashes');
  if (o.scrypt !== undefined && (typeof o.scrypt !== 'object' || o.scrypt === null)) invalid('scrypt must be an object { ln, r, p }');
  for (const key of Object.keys(o.scrypt ?? {})) if (!['ln', 'r', 'p'].includes(key)) invalid(`unknown scrypt option "${key}"`);
  // nested options are merged with their defaults.
  const scrypt = { ...SCRYPT_DEFAULTS, ...definedMembers(o.scrypt ?? {}) };
  if (typeof scrypt.ln === 'number' && typeof scrypt.r === 'number' && 128 * 2 ** scrypt.ln * scrypt.r > 2 ** 30) {
    invalid('scrypt cost needs more than 1 GiB per hash (128 * 2^ln * r); lower ln or r');
  }
  const given = o.resources ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) invalid('resources must be an object { name: loader or definition }');
  const resources = new Map<string, ServedResource>();
  for (const [name, entry] of Object.entries(given)) {
    if (!RESOURCE_NAME.test(name)) invalid(`resource name "${name}" must match ${String(RESOURCE_NAME)}`);
    resources.set(name, defineResource(name, entry));
  }
  let trustProxy: TrustProxy;
  try {
    trustProxy = parseTrustProxy(o.trustProxy ?? []);
  } catch (error) {
    invalid(`trustProxy: ${(error as Error).message}`);
  }
  const hsts = o.hstsMaxAge ?? 31_536_000;
  const { port, httpPort, metricsPort } = listenerPorts(o);
  return Object.freeze({
    host: text(o.host ?? '127.0.0.1', 'host'),
    port,
    httpPort,
    http2: bool(o.http2 ?? true, 'http2'),
    store,
    postgres: Object.freeze({ ...postgresOption(o.postgres) }),
    cert: pem(o.cert, 'cert'),
    key: pem(o.key, 'key'),
    certFile: o.certFile === undefined ? undefined : resolve(text(o.certFile, 'certFile')),
    keyFile: o.keyFile === undefined ? undefined : resolve(text(o.keyFile, 'keyFile')),
    certPollIntervalMs: integer(o.certPollIntervalMs ?? 5_000, 'certPollIntervalMs', 100, 60_000),
    certDir: resolve(text(o.certDir ?? './certs', 'certDir')),
    digest: bool(o.digest ?? false, 'digest'),
    digestKeyFile: resolve(text(o.digestKeyFile ?? (kind === 'file' ? join(dirname(store), 'digest.key') : './data/digest.key'), 'digestKeyFile')),
    digestKeyBesideStore: o.digestKeyFile === undefined && kind === 'file',
    digestKeyInMemory: o.digestKeyFile === undefined && kind === 'memory',
    trustProxy,
    minPasswordLength: integer(o.minPasswordLength ?? 15, 'minPasswordLength', 8, 64),
    realm,
    hstsMaxAge: hsts === false ? false : integer(hsts, 'hstsMaxAge', 0, 2 ** 31 - 1),
    scrypt: Object.freeze({
      ln: integer(scrypt.ln, 'scrypt.ln', 1, 24),
      r: integer(scrypt.r, 'scrypt.r', 1, 64),
      p: integer(scrypt.p, 'scrypt.p', 1, 16),
    }),
    resetTokenTtlMs: integer(o.resetTokenTtlMs ?? 900_000, 'resetTokenTtlMs', 1_000, 86_400_000),
    hashConcurrency,
    hashQueueLimit: integer(o.hashQueueLimit ?? hashConcurrency * 4, 'hashQueueLimit', 0, 100_000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(o.keepAliveTimeoutMs ?? 5_000, 'keepAliveTimeoutMs', 100, 600_000),
    maxHeaderBytes: integer(o.maxHeaderBytes ?? 16_384, 'maxHeaderBytes', 1_024, 1_048_576),
    maxTargetLength: integer(o.maxTargetLength ?? 8_192, 'maxTargetLength', 64, 1_048_576),
    maxBodyBytes: integer(o.maxBodyBytes ?? 4_096, 'maxBodyBytes', 64, 1_048_576),
    maxUnsentBytes: integer(o.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES, 'maxUnsentBytes', 65_536, 1_073_741_824),
    maxUnsentBytesTotal: integer(o.maxUnsentBytesTotal ?? DEFAULT_MAX_UNSENT_BYTES_TOTAL, 'maxUnsentBytesTotal', 1_048_576, 2 ** 40),
    resources,
    basePath: basePathOption(o.basePath ?? ''),
    log: o.log === undefined ? false : logOption(o.log),
    logLevel: logLevel(o.logLevel ?? 'info'),
    metricsPort,
    shutdownDelayMs: integer(o.shutdownDelayMs ?? 0, 'shutdownDelayMs', 0, 3_600_000),
    onResetToken: hook(o.onResetToken, 'onResetToken'),
    onPasswordChanged: hook(o.onPasswordChanged, 'onPasswordChanged'),
    onUserChanged: hook(o.onUserChanged, 'onUserChanged'),
  });
}

const SCRYPT_DEFAULTS = { ln: 17, r: 8, p: 1 } as const;

/**
 * The listeners' ports, all on `host`: two given the same port (other than 0, a free one each)
 * could never both listen, so that is said now, by name, rather than as EADDRINUSE at listen().
 */
function listenerPorts(o: ServiceOptions): { port: number; httpPort: number | undefined; metricsPort: number | undefined } {
  const port = integer(o.port ?? 8443, 'port', 0, 65_535);
  const httpPort = o.httpPort === undefined ? undefined : integer(o.httpPort, 'httpPort', 0, 65_535);
  const metricsPort = o.metricsPort === undefined ? undefined : integer(o.metricsPort, 'metricsPort', 0, 65_535);
  if (httpPort !== undefined && httpPort !== 0 && httpPort === port) invalid(`httpPort: ${httpPort} is also the HTTPS port; each listener needs a port of its own`);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) invalid(`metricsPort: ${metricsPort} is also the HTTPS port; each listener needs a port of its own`);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === httpPort) invalid(`metricsPort: ${metricsPort} is also the plain HTTP port; each listener needs a port of its own`);
  return { port, httpPort, metricsPort };
}

/** The members whose value is not undefined (`{ ln: 14, r: undefined }` keeps the default r). */
function definedMembers<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * '' (none), or an absolute path of plain segments; a trailing slash is dropped (`/svc/` is
 * `/svc`). No query, fragment, dot segment or percent sign: it is compared with the raw path.
 */
function basePathOption(value: unknown): string {
  if (typeof value !== 'string') invalid('basePath must be a string such as "/svc"');
  const path = value.endsWith('/') ? value.slice(0, -1) : value;
  if (path === '') return '';
  if (!/^(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)+$/.test(path) || path.split('/').some((segment) => segment === '.' || segment === '..')) {
    invalid(`basePath must be a path such as "/svc" (segments of letters, digits and -._~!$&'()*+,;=:@), got ${JSON.stringify(value)}`);
  }
  return path;
}

function invalid(message: string): never {
  throw new ServiceError('ERR_INVALID_OPTION', message);
}

function integer(value: unknown, name: string, min: number, max: number): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
  // JSON.stringify says null for NaN and the infinities: String says what was given.
  invalid(`${name} must be an integer from ${min} to ${max}, got ${typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value))}`);
}

function text(value: unknown, name: string): string {
  if (typeof value === 'string' && value !== '') return value;
  invalid(`${name} must be a non-empty string`);
}

function bool(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') return value;
  invalid(`${name} must be true or false`);
}

function pem(value: unknown, name: string): string | Buffer | undefined {
  if (value === undefined || typeof value === 'string' || Buffer.isBuffer(value)) return value;
  invalid(`${name} must be PEM text (string or Buffer)`);
}

function logOption(value: unknown): false | ((line: string) => void) {
  if (value === false || typeof value === 'function') return value as false | ((line: string) => void);
  if (value === true) return stdoutLines();
  invalid('log must be true (standard output), false, or a function of one line');
}

function postgresOption(value: unknown): PostgresOptions {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null) invalid('postgres must be an object');
  const known = ['poolSize', 'connectTimeoutMs', 'queryTimeoutMs', 'migrate'];
  for (const key of Object.keys(value)) if (!known.includes(key)) invalid(`unknown postgres option "${key}"`);
  // The numbers are checked where they are used (resolvePostgresOptions), with the same error code.
  return value as PostgresOptions;
}

function logLevel(value: unknown): LogLevel {
  if (typeof value !== 'string' || !LOG_LEVELS.includes(value)) invalid(`logLevel must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(value)}`);
  return value === 'silent' ? 'off' : (value as LogLevel);
}

function hook<T>(value: T | undefined, name: string): T | undefined {
  if (value === undefined || typeof value === 'function') return value;
  invalid(`${name} must be a function`);
}
