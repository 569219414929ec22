import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import { RETRY_LATER, ServiceError } from '../errors.js';
import type { Logger } from '../log.js';
import { UNMATCHED_ROUTE, type Metrics } from '../ops/metrics.js';
import { parseFormat, type Format, type ProblemLabel, type Selector } from '../representation/select.js';
import { RequestContext } from './context.js';
import type { HttpRequest, HttpResponse, RequestHandler } from './messages.js';
import { HttpError, problem, renderProblem, type Problem } from './problem.js';
import { parseQuery, singleParam } from './query.js';
import { commonHeaders, writeReply, writeStreamReply, type Reply } from './reply.js';
import type { Match, Router } from './router.js';
import type { TrustProxy } from './trust-proxy.js';

/** A handler returns its reply, or a promise of it (a synchronous reply skips a microtask round). */
export type Handler = (ctx: RequestContext, params: Readonly<Record<string, string>>) => Reply | Promise<Reply>;

export interface DispatchOptions {
  readonly router: Router<Handler>;
  readonly selector: Selector;
  readonly trust: TrustProxy;
  readonly log: Logger;
  readonly maxTargetLength: number;
  /** Common headers for HTTPS and for plain-HTTP responses (T-4: no HSTS on plain HTTP). */
  readonly secureHeaders: Readonly<Record<string, string>>;
  readonly plainHeaders: Readonly<Record<string, string>>;
  /** H-5: every answered request is counted by route pattern and status, and timed. */
  readonly metrics?: Pick<Metrics, 'request'> | undefined;
  /** H-3: route patterns whose successes are not logged (health probes every few seconds would flood the log). */
  readonly quietRoutes?: ReadonlySet<string> | undefined;
  /** Top-level routes served like /api/ resources (extension, return_type): their problems follow the same choice (E-1). */
  readonly negotiatedRoutes?: ReadonlySet<string> | undefined;
  /** By route label: what OPTIONS says beside Allow (`accept-post`, `accept-patch`). */
  readonly optionsHeaders?: ReadonlyMap<string, Readonly<Record<string, string>>> | undefined;
  /** the prefix every route is served under (`/svc`), or '' for none; nothing outside it is served. */
  readonly basePath?: string | undefined;
}

/** Connect's `next`: called, with no argument, for a request the service has no route for. */
export type Next = (error?: unknown) => void;

/** Serves one HTTP/2 stream, given its header block and the address of the session's peer. */
export type StreamHandler = (stream: ServerHttp2Stream, headers: Http2Headers, peer: string) => void;

/**
 * The request handler for node:http(s) and node:http2's compatibility API (what `service.handler`
 * is), with `stream`, the same pipeline fed from node:http2's stream API, which the service's own
 * HTTP/2 listener uses (lib/http/server.ts).
 */
export interface Dispatcher extends RequestHandler {
  readonly stream: StreamHandler;
  /** the same pipeline as Connect-style middleware: `next()` for a path no route matches, instead of 404. */
  readonly middleware: (req: HttpRequest, res: HttpResponse, next: Next) => void;
}

/**
 * The per-request pipeline: context → route → handler → reply; any throw becomes a problem
 * document (E-1) and a non-HttpError is logged and answered 500 without detail (E-3).
 */
