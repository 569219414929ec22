/**
 * A small method + path table, built once. Patterns are '/'-separated segments, each a literal or a
 * `:param` (which matches one non-empty raw segment). Matching never decodes: handlers decode params
 * themselves so they can refuse malformed percent-encoding with a 400.
 */

export type Match<H> =
  | { readonly kind: 'found'; readonly handler: H; readonly params: Readonly<Record<string, string>>; readonly allow: readonly string[] }
  | { readonly kind: 'method-not-allowed'; readonly allow: readonly string[] }
  | { readonly kind: 'not-found' };

interface Route<H> {
  readonly segments: readonly string[];
  readonly handlers: ReadonlyMap<string, H>;
  readonly allow: readonly string[];
}

export interface Router<H> {
  match(method: string, path: string): Match<H>;
}

const PARAM = /^:[a-zA-Z][a-zA-Z0-9]*$/;
const LITERAL = /^[A-Za-z0-9._~-]+$/;

/**
 * Builds a router from `{ pattern: { METHOD: handler } }`. `OPTIONS` is always allowed and listed;
 * `HEAD` is allowed where `GET` is (the reply writer drops the body).
 */
export function createRouter<H>(table: Readonly<Record<string, Readonly<Record<string, H>>>>): Router<H> {
  const routes: Route<H>[] = [];
  for (const [pattern, methods] of Object.entries(table)) {
    if (!pattern.startsWith('/')) throw new TypeError(`route pattern must start with '/': ${pattern}`);
    const segments = pattern.slice(1).split('/');
    for (const s of segments) {
      if (!PARAM.test(s) && !LITERAL.test(s)) throw new TypeError(`bad segment "${s}" in route ${pattern}`);
    }
    const handlers = new Map<string, H>(Object.entries(methods));
    if (handlers.has('GET') && !handlers.has('HEAD')) handlers.set('HEAD', handlers.get('GET') as H);
    const allow = [...handlers.keys()];
    if (!allow.includes('OPTIONS')) allow.push('OPTIONS');
    routes.push({ segments, handlers, allow });
  }

  return {
    match(method, path) {
      const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
      const parts = trimmed.slice(1).split('/');
      for (const route of routes) {
        const params = matchSegments(route.segments, parts);
        if (params === undefined) continue;
        const handler = route.handlers.get(method);
        if (handler !== undefined) return { kind: 'found', handler, params, allow: route.allow };
        return { kind: 'method-not-allowed', allow: route.allow };
      }
      return { kind: 'not-found' };
    },
  };
}

function matchSegments(pattern: readonly string[], parts: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  // Literals first, without allocating: most routes tried are not the one that matches.
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    const got = parts[i] as string;
    if (want.charCodeAt(0) === 0x3a /* ':' */ ? got === '' : want !== got) return undefined;
  }
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    if (want.charCodeAt(0) === 0x3a) params[want.slice(1)] = parts[i] as string;
  }
  return params;
}
