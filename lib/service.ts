import { Buffer } from 'node:buffer';
import { dirname, join } from 'node:path';
import { createAuthenticator } from './auth/authenticate.js';
import { computeHA1, createDigestAuth } from './auth/digest.js';
import { computeUserhash } from './auth/digest-hash.js';
import { digestKeyLoader, type DigestKey } from './auth/digest-key.js';
import { resolveConfig, type Config, type ServiceOptions } from './config.js';
import { ServiceError } from './errors.js';
import { settingsDifferences } from './store/settings.js';
import { createPasswordHandlers, requireTransport } from './handlers/password.js';
import { createCallerAuthenticator, requireHttps } from './handlers/caller.js';
import { createResetTokenRequestHandler } from './handlers/reset-token-request.js';
import { createUserHandlers, createUserResource } from './handlers/users.js';
import { createRepresentationHandler } from './handlers/representation.js';
import type { RequestContext } from './http/context.js';
import type { Caller } from './resources/resource.js';
import { createDispatcher, type Handler, type Next } from './http/dispatch.js';
import { createFetchHandler, type FetchHandler } from './http/fetch-adapter.js';
import type { HttpRequest, HttpResponse, RequestHandler } from './http/messages.js';
import { createRouter } from './http/router.js';
import { startListeners, type Listeners } from './http/server.js';
import { InFlight, Lifecycle } from './lifecycle.js';
import { createLogger, type Logger } from './log.js';
import { createHealth } from './ops/health.js';
import { instrumentStore } from './ops/instrument-store.js';
import { createMetrics, UNMATCHED_ROUTE, type Metrics } from './ops/metrics.js';
import { startMetricsListener, type MetricsListener } from './ops/metrics-server.js';
import { createOpenApiHandler } from './ops/openapi-handler.js';
import { createSelector, type Selector } from './representation/select.js';
import { createRegistry, servedResources } from './resources/registry.js';
import { openApiDocument } from './ops/openapi.js';
import { packageVersion } from './package-version.js';
import { preflight } from './preflight.js';
import { optionsHeadersByLabel, routeLabels, routerTable } from './http/route-table.js';
import { serviceRoutes } from './routes/service-routes.js';
import { apiRoutes } from './routes/api-routes.js';
import { checkCertificatePair, readCertificatePair, watchCertificatePair, type CertificatePair, type PairWatcher } from './tls/certificate-pair.js';
import { ensureDevCertificate, removeDevCertificate, type DevCertificate } from './tls/dev-cert.js';
import { isCommonPassword } from './users/common-passwords.js';
import { createHashGate, isHashBusy, type HashGate } from './users/hash-gate.js';
import { resolveStorePath } from './store/file/path.js';
import { openStore } from './store/open.js';
import type { SharedSettings, Store, UserRecord } from './store/store.js';
import { checkNewUser, createUsers, type Role, type UserInfo, type Users } from './users/users.js';
import { validateOptionalBoolean, validateOptionalInteger, validateOptionalObject, validateString, invalidArgument } from './validate.js';
import { withTimeout } from './with-timeout.js';

export interface Service {
  /**
   * A request handler for node:https, node:http or node:http2 servers (A-1, H-1): HTTP/2 requests
   * through the compatibility API, e.g. `http2.createSecureServer({ allowHTTP1: true }, handler)`.
   */
  readonly handler: RequestHandler;
  /**
   * a request without a socket: what the global `fetch` takes (a Request, a URL, or a path
   * such as `'/api/books.xml'`, resolved against `https://localhost`), through the same pipeline;
   * an `http:` URL counts as plain HTTP (T-3). `init.address` is the client's address
   * (default `127.0.0.1`). A fetch handler: it mounts in Hono (`app.mount`) and the like.
   */
  readonly fetch: FetchHandler;
  /**
   * Connect-style middleware (Express, Connect): the service's answer, or `next()` for a
   * path it has no route for. Under a mount (`app.use('/svc', …)`) give `basePath: '/svc'`.
   */
  readonly middleware: (req: HttpRequest, res: HttpResponse, next: Next) => void;
  /**
   * Opens the store and starts the HTTPS (and optional HTTP and metrics) listeners. A-11: once
   * only; while listening or after close() it rejects with ERR_SERVICE_STATE and opens nothing.
   */
  listen(): Promise<{ readonly url: string; readonly httpUrl: string | undefined; readonly metricsUrl: string | undefined }>;
  /**
   * C-5: /readyz answers 503 at once, the listeners serve on for `shutdownDelayMs`, then stop
   * (in-flight requests get up to `graceMs` more) and the store closes. A second call, at once or
   * later, resolves when the first is done.
   */
  close(graceMs?: number): Promise<void>;
  /**
   * H-2: new TLS connections get `pair`, or the pair re-read from `certFile`/`keyFile`; open ones
   * keep theirs. A pair that does not load or whose key is not the certificate's is refused (a
   * ServiceError ERR_CERT_UNREADABLE and a log line) and the old one stays. Resolves to false when
   * there is nothing to re-read (a development certificate, or PEM given as text).
   */
  reloadCertificate(pair?: CertificatePair): Promise<boolean>;
  /** User operations on the same store, for an embedder's own sign-in and admin tasks. */
  readonly users: UserOperations;
  /** The resolved, frozen configuration. */
  readonly config: Config;
  /** the OpenAPI 3.1 document `GET /openapi.json` serves (the routes this service serves), frozen. */
  openapi(): Readonly<Record<string, unknown>>;
}

