/**
 * A small method + path table, built once. Patterns are '/'-separated segments, each a literal, a
 * `:param` (which matches one non-empty raw segment), or a `:param(stem)`: a parameter whose value
 * is `stem` or `stem.<anything>` (a fixed resource with an optional extension, e.g. `/healthz.xml`).
 * Matching never decodes: handlers decode params themselves so they can refuse malformed
 * percent-encoding with a 400.
 */
import { createMemo } from '../memo.js';

export type Match<H> =
  | { readonly kind: 'found'; readonly handler: H; readonly params: Readonly<Record<string, string>>; readonly allow: readonly string[]; readonly route: string }
  | { readonly kind: 'method-not-allowed'; readonly allow: readonly string[]; readonly route: string }
  | { readonly kind: 'not-found' };

/** One segment of a pattern: a literal to compare, or the name of a parameter (with its stem, if fixed). */
type Segment =
  | { readonly literal: string; readonly param?: undefined }
  | { readonly literal?: undefined; readonly param: string; readonly stem?: string | undefined };

interface Route<H> {
  readonly segments: readonly Segment[];
  readonly handlers: ReadonlyMap<string, H>;
  readonly allow: readonly string[];
  /** The pattern as a label without raw values (metrics, OpenAPI): `/api/{resource}`, `/healthz`. */
  readonly route: string;
}

export interface Router<H> {
  match(method: string, path: string): Match<H>;
}

const PARAM = /^:([a-zA-Z][a-zA-Z0-9]*)(?:\(([A-Za-z0-9_~-]+)\))?$/;
const LITERAL = /^[A-Za-z0-9._~-]+$/;
const SLASH = 0x2f;
const DOT = 0x2e;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;

/**
 * Builds a router from `{ pattern: { METHOD: handler } }`. `OPTIONS` is always allowed and listed;
 * `HEAD` is allowed where `GET` is (the reply writer drops the body). One trailing slash is ignored.
 */
export function createRouter<H>(table: Readonly<Record<string, Readonly<Record<string, H>>>>): Router<H> {
  const routes: Route<H>[] = [];
  for (const [pattern, methods] of Object.entries(table)) {
    const segments = parsePattern(pattern);
    const route = labelOf(segments);
    const handlers = new Map<string, H>(Object.entries(methods));
    if (handlers.has('GET') && !handlers.has('HEAD')) handlers.set('HEAD', handlers.get('GET') as H);
    const allow = allowList(Object.keys(methods));
    routes.push({ segments, handlers, allow, route });
  }

  /** The route a path matches and its parameters (frozen: every request for the path shares them), or undefined. */
  const find = (path: string): Found<H> | undefined => {
    if (path.charCodeAt(0) !== SLASH) return undefined;
    const end = path.length > 1 && path.charCodeAt(path.length - 1) === SLASH ? path.length - 1 : path.length;
    for (const route of routes) {
      const params = matchRoute(route.segments, path, end);
      if (params !== undefined) return { route, params: Object.freeze(params), byMethod: new Map() };
    }
    return undefined;
  };
  // A path asked for again (the same resource, request after request) is not walked again.
  const byPath = createMemo(find, PATH_MEMO);

  return {
    match(method, path) {
      const found = byPath(path);
      if (found === undefined) return NOT_FOUND;
      let match = found.byMethod.get(method);
      if (match === undefined) {
        const { route, params } = found;
        const handler = route.handlers.get(method);
        match = handler !== undefined ? { kind: 'found', handler, params, allow: route.allow, route: route.route } : { kind: 'method-not-allowed', allow: route.allow, route: route.route };
        // Methods a route does not know are all alike: only a few are kept.
        if (found.byMethod.size < MAX_METHODS_KEPT) found.byMethod.set(method, match);
      }
      return match;
    },
  };
}

/** A path's route and parameters, and the match made for each method asked for it. */
interface Found<H> {
  readonly route: Route<H>;
  readonly params: Readonly<Record<string, string>>;
  readonly byMethod: Map<string, Match<H>>;
}

const NOT_FOUND = { kind: 'not-found' } as const;
/** Paths remembered (lib/memo.ts), and the longest one remembered. */
const PATH_MEMO = { size: 1024, maxKeyLength: 256 } as const;
const MAX_METHODS_KEPT = 8;

/** The `Allow` list of a route with these methods: HEAD where GET is, then OPTIONS (N-8). */
export function allowList(methods: readonly string[]): string[] {
  const allow = [...methods];
  if (allow.includes('GET') && !allow.includes('HEAD')) allow.push('HEAD');
  if (!allow.includes('OPTIONS')) allow.push('OPTIONS');
  return allow;
}

/** The label the router reports for a pattern (`ctx.route`, metrics, the route table): `/api/{resource}`, `/healthz`. */
export function routeLabel(pattern: string): string {
  return labelOf(parsePattern(pattern));
}

function parsePattern(pattern: string): Segment[] {
  if (!pattern.startsWith('/')) throw new TypeError(`route pattern must start with '/': ${pattern}`);
  return pattern.slice(1).split('/').map((s): Segment => {
    const param = PARAM.exec(s);
    if (param !== null) return { param: param[1] as string, stem: param[2] };
    if (LITERAL.test(s)) return { literal: s };
    throw new TypeError(`bad segment "${s}" in route ${pattern}`);
  });
}

function labelOf(segments: readonly Segment[]): string {
  return `/${segments.map((s) => s.literal ?? s.stem ?? `{${s.param}}`).join('/')}`;
}

/**
 * Whether `path[pos, stop)` is `stem` or `stem.<anything>`. Percent-encoded unreserved characters
 * are those characters (RFC 3986 §6.2.2.2: `/api/some%74hing` is `/api/something`), so a segment
 * with a '%' is compared decoded; the handler still gets it raw and decodes it itself.
 */
function stemMatches(path: string, pos: number, stop: number, stem: string): boolean {
  if (path.startsWith(stem, pos) && (stop === pos + stem.length || path.charCodeAt(pos + stem.length) === DOT)) return true;
  const raw = path.slice(pos, stop);
  if (!raw.includes('%')) return false;
  const plain = raw.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : escape;
  });
  return plain === stem || plain.startsWith(`${stem}.`);
}

/**
 * Walks `path[0, end)` segment by segment against a pattern, in place: no split, and the params
 * object is made only once a parameter matched (the routes tried first usually fail on a literal).
 */
function matchRoute(pattern: readonly Segment[], path: string, end: number): Record<string, string> | undefined {
  let params: Record<string, string> | undefined;
  let pos = 1;
  const last = pattern.length - 1;
  for (let i = 0; i <= last; i++) {
    let stop = path.indexOf('/', pos);
    if (stop < 0 || stop > end) stop = end;
    // The last segment must reach the end; any other must be followed by a '/'.
    if (i === last ? stop !== end : stop === end) return undefined;
    const segment = pattern[i] as Segment;
    if (segment.param === undefined) {
      if (stop - pos !== segment.literal.length || !path.startsWith(segment.literal, pos)) return undefined;
    } else {
      if (stop === pos) return undefined;
      const stem = segment.stem;
      if (stem !== undefined && !stemMatches(path, pos, stop, stem)) return undefined;
      (params ??= {})[segment.param] = path.slice(pos, stop);
    }
    pos = stop + 1;
  }
  return params ?? {};
}
