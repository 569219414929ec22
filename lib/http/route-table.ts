// every route declared once, as data: its path, methods, guard, whether it is negotiated or
// quiet, its handlers, and what the OpenAPI document says of it. The router, the guards, the
// dispatcher's problem-format choice and /openapi.json (lib/ops/openapi.ts) all read this one
// table, so a route cannot be served and left undescribed, or described and not served.
import type { RequestContext } from './context.js';
import type { Handler } from './dispatch.js';
import { routeLabel } from './router.js';

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
export type JsonObject = { readonly [key: string]: Json };

/** What the OpenAPI document says of one method of a route (HEAD is GET's twin, OPTIONS is made from the methods). */
export interface OperationDoc {
  readonly id: string;
  readonly summary: string;
  readonly tags: readonly string[];
  /** Status (or `4XX`) → response object or $ref; the statuses every route can answer are added. */
  readonly responses: JsonObject;
  readonly parameters?: readonly Json[];
  readonly requestBody?: JsonObject;
  readonly security?: Json;
}

export interface RouteMethod {
  readonly handler: Handler;
  readonly doc: OperationDoc;
}

/** One route. */
export interface RouteDecl {
  /** The router's pattern (lib/http/router.ts): `/user/:name`, `/api/:resource(books)`. */
  readonly pattern: string;
  /** By method (GET serves HEAD too; OPTIONS is answered from this list). */
  readonly methods: Readonly<Record<string, RouteMethod>>;
  /** Runs before any handler of the route (T-3: HTTPS only, P-1: no query); not before OPTIONS or a 405 (R-7, P-1). */
  readonly guard?: ((ctx: RequestContext) => void) | undefined;
  /** Chooses its representation by extension and return_type like /api/ (E-1: so do its problems). */
  readonly negotiated?: boolean;
  /** H-3: successes are not logged. */
  readonly quiet?: boolean;
  /** The OpenAPI path(s): default the router's label; `extensions` adds `.json` and `.xml` forms (N-1). */
  readonly docPath?: string;
  readonly extensions?: boolean;
  /** Parameters shared by every operation of the path (OpenAPI path item `parameters`). */
  readonly parameters?: readonly Json[];
  /** Headers an OPTIONS answer carries beside Allow: `accept-post`, `accept-patch` (RFC 5789 §3.1). */
  readonly optionsHeaders?: Readonly<Record<string, string>>;
  /** Extra OPTIONS responses (P-12's 404 when the route is off elsewhere). */
  readonly optionsResponses?: JsonObject;
}

/** The router's input: `{ pattern: { METHOD: handler } }`, each handler behind its route's guard. */
export function routerTable(routes: readonly RouteDecl[]): Record<string, Record<string, Handler>> {
  const table: Record<string, Record<string, Handler>> = {};
  for (const route of routes) {
    if (route.pattern in table) throw new TypeError(`route ${route.pattern} is declared twice`);
    const methods: Record<string, Handler> = {};
    const guard = route.guard;
    for (const [method, { handler }] of Object.entries(route.methods)) {
      methods[method] = guard === undefined ? handler : (ctx, params) => (guard(ctx), handler(ctx, params));
    }
    table[route.pattern] = methods;
  }
  return table;
}

/** By route label (`ctx.route`): the headers its OPTIONS answer carries beside Allow. */
export function optionsHeadersByLabel(routes: readonly RouteDecl[]): ReadonlyMap<string, Readonly<Record<string, string>>> {
  return new Map(routes.flatMap((route) => (route.optionsHeaders === undefined ? [] : [[routeLabel(route.pattern), route.optionsHeaders] as const])));
}

/** The labels (as the router reports them, `ctx.route`) of the routes that `pick` selects. */
export function routeLabels(routes: readonly RouteDecl[], pick: (route: RouteDecl) => boolean): ReadonlySet<string> {
  return new Set(routes.filter(pick).map((route) => routeLabel(route.pattern)));
}