export interface UserOperations {
  add(name: string, password: string, options?: { readonly role?: Role }): Promise<UserInfo>;
  verify(name: string, password: string): Promise<boolean>;
  setPassword(name: string, password: string): Promise<void>;
  /**
   * False when there is no such user. The only admin is not removed: ERR_LAST_ADMIN (as R-5 over
   * HTTP, A-11), unless `force` (an operator's own tooling).
   */
  remove(name: string, options?: { readonly force?: boolean }): Promise<boolean>;
  /** gives a user another role; ERR_USER_NOT_FOUND, or ERR_LAST_ADMIN to demote the only admin. */
  setRole(name: string, role: Role): Promise<void>;
  list(): Promise<UserInfo[]>;
  issueResetToken(name: string): Promise<{ readonly token: string; readonly expiresAt: Date }>;
}

/** The store and user operations, opened on first use by anything (a request, a CLI or library call). */
interface Core {
  readonly store: Store;
  readonly users: Users;
  readonly realm: string;
  /** The Digest key, loaded on first use; undefined while Digest is off. */
  readonly digestKey: (() => Promise<DigestKey>) | undefined;
  /** S-4: the settings the store's servers used when it was opened (followed instead of the configuration's), if any. */
  readonly recorded: SharedSettings | undefined;
  readonly track: (task: Promise<void>) => Promise<void>;
  /** Settles when the work started after an answer (P-12's issuance and delivery) has finished. */
  readonly detachedDone: () => Promise<void>;
}

/** The core and what HTTP requests need: opened on the first request or by listen(). */
interface Parts extends Core {
  readonly put: Handler;
  readonly post: Handler;
  readonly authenticateCaller: (ctx: RequestContext) => Promise<Caller>;
  readonly admin: ReturnType<typeof createUserHandlers>;
  readonly requestResetToken: Handler;
}

/** P-12: tokens issued per account per hour at most; further requests still get 202. */
const RESET_TOKENS_PER_HOUR = 3;