export function createDispatcher(options: DispatchOptions): Dispatcher {
  const { router, selector, trust, log, maxTargetLength, metrics } = options;
  const quiet = options.quietRoutes ?? new Set<string>();
  const negotiatedRoutes = options.negotiatedRoutes ?? new Set<string>();
  const base = options.basePath ?? '';
  const nextId = requestIds();
  const observed = log.enabled || metrics !== undefined;
  const secureHeaders = commonHeaders(options.secureHeaders);
  const plainHeaders = commonHeaders(options.plainHeaders);

  const dispatch = (req: HttpRequest, res: HttpResponse): void => {
    const ctx = RequestContext.fromRequest(req, nextId(), trust, observed ? performance.now() : 0, base);
    // node:http2's compatibility API (service.handler on an HTTP/2 server): as the stream API's.
    if (ctx.http2 && !visibleAscii(req.url ?? '')) {
      deliver(ctx, req, res, errorReply(ctx, notAscii()));
      return;
    }
    serve(ctx, req, res);
  };

  const middleware = (req: HttpRequest, res: HttpResponse, next: Next): void => {
    const ctx = RequestContext.fromRequest(req, nextId(), trust, observed ? performance.now() : 0, base);
    const path = ctx.localPath;
    const match = path === undefined || !path.startsWith('/') ? undefined : router.match(ctx.method, path);
    if (match === undefined || match.kind === 'not-found') {
      next(misMounted(req));
      return;
    }
    serve(ctx, req, res, match);
  };

  /**
   * Express strips a mount path from `req.url` and keeps it in `req.baseUrl`; the routes are matched
   * against the whole target, under `basePath`. A mount path `basePath` does not start with can never
   * match: that is said once per request the service hands on, as an error, instead of every request
   * falling through to the app's 404 without a word.
   */
  function misMounted(req: HttpRequest): ServiceError | undefined {
    const mountedAt = (req as { baseUrl?: unknown }).baseUrl;
    if (typeof mountedAt !== 'string' || mountedAt === '') return undefined;
    // Express matches mount paths ignoring case, and baseUrl is the request's own spelling: `/SVC/…`
    // under app.use('/svc') is a path outside the service (its routes are case-sensitive), not a mistake.
    const mount = mountedAt.toLowerCase();
    const lowerBase = base.toLowerCase();
    if (lowerBase === mount || lowerBase.startsWith(`${mount}/`)) return undefined;
    return new ServiceError(
      'ERR_INVALID_OPTION',
      `service.middleware is mounted at "${mountedAt}" but the service's basePath is "${base}": give createService({ basePath: '${mountedAt}' }) the same prefix`,
    );
  }

  /** `match`: the route the middleware already looked up for this path, so it is not looked up twice. */
  function serve(ctx: RequestContext, req: HttpRequest, res: HttpResponse, match?: Match<Handler>): void {
    deliver(ctx, req, res, run(ctx, match));
  }

  function deliver(ctx: RequestContext, req: HttpRequest, res: HttpResponse, result: Reply | Promise<Reply>): void {
    // The usual case, a plain reply to a request without a body, is written at once, without closures.
    if (!(result instanceof Promise) && !hasBody(req)) {
      sendResponse(ctx, res, result);
      return;
    }
    Promise.resolve(result).then(
      (reply) => sendResponse(ctx, res, reply),
      (error: unknown) => sendResponse(ctx, res, errorReply(ctx, error)),
    );
  }

  // HTTP/2 without node:http2's compatibility objects (a request, a response and their listeners
  // per stream): the context is built from the stream's header block and the reply written with
  // `stream.respond()`. No llhttp sits in front of it, so a synchronous reply is written at once
  // whether or not a body follows.
  const stream: StreamHandler = (h2stream, headers, peer) => {
    const ctx = RequestContext.fromStream(h2stream, headers, peer, nextId(), trust, observed ? performance.now() : 0, base);
    // HTTP/1.1's parser refuses such a target; node:http2 hands it over, its octets read as Latin-1.
    const result = visibleAscii(headers[':path'] ?? '') ? run(ctx) : errorReply(ctx, notAscii());
    if (!(result instanceof Promise)) {
      sendStream(ctx, h2stream, result);
      return;
    }
    result.then(
      (reply) => sendStream(ctx, h2stream, reply),
      (error: unknown) => sendStream(ctx, h2stream, errorReply(ctx, error)),
    );
  };

  return Object.assign(dispatch, { stream, middleware });

  /** The handler's reply, or the problem for what it threw synchronously. */
  function run(ctx: RequestContext, match?: Match<Handler>): Reply | Promise<Reply> {
    try {
      return respond(ctx, match);
    } catch (error) {
      return errorReply(ctx, error);
    }
  }

  /** H-5, C-6: counts, times and logs an answered request (called once its response is written). */
  function answered(ctx: RequestContext, status: number): void {
    if (!observed) return;
    const at = performance.now();
    const durationMs = at - ctx.started;
    metrics?.request(ctx.route ?? UNMATCHED_ROUTE, ctx.method, status, durationMs / 1e3);
    if (!log.enabled || (status < 400 && ctx.route !== undefined && quiet.has(ctx.route))) return;
    log.request({
      id: ctx.id,
      method: ctx.method,
      path: ctx.path.length > 512 ? `${ctx.path.slice(0, 512)}…` : ctx.path,
      status,
      durationMs,
      address: ctx.address,
      at,
    });
  }

  /** Routes the request; throws (synchronously or as a rejection) for every failure. */
  function respond(ctx: RequestContext, known?: Match<Handler>): Reply | Promise<Reply> {
    if ((ctx.path.length + (ctx.rawQuery?.length ?? -1) + 1) > maxTargetLength) {
      throw new HttpError(problem(414, 'uri-too-long', { detail: `The request target must be at most ${maxTargetLength} bytes.` }));
    }
    const path = ctx.localPath;
    // nothing outside the mount is served (a framework that strips the prefix first, such as
    // Hono's app.mount without replaceRequest: false, gets this for every request: it says why).
    if (path === undefined) throw new HttpError(problem(404, 'not-found', { detail: `This service serves paths under ${base} only.` }));
    if (!path.startsWith('/')) {
      if (ctx.method === 'OPTIONS' && path === '*') return { status: 204, headers: { allow: 'GET, HEAD, OPTIONS, PUT, POST' } };
      throw new HttpError(problem(400, 'bad-request', { detail: 'The request target must be an absolute path.' }));
    }
    const match = known ?? router.match(ctx.method, path);
    if (match.kind !== 'not-found') ctx.route = match.route;
    switch (match.kind) {
      case 'found':
        return match.handler(ctx, match.params);
      case 'method-not-allowed':
        if (ctx.method === 'OPTIONS') return { status: 204, headers: { allow: match.allow.join(', '), ...options.optionsHeaders?.get(match.route) } };
        throw new HttpError(problem(405, 'method-not-allowed', { detail: `Allowed: ${match.allow.join(', ')}.` }), { allow: match.allow.join(', ') });
      case 'not-found':
        throw new HttpError(problem(404, 'not-found'));
    }
  }

  function errorReply(ctx: RequestContext, error: unknown): Reply {
    let p: Problem;
    let headers: Readonly<Record<string, string | readonly string[]>> = {};
    const retry = error instanceof ServiceError ? { code: error.code, detail: RETRY_LATER.get(error.code) } : undefined;
    if (error instanceof HttpError) {
      p = error.problem;
      headers = error.headers;
    } else if (retry?.detail !== undefined) {
      // S-6: the store is busy (another process holds the lock), unreachable or cannot write, or
      // (P-8) the hashing queue is full: nothing was changed, and credentials that could not be
      // checked never get a 401.
      // A store that cannot be read (ERR_STORE_CORRUPT: a damaged file, a bad row) needs its operator: an error line.
      const fields = { id: ctx.id, code: retry.code, message: (error as Error).message };
      if (retry.code === 'ERR_STORE_CORRUPT') log.error('store unreadable', undefined, fields);
      else if (retry.code !== 'ERR_HASH_BUSY') log.warn('store unavailable', fields);
      p = problem(503, 'overloaded', { detail: retry.detail });
      headers = { 'retry-after': '1' };
    } else {
      log.error('unhandled error', error, { id: ctx.id });
      p = problem(500, 'internal', { detail: `Something went wrong. Quote request id ${ctx.id} when reporting it.` });
    }
    const { type, byAccept } = problemFormatOf(ctx);
    const rendered = renderProblem(p, type);
    // Header names from an HttpError may come in any case (a loader's own); Vary is merged with ours.
    const vary = new Set<string>();
    const rest: Record<string, string | readonly string[]> = {};
    for (const [k, v] of Object.entries(headers)) {
      const name = k.toLowerCase();
      // The framing is the writer's (Content-Length): a Transfer-Encoding beside it is an invalid
      // HTTP/1.1 message (RFC 9112 §6.3), and HTTP/2 has none (RFC 9113 §8.2.2).
      if (name === 'transfer-encoding' || name === 'content-length') continue;
      if (name !== 'vary') rest[name] = v;
      else for (const field of String(v).split(',')) if (field.trim() !== '') vary.add(field.trim());
    }
    if (byAccept) vary.add('Accept');
    return {
      status: p.status,
      headers: { ...rest, 'content-type': rendered.contentType, 'cache-control': 'no-store' },
      body: rendered.body,
      vary: [...vary],
      close: rest['connection'] === 'close',
    };
  }

  /**
   * E-1: the problem's format follows the request's own choice of representation where it made one;
   * its label is the one of that format's types the request's Accept accepts best (E-1 amended).
   */
  function problemFormatOf(ctx: RequestContext): ProblemLabel {
    let extension: Format | undefined;
    // A representation's path, /api/<name>.<ext>, a negotiated route's (/readyz.xml, /user/<name>.xml,
    // /api/<name>/<id>.xml), chose a format: the extension of its last segment.
    const path = ctx.localPath ?? '';
    const negotiated = path.startsWith('/api/') || (ctx.route !== undefined && negotiatedRoutes.has(ctx.route));
    const m = negotiated ? /\.([A-Za-z]+)\/?$/.exec(path) : null;
    if (m !== null) extension = parseFormat(m[1] as string);
    let returnType: Format | undefined;
    if (extension === undefined && ctx.rawQuery !== undefined && negotiated) {
      const query = parseQuery(ctx.rawQuery);
      const rt = query === undefined ? undefined : singleParam(query, 'return_type');
      if (rt?.kind === 'value') returnType = parseFormat(rt.value);
    }
    const accept = ctx.headers.accept;
    return selector.problemFormat(extension, returnType, accept);
  }

  function sendResponse(ctx: RequestContext, res: HttpResponse, reply: Reply): void {
    // Already answered by the listener (a framing error in this request's body, client-error.ts): logged with its status.
    if (res.headersSent) return answered(ctx, res.statusCode);
    if (res.destroyed) return;
    const common = ctx.secure ? secureHeaders : plainHeaders;
    let status = 500;
    try {
      status = writeReply(ctx, res, reply, common);
    } catch (error) {
      log.error('could not write the response', error, { id: ctx.id });
      if (!res.headersSent) {
        // Still traceable: the caller's x-request-id is the one in the error line.
        res.writeHead(500, { 'content-type': 'application/problem+json; charset=utf-8', ...common.object, 'x-request-id': ctx.id });
        res.end(JSON.stringify(problem(500, 'internal')));
      } else {
        status = res.statusCode;
        res.destroy();
      }
    }
    answered(ctx, status);
  }

  function sendStream(ctx: RequestContext, h2stream: ServerHttp2Stream, reply: Reply): void {
    // Reset by the client (or cut by the request time-out) before the reply was ready: nothing to send.
    if (h2stream.headersSent || h2stream.destroyed || h2stream.closed) return;
    const common = secureHeaders;
    let status = 500;
    try {
      status = writeStreamReply(ctx, h2stream, reply, common);
    } catch (error) {
      log.error('could not write the response', error, { id: ctx.id });
      if (!h2stream.headersSent && !h2stream.destroyed) {
        h2stream.respond({ ':status': 500, 'content-type': 'application/problem+json; charset=utf-8', ...common.object, 'x-request-id': ctx.id });
        h2stream.end(JSON.stringify(problem(500, 'internal')));
      } else {
        h2stream.destroy();
      }
    }
    answered(ctx, status);
  }
}

