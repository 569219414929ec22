import { randomBytes } from 'node:crypto';
import { ServiceError, STORE_UNAVAILABLE } from '../errors.js';
import type { Logger } from '../log.js';
import { UNMATCHED_ROUTE, type Metrics } from '../ops/metrics.js';
import { parseFormat, type Format, type ProblemLabel, type Selector } from '../representation/select.js';
import { RequestContext } from './context.js';
import type { HttpRequest, HttpResponse, RequestHandler } from './messages.js';
import { HttpError, problem, renderProblem, type Problem } from './problem.js';
import { parseQuery, singleParam } from './query.js';
import { writeReply, type CommonHeaders, type Reply } from './reply.js';
import type { Router } from './router.js';
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
  readonly secureHeaders: CommonHeaders;
  readonly plainHeaders: CommonHeaders;
  /** H-5: every answered request is counted by route pattern and status, and timed. */
  readonly metrics?: Pick<Metrics, 'request'> | undefined;
  /** H-3: route patterns whose successes are not logged (health probes every few seconds would flood the log). */
  readonly quietRoutes?: ReadonlySet<string> | undefined;
  /** Top-level routes served like /api/ resources (extension, return_type): their problems follow the same choice (E-1). */
  readonly negotiatedRoutes?: ReadonlySet<string> | undefined;
}

/**
 * The per-request pipeline: context → route → handler → reply; any throw becomes a problem
 * document (E-1) and a non-HttpError is logged and answered 500 without detail (E-3).
 */
export function createDispatcher(options: DispatchOptions): RequestHandler {
  const { router, selector, trust, log, maxTargetLength, metrics } = options;
  const quiet = options.quietRoutes ?? new Set<string>();
  const negotiatedRoutes = options.negotiatedRoutes ?? new Set<string>();
  const idPrefix = randomBytes(4).toString('hex');
  let counter = 0;

  return function dispatch(req, res) {
    const id = `${idPrefix}-${(++counter).toString(36)}`;
    const ctx = new RequestContext(req, id, trust);
    const common = ctx.secure ? options.secureHeaders : options.plainHeaders;
    if (log.enabled || metrics !== undefined) {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        const status = res.statusCode;
        const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
        metrics?.request(ctx.route ?? UNMATCHED_ROUTE, ctx.method, status, durationMs / 1e3);
        if (!log.enabled || (status < 400 && ctx.route !== undefined && quiet.has(ctx.route))) return;
        log.request({
          id,
          method: ctx.method,
          path: ctx.path.length > 512 ? `${ctx.path.slice(0, 512)}…` : ctx.path,
          status,
          durationMs,
          address: ctx.address,
        });
      });
    }
    let result: Reply | Promise<Reply>;
    try {
      result = respond(ctx);
    } catch (error) {
      send(req, res, errorReply(ctx, error), common, id);
      return;
    }
    // The usual case, a plain reply to a request without a body, is written at once, without closures.
    if (!(result instanceof Promise) && !hasBody(req)) {
      send(req, res, result, common, id);
      return;
    }
    Promise.resolve(result).then(
      (reply) => send(req, res, reply, common, id),
      (error: unknown) => send(req, res, errorReply(ctx, error), common, id),
    );
  };

  /** Routes the request; throws (synchronously or as a rejection) for every failure. */
  function respond(ctx: RequestContext): Reply | Promise<Reply> {
    if ((ctx.path.length + (ctx.rawQuery?.length ?? -1) + 1) > maxTargetLength) {
      throw new HttpError(problem(414, 'uri-too-long', { detail: `The request target must be at most ${maxTargetLength} bytes.` }));
    }
    if (!ctx.path.startsWith('/')) {
      if (ctx.method === 'OPTIONS' && ctx.path === '*') return { status: 204, headers: { allow: 'GET, HEAD, OPTIONS, PUT, POST' } };
      throw new HttpError(problem(400, 'bad-request', { detail: 'The request target must be an absolute path.' }));
    }
    const match = router.match(ctx.method, ctx.path);
    if (match.kind !== 'not-found') ctx.route = match.route;
    switch (match.kind) {
      case 'found':
        return match.handler(ctx, match.params);
      case 'method-not-allowed':
        if (ctx.method === 'OPTIONS') return { status: 204, headers: { allow: match.allow.join(', ') } };
        throw new HttpError(problem(405, 'method-not-allowed', { detail: `Allowed: ${match.allow.join(', ')}.` }), { allow: match.allow.join(', ') });
      case 'not-found':
        throw new HttpError(problem(404, 'not-found'));
    }
  }

  function errorReply(ctx: RequestContext, error: unknown): Reply {
    let p: Problem;
    let headers: Readonly<Record<string, string | readonly string[]>> = {};
    if (error instanceof HttpError) {
      p = error.problem;
      headers = error.headers;
    } else if (error instanceof ServiceError && STORE_UNAVAILABLE.has(error.code)) {
      // S-6: the store is busy (another process holds the lock), unreachable or cannot write:
      // nothing was changed, and credentials that could not be checked never get a 401.
      log.warn('store unavailable', { id: ctx.id, code: error.code });
      p = problem(503, 'overloaded', { detail: 'The user store cannot answer right now; nothing was changed. Retry shortly.' });
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
    // A representation's path, /api/<name>.<ext>, a negotiated route's (/readyz.xml, /user/<name>.xml), chose a format.
    const negotiated = ctx.path.startsWith('/api/') || (ctx.route !== undefined && negotiatedRoutes.has(ctx.route));
    const m = negotiated ? /^\/(?:api\/|user\/)?[^/?]*\.([A-Za-z]+)\/?$/.exec(ctx.path) : null;
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

  function send(req: HttpRequest, res: HttpResponse, reply: Reply, common: CommonHeaders, id: string): void {
    if (res.headersSent || res.destroyed) return;
    try {
      writeReply(req, res, reply, common, id);
    } catch (error) {
      log.error('could not write the response', error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/problem+json; charset=utf-8', ...common });
        res.end(JSON.stringify(problem(500, 'internal')));
      } else {
        res.destroy();
      }
    }
  }
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