/** Builds the service from options (validated once, frozen). Nothing is opened until first use. */
export function createService(options: ServiceOptions = {}): Service {
  const config = resolveConfig(options);
  const log = createLogger(config.log, config.logLevel);
  const selector = createSelector();
  const hashGate = createHashGate({ concurrency: config.hashConcurrency, queueLimit: config.hashQueueLimit });
  // H-5: observed only when scraped; a service without --metrics-port does none of the work.
  const metrics = config.metricsPort === undefined ? undefined : createMetrics({ hashes: hashGate });
  const gate = metrics === undefined ? hashGate : countRefusals(hashGate, metrics);
  let core: Promise<Core> | undefined;
  let parts: Promise<Parts> | undefined;
  const lifecycle = new Lifecycle();
  // The records behind the callers authenticated (see createCallerAuthenticator): weakly held.
  const callerRecords = new WeakMap<Caller, UserRecord>();
  // A failed open (locked or corrupt store) is not remembered: the next request tries again.
  // a closed service opens nothing again, and once closed answers nothing that needs the
  // store (a request gets 503); while it closes (C-5's shutdown delay) what is open serves on.
  // A start under way (`starting`) opens the store even when close() was called meanwhile:
  // close() waits for the start to finish, then undoes it.
  const refused = (starting = false): boolean => lifecycle.finished || (!starting && lifecycle.closed && core === undefined);
  const inFlight = new InFlight();
  const closedError = (): Promise<never> => Promise.reject(new ServiceError('ERR_SERVICE_STATE', 'the service is closed'));
  const opened = (starting = false): Promise<Core> =>
    refused(starting) ? closedError() : (core ??= openCore(config, log, gate, metrics).catch((error: unknown) => {
      core = undefined;
      throw error;
    }));
  const ready = (starting = false): Promise<Parts> =>
    refused(starting) ? closedError() : (parts ??= opened(starting)
      .then((c) => openHttp(c, config, log, metrics, selector, callerRecords))
      .catch((error: unknown) => {
        parts = undefined;
        throw error;
      }));

  // A loader that asks who the caller is (ResourceContext.authenticate) opens the store on demand.
  const authenticateCaller = async (ctx: RequestContext): Promise<Caller> => (requireHttps(ctx), (await ready()).authenticateCaller(ctx));
  // every path the service writes starts with its mount prefix.
  const { basePath } = config;
  // the user is a resource on the same representation path, under /user/.
  const userResource = createUserResource({ get: async (name) => (await ready()).users.get(name) }, (caller) => callerRecords.get(caller));
  const user = createRepresentationHandler({ base: `${basePath}/user/`, resolve: (name) => (name === '' ? undefined : userResource), selector, authenticate: authenticateCaller });
  // R and P: the route table's guards come first (T-3, before anything else); the store opens on demand.
  const admin = (pick: (h: Parts['admin']) => Handler): Handler => async (ctx, params) => pick((await ready()).admin)(ctx, params);
  // H-3: readiness asks the store itself (a file store: its files read and parsed, never queued behind writes).
  // L-2: at most one check at a time, shared by concurrent probes and kept briefly (health.ts).
  const readiness = createHealth({
    ready: async () => {
      const { store } = await ready();
      await store.ping();
    },
    onNotReady: (error) => log.warn('not ready: the user store does not answer', { error: error instanceof Error ? error.message : String(error) }),
  });
  const healthRegistry = createRegistry(readiness.loaders);
  const health = createRepresentationHandler({ base: `${basePath}/`, resolve: (name) => healthRegistry.get(name), selector, authenticate: authenticateCaller });
  // every route declared once; the router, the dispatcher and the OpenAPI document read this table.
  let document: Readonly<Record<string, unknown>> | undefined;
  const openapi = (): Readonly<Record<string, unknown>> =>
    (document ??= deepFreeze(openApiDocument(routes, { version: packageVersion() ?? '0.0.0', metrics: config.metricsPort !== undefined, basePath })));
  const routes = [
    ...apiRoutes(servedResources(config.resources), { selector, authenticate: authenticateCaller, basePath }),
    ...serviceRoutes(
      {
        health,
        openapi: createOpenApiHandler(openapi),
        user: (ctx, params) => user(ctx, { resource: params['name'] ?? '' }),
        page: admin((h) => h.page),
        create: admin((h) => h.create),
        patch: admin((h) => h.patch),
        remove: admin((h) => h.remove),
        setPassword: async (ctx, params) => (await ready()).put(ctx, params),
        resetPassword: async (ctx, params) => (await ready()).post(ctx, params),
        // P-12: only with a delivery channel (onResetToken, or the CLI's --on-reset-token).
        requestResetToken: config.onResetToken === undefined ? undefined : async (ctx, params) => (await ready()).requestResetToken(ctx, params),
      },
      { https: (ctx) => requireHttps(ctx), password: requireTransport },
    ),
  ];
  const router = createRouter<Handler>(routerTable(routes));
  const securityHeaders = { 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'" };
  const handler = createDispatcher({
    router,
    selector,
    trust: config.trustProxy,
    log,
    metrics,
    quietRoutes: routeLabels(routes, (route) => route.quiet === true),
    // E-1: a route that chooses its representation by extension or return_type chooses its problems' too.
    negotiatedRoutes: routeLabels(routes, (route) => route.negotiated === true),
    optionsHeaders: optionsHeadersByLabel(routes),
    maxTargetLength: config.maxTargetLength,
    basePath,
    plainHeaders: securityHeaders,
    secureHeaders:
      config.hstsMaxAge === false ? securityHeaders : { ...securityHeaders, 'strict-transport-security': `max-age=${config.hstsMaxAge}` },
  });

  let listeners: Listeners | undefined;
  let scrape: MetricsListener | undefined;
  let certWatcher: PairWatcher | undefined;
  // Library and CLI calls are the embedder's own: when the hashing queue is full they wait for
  // room (HTTP callers get 503 instead), so a bulk import of users simply runs at the gate's pace.
  const withUsers = async <T>(fn: (users: Users) => Promise<T>): Promise<T> => {
    const { users } = await opened();
    for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
      try {
        return await fn(users);
      } catch (error) {
        if (!isHashBusy(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };

  async function reloadCertificate(pair?: CertificatePair): Promise<boolean> {
    if (pair !== undefined) {
      if (typeof pair !== 'object' || pair === null) throw invalidArgument('pair', 'an object { cert, key }', pair);
      for (const member of ['cert', 'key'] as const) {
        if (typeof pair[member] !== 'string' && !Buffer.isBuffer(pair[member])) throw invalidArgument(`pair.${member}`, 'PEM text (a string or a Buffer)', pair[member]);
      }
    }
    if (listeners === undefined) throw new ServiceError('ERR_SERVICE_STATE', 'the service is not listening');
    if (pair === undefined && (config.certFile === undefined || config.keyFile === undefined)) {
      log.info('certificate not reloaded: no certificate files (development certificate or PEM text)');
      return false;
    }
    try {
      const next = pair ?? (await readCertificatePair(config.certFile as string, config.keyFile as string));
      const info = checkCertificatePair(next);
      listeners.setCertificate(next);
      log.info('certificate reloaded: new connections get it', { ...info });
      return true;
    } catch (error) {
      log.error('certificate reload refused: the previous certificate is still served', error);
      throw error instanceof ServiceError ? error : new ServiceError('ERR_CERT_UNREADABLE', 'the certificate or key does not load', { cause: error });
    }
  }

  const fetchHandler = createFetchHandler(handler);
  return {
    handler,
    // Either call of FetchHandler's: what is in the second place is sorted out by fetchInit.
    fetch: (input: Request | URL | string, second?: unknown) => inFlight.add(fetchHandler(input as Request, second)),
    middleware: handler.middleware,
    config,
    openapi,
    listen: () =>
      lifecycle.listen(async () => {
      // Before anything is written: a bad certificate pair, host or key file leaves nothing behind.
      let { cert, key } = (await preflight(config)) ?? {};
      const { store, users } = await ready(true);
      // S-4: on a database the first server records the settings and every later one must agree;
      // on a file store, every server running on it. None drops the others' Digest secrets.
      const { recorded, digestKey } = await opened(true);
      const agreed = await agreeOnSettings(store, recorded, wantedSettings(config, await digestKey?.()));
      let dev: DevCertificate | undefined;
      try {
        await users.warmUp();
        if (cert === undefined || key === undefined) {
          dev = await ensureDevCertificate(config.certDir);
          ({ cert, key } = dev);
          log.warn('using a DEVELOPMENT certificate for localhost, 127.0.0.1 and ::1: pass --cert and --key in production', {
            certPath: dev.certPath,
            created: dev.created,
          });
        }
        listeners = await startListeners(
          {
            ...config,
            cert,
            key,
            onListenerError: (error) => log.error('listener error', error),
            // C-6: what the HTTP parser refused is answered without a handler: a line of its own,
            // at warn like any 4xx request line.
            onRefusedRequest: (fields) => {
              log.warn('request refused by the HTTP parser', fields);
              // H-5: answered, so counted; no route, and a method the parser may not have read.
              metrics?.request(UNMATCHED_ROUTE, '', fields.status);
            },
            // L-2: HTTP/2 streams hold the whole budget: connections over their share are refused meanwhile.
            onBudgetFull: (fields) => log.warn('HTTP/2 budget full (maxUnsentBytesTotal): connections over their share are refused', fields),
          },
          handler,
        );
        if (metrics !== undefined && config.metricsPort !== undefined) {
          scrape = await startMetricsListener(config.host, config.metricsPort, metrics.render, config);
        }
      } catch (error) {
        await listeners?.close(0);
        listeners = undefined;
        // A start that fails (address in use, not ours) leaves no new certificate, nor its directory, behind.
        if (dev !== undefined) await removeDevCertificate(dev);
        // Nor a file store's record of a server running: the others need not agree with it.
        await store.settings?.leave().catch(() => undefined);
        throw error;
      }
      // P-10: the Digest secrets exist only while Digest is on. Only a server that did start, and
      // that no other server agreed with, drops them: a second start on a busy port, or beside a
      // running server, must not wipe the secrets a running Digest server needs.
      if (!config.digest && agreed !== 'agreed') await dropDigestSecrets(store);
      // H-2: the files are watched; a development certificate (no files) is not.
      if (config.certFile !== undefined && config.keyFile !== undefined) {
        certWatcher = watchCertificatePair(config.certFile, config.keyFile, config.certPollIntervalMs, () => void reloadCertificate().catch(() => {}));
      }
      const { url, httpUrl } = listeners;
      const metricsUrl = scrape?.url;
      log.notice('listening', { url, ...(httpUrl === undefined ? {} : { httpUrl }), ...(metricsUrl === undefined ? {} : { metricsUrl }) });
      return { url, httpUrl, metricsUrl };
      }),
    reloadCertificate,
    async close(graceMs = 10_000) {
      validateOptionalInteger(graceMs, 'graceMs', 0, 2 ** 31 - 1);
      return lifecycle.close(async () => {
        // C-5 (amended): readiness fails first, and the listeners serve on for the shutdown delay so
        // a load balancer stops sending here before they close.
        readiness.stopServing();
        if (listeners !== undefined && config.shutdownDelayMs > 0) {
          log.info(`stopping: /readyz answers 503; serving on for ${config.shutdownDelayMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
        }
      // C-5: one grace for everything close() waits for, the requests and the work they started.
      const deadline = performance.now() + graceMs;
      certWatcher?.close();
      certWatcher = undefined;
      await Promise.all([listeners?.close(graceMs), scrape?.close()]);
      listeners = undefined;
      scrape = undefined;
      // In-process requests (service.fetch) in flight finish as a socket's do, within the same grace;
      // unlike a socket's they cannot be cut, so past it close() only stops waiting for them.
      await inFlight.settled(Math.max(0, deadline - performance.now()));
      const open = await core?.catch(() => undefined);
      // A 202 promised a token: its issuance and delivery finish before the store closes, within
      // the same grace as the requests (a store that hangs must not hold the shutdown).
      if (open !== undefined) {
        const gaveUp = await withTimeout(open.detachedDone(), Math.max(0, deadline - performance.now())).then(
          () => false,
          () => true,
        );
        if (gaveUp) log.warn(`reset token requests still being issued or delivered after ${graceMs} ms are given up`);
        // Only work given up on has its database connections ended; otherwise the store finishes what it has.
        await open.store.close({ abandon: gaveUp });
      }
      });
    },
    users: {
      add: async (name, password, opts) => {
        validateString(name, 'name');
        validateString(password, 'password');
        validateOptionalObject(opts, 'options');
        const role = opts?.role ?? 'user';
        if (role !== 'user' && role !== 'admin') throw invalidArgument('options.role', '"user" or "admin"', role);
        await checkNewUser(name, password, config.minPasswordLength);
        return withUsers((u) => u.add(name, password, role));
      },
      verify: async (name, password) => {
        validateString(name, 'name');
        validateString(password, 'password');
        return withUsers(async (u) => (await u.verify(name, password)) !== undefined);
      },
      setPassword: async (name, password) => {
        validateString(name, 'name');
        validateString(password, 'password');
        return withUsers(async (u) => {
          const outcome = await u.setPassword(name, password, { via: 'library', by: null });
          if (outcome !== 'ok') throw new ServiceError('ERR_USER_NOT_FOUND', `no user "${name}"`);
        });
      },
      remove: async (name, opts) => {
        validateString(name, 'name');
        validateOptionalObject(opts, 'options');
        validateOptionalBoolean(opts?.force, 'options.force');
        return withUsers(async (u) => {
          const outcome = await u.remove(name, { allowLastAdmin: opts?.force === true });
          if (outcome === 'last-admin') throw new ServiceError('ERR_LAST_ADMIN', `"${name}" is the only admin; make another user admin first, or pass { force: true }`);
          return outcome === 'ok';
        });
      },
      setRole: async (name, role) => {
        validateString(name, 'name');
        if (role !== 'user' && role !== 'admin') throw invalidArgument('role', '"user" or "admin"', role);
        return withUsers(async (u) => {
          const outcome = await u.setRole(name, role);
          if (outcome === 'not-found') throw new ServiceError('ERR_USER_NOT_FOUND', `no user "${name}"`);
          if (outcome === 'last-admin') throw new ServiceError('ERR_LAST_ADMIN', `"${name}" is the only admin; make another user admin first`);
        });
      },
      list: () => withUsers((u) => u.list()),
      issueResetToken: async (name) => {
        validateString(name, 'name');
        return withUsers((u) => u.issueResetToken(name));
      },
    },
  };
}

/** The store and the user operations: what the CLI and library calls need (no Digest key until a secret is sealed). */
async function openCore(config: Config, log: Logger, gate: HashGate, metrics: Metrics | undefined): Promise<Core> {
  isCommonPassword(''); // load the bundled list now, not during a request
  const opened = await openStore(config.store, {
    hooks: { onWarning: (message, fields) => log.warn(message, fields), onCompactError: (error) => log.error('users store compaction failed; it is retried later', error) },
    postgres: config.postgres,
    userhash: computeUserhash,
  });
  const store = metrics === undefined ? opened : instrumentStore(opened, metrics);
  // S-4: on a database, CLI commands and library calls follow the settings its servers recorded.
  const recorded = await store.settings?.read().catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const realm = recorded?.realm ?? config.realm;
  // U-1 (amended): side files live beside the real store file, so every path to one store (a
  // symbolic link among them) finds the same key; a memory store's key lives in memory (U-6).
  const digestKey =
    (recorded?.digest ?? config.digest)
      ? digestKeyLoader({
          file: async () => (config.digestKeyBesideStore ? join(dirname(await resolveStorePath(config.store, false)), 'digest.key') : config.digestKeyFile),
          inMemory: config.digestKeyInMemory,
          recorded: recorded?.digestKeyFingerprint,
        })
      : undefined;
  // Work that goes on after its answer was written (P-12's issuance, a token's delivery): close()
  // waits for it within the grace.
  const detached = new Set<Promise<void>>();
  const track = (task: Promise<void>): Promise<void> => {
    detached.add(task);
    void task.finally(() => detached.delete(task));
    return task;
  };
  const users = createUsers({
    store,
    gate,
    cost: config.scrypt,
    minPasswordLength: recorded?.minPasswordLength ?? config.minPasswordLength,
    resetTokenTtlMs: config.resetTokenTtlMs,
    now: Date.now,
    digest:
      digestKey === undefined
        ? undefined
        : {
            seal: async (name, prepared) =>
              (await digestKey()).vault.seal({ 'SHA-256': computeHA1('SHA-256', name, realm, prepared), MD5: computeHA1('MD5', name, realm, prepared) }, name),
          },
    changed: (event) => fireHook(log, 'onPasswordChanged', config.onPasswordChanged, event),
    issued: (event) => void track(fireHook(log, 'onResetToken', config.onResetToken, event)),
  });
  const detachedDone = async (): Promise<void> => {
    while (detached.size > 0) await Promise.all(detached);
  };
  return { store, users, realm, digestKey, recorded, track, detachedDone };
}

/** What HTTP requests need besides the core: the authenticator (with the Digest key, when on) and the handlers. */
async function openHttp(core: Core, config: Config, log: Logger, metrics: Metrics | undefined, selector: Selector, callerRecords: WeakMap<Caller, UserRecord>): Promise<Parts> {
  const { store, users, realm, track } = core;
  const key = await core.digestKey?.();
  const auth = createAuthenticator({
    realm,
    users,
    throttle: store.throttle,
    reserveAndGet: (account, address) => store.reserveAndGet(account, address),
    nonces: store.nonces,
    digest: key === undefined ? undefined : { auth: createDigestAuth({ realm, secret: key.nonceSecret }), vault: key.vault },
    ...(metrics === undefined ? {} : { onRefused: (kind: 'locked' | 'busy') => metrics.throttled(kind) }),
  });
  const { put, post } = createPasswordHandlers({ users, auth, maxBodyBytes: config.maxBodyBytes });
  const authenticateCaller = createCallerAuthenticator(auth, users, callerRecords);
  const admin = createUserHandlers({
    basePath: config.basePath,
    users,
    authenticate: authenticateCaller,
    selector,
    maxBodyBytes: config.maxBodyBytes,
    changed: (change) => {
      // the audit line: who, what, which user, from where (never a password: none is in `change`).
      log.info('user changed', { change: change.change, name: change.name, by: change.by, address: change.address, ...(change.role === undefined ? {} : { role: change.role }) });
      fireHook(log, 'onUserChanged', config.onUserChanged, { name: change.name, change: change.change, by: change.by, at: new Date() });
    },
  });
  const requestResetToken = createResetTokenRequestHandler({
    maxBodyBytes: config.maxBodyBytes,
    // P-12 / P-8: every request is one event against the address's budget (no account: the
    // name is not the caller's, and counting it would let anyone lock a victim out).
    admit: async (ctx) => void (await (await auth.gate(undefined, ctx.address)).fail()),
    issue: (name) =>
      track(
        (async () => {
          try {
            if ((await users.get(name)) === undefined) return;
            if (!(await store.issuance.take(name, RESET_TOKENS_PER_HOUR, 3_600_000))) return;
            await users.issueResetToken(name); // delivered through onResetToken (`issued` above, tracked too)
          } catch (error) {
            // P-12: the user holds the most live tokens already; earlier ones stay good.
            if (error instanceof ServiceError && error.code === 'ERR_RESET_TOKEN_LIMIT') log.warn('reset token not issued: the user holds the most live tokens allowed', { name });
            else log.error('reset token request failed', error);
          }
        })(),
      ),
  });
  return { ...core, put, post, authenticateCaller, admin, requestResetToken };
}

/** A frozen copy-free view: the document is shared by every caller of openapi(). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/** S-4: what this server's configuration says about the settings instances must share (`key`: the Digest key it uses). */
function wantedSettings(config: Config, key: DigestKey | undefined): SharedSettings {
  return {
    realm: config.realm,
    digest: config.digest,
    digestKeyFingerprint: config.digest && key !== undefined ? key.fingerprint : null,
    minPasswordLength: config.minPasswordLength,
  };
}

/**
 * S-4 at a server's start: the store's servers agree with `wanted` (SettingsLedger.agree). The
 * service was opened following `recorded`, the settings its store's servers used then: if those
 * differ from `wanted` (a file store's other server has stopped since), it refuses too, rather
 * than serve with settings it would not record.
 */
async function agreeOnSettings(store: Store, recorded: SharedSettings | undefined, wanted: SharedSettings): Promise<'recorded' | 'agreed' | undefined> {
  if (store.settings === undefined) return undefined;
  const agreed = await store.settings.agree(wanted);
  const differences = recorded === undefined ? [] : settingsDifferences(recorded, wanted, 'the servers it followed when it opened the store', 'this one');
  if (differences.length > 0) {
    await store.settings.leave();
    throw new ServiceError('ERR_STORE_SETTINGS', `this server's settings differ from those of the store's servers (S-4) — ${differences.join('; ')}; start it again`);
  }
  return agreed;
}

/**
 * P-10: the Digest secrets exist only while Digest is on: a server that starts without it drops
 * them. (Only a listening server: a CLI command without --digest must not wipe a running Digest
 * server's secrets.)
 */
async function dropDigestSecrets(store: Store): Promise<void> {
  for (const record of await store.list()) {
    if (record.digest === undefined) continue;
    await store.update(record.name, (current) => {
      if (current?.digest === undefined) return { next: undefined, result: undefined };
      const { digest: _dropped, ...rest } = current;
      return { next: rest, result: undefined };
    });
  }
}

/** H-5: a hash refused because the gate's queue is full counts as a `hash-queue-full` refusal. */
function countRefusals(gate: HashGate, metrics: Metrics): HashGate {
  return {
    run: (task, caller) =>
      gate.run(task, caller).catch((error: unknown) => {
        if (isHashBusy(error)) metrics.throttled('hash-queue-full');
        throw error;
      }),
    get active() {
      return gate.active;
    },
    get queued() {
      return gate.queued;
    },
  };
}

/** a hook runs detached; a throw or a hang is logged and never affects the change. */
function fireHook<E>(log: Logger, name: string, hook: ((event: E) => unknown) | undefined, event: E): Promise<void> {
  if (hook === undefined) return Promise.resolve();
  const hung = setTimeout(() => log.warn(`${name} hook has not settled after 10 s`), 10_000);
  hung.unref();
  return Promise.resolve()
    .then(() => hook(event))
    .then(
      () => clearTimeout(hung),
      (error: unknown) => {
        clearTimeout(hung);
        log.error(`${name} hook failed`, error);
      },
    );
}