function notAscii(): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail: 'The request target must be visible ASCII: percent-encode other octets (RFC 3986 §2.1).' }));
}

/** RFC 3986 §2, RFC 9113 §8.3.1: a request target holds visible ASCII only (no space, no control, no octet above 0x7E). */
function visibleAscii(target: string): boolean {
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

/** Six base-36 digits: 31 bits of randomness, nearly the 32 of the eight hex digits ids had before. */
const PREFIX_SPACE = 36 ** 6;

/**
 * Two base-36 digits, '00' to 'zz': a count's lowest two, looked up rather than converted for every
 * request (a number's base-36 text is made in V8's runtime: some 200 instructions).
 */
const LOW_SPAN = 36 ** 2;
const LOW_DIGITS: readonly string[] = Array.from({ length: LOW_SPAN }, (_, i) => i.toString(36).padStart(2, '0'));

/**
 * A dispatcher's request ids: a random prefix (telling processes and restarts apart) and a base-36
 * count, `k3x9qa-1abc`. Up to 60 million requests an id is at most 12 characters, which V8 keeps as
 * one flat string: from 13 on, a joined string is a pair of pieces, and node:http's check of every
 * header value then takes V8's slow path for the `x-request-id` (about 900 instructions a request).
 */
export function requestIds(): () => string {
  const prefix = (randomBytes(4).readUInt32BE(0) % PREFIX_SPACE).toString(36).padStart(6, '0');
  let count = 0;
  // From the 1,296th request on: the id but its two lowest digits, made again when they turn.
  let head = '';
  return () => {
    const low = ++count % LOW_SPAN;
    if (count < LOW_SPAN) return `${prefix}-${count.toString(36)}`;
    if (low === 0) head = `${prefix}-${(count / LOW_SPAN).toString(36)}`;
    return head + (LOW_DIGITS[low] as string);
  };
}

/**
 * A request with body framing is answered at the earliest in a microtask: llhttp reports a bad
 * body (smuggling shapes, RFC 9112 §6.3) only after the 'request' event, and that 400 must win
 * over an answer written synchronously to the request in front of it.
 */
function hasBody(req: HttpRequest): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
