import type { RequestContext } from '../http/context.js';
import { requirePreconditions } from '../http/preconditions.js';
import { HttpError, problem } from '../http/problem.js';
import { decodeComponent, parsePairs } from '../http/query.js';
import type { Reply } from '../http/reply.js';
import { createMemo } from '../memo.js';
import { createEtagMemo } from '../representation/etag.js';
import { OFFERED, parseFormat, type Format, type MediaType, type Selection, type Selector } from '../representation/select.js';
import { toXml } from '../representation/xml.js';
import type { Registry } from '../resources/registry.js';

const CONTENT_TYPES: { readonly [T in MediaType]: string } = {
  'application/json': 'application/json; charset=utf-8',
  'application/xml': 'application/xml; charset=utf-8',
  'text/xml': 'text/xml; charset=utf-8',
};

/** Longest URL put in Link / Content-Location; beyond it they are left out (clients cap header size). */
const MAX_LINK_LENGTH = 2048;

/**
 * The request target as the handler needs it, derived once per distinct target (it is a pure
 * function of the raw target, so it is memoized): the resource, the format asked for by extension
 * or `return_type`, the query for the loader, and the N-13 headers for each representation.
 */
interface Target {
  readonly name: string;
  readonly extension: Format | undefined;
  readonly returnType: Format | undefined;
  /** The query's names and values in request order, alternating, for the loader's URLSearchParams. */
  readonly pairs: readonly string[];
  /** Link and Content-Location for a JSON and for an XML answer; undefined when too long to send. */
  readonly json: Links | undefined;
  readonly xml: Links | undefined;
  /** A 406's Link (both representations), undefined when too long. */
  readonly both: string | undefined;
  /** The response headers for each selection (they are constants), made when first needed. */
  readonly headerSets: Map<Selection, Readonly<Record<string, string>>>;
}

interface Links {
  /** The other representation, as `<url>; rel="alternate"; type="…"`. */
  readonly link: string;
  /** This representation's own URL (the extension form), for Content-Location. */
  readonly location: string;
}

/** Distinct request targets remembered (see lib/memo.ts), and the longest one remembered. */
const TARGET_MEMO = { size: 1024, maxKeyLength: 256 } as const;

/**
 * Reads `segment` (`<name>[.<ext>]`) or `segment?rawQuery` (N-8; '?' never occurs in a path segment).
 * Throws HttpError 404 for an unknown extension, 400 for malformed percent-encoding, an unknown or
 * repeated `return_type`.
 */
function parseTarget(key: string, base: string): Target {
  const q = key.indexOf('?');
  const decoded = decodeComponent(q < 0 ? key : key.slice(0, q), false);
  if (decoded === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The path has malformed percent-encoding.' }));
  const dot = decoded.lastIndexOf('.');
  const name = dot < 0 ? decoded : decoded.slice(0, dot);
  let extension: Format | undefined;
  if (dot >= 0) {
    extension = parseFormat(decoded.slice(dot + 1));
    if (extension === undefined) throw new HttpError(problem(404, 'not-found', { detail: 'Available extensions: .json, .xml.' }));
  }
  const pairs = parsePairs(q < 0 ? '' : key.slice(q + 1));
  if (pairs === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The query has malformed percent-encoding.' }));
  let returnType: Format | undefined;
  let asked = false;
  for (let i = 0; i < pairs.length; i += 2) {
    if (pairs[i] !== 'return_type') continue;
    if (asked) throw new HttpError(problem(400, 'bad-request', { detail: 'return_type may be given at most once.' }));
    asked = true;
    returnType = parseFormat(pairs[i + 1] as string);
    if (returnType === undefined) {
      throw new HttpError(problem(400, 'bad-request', { detail: 'return_type must be json or xml.', allowed: ['json', 'xml'] }));
    }
  }
  const query = linkQuery(pairs);
  const path = (format: Format): string => `${base}${name}.${format}${query}`;
  const alternate = (format: Format): string => `<${path(format)}>; rel="alternate"; type="${format === 'json' ? 'application/json' : 'application/xml'}"`;
  // N-13, within reason: a long query would make these headers larger than clients accept.
  const fits = (format: Format): boolean => path(format).length <= MAX_LINK_LENGTH;
  return {
    name,
    extension,
    returnType,
    pairs,
    json: fits('json') ? { link: alternate('xml'), location: path('json') } : undefined,
    xml: fits('xml') ? { link: alternate('json'), location: path('xml') } : undefined,
    both: fits('json') ? `${alternate('json')}, ${alternate('xml')}` : undefined,
    headerSets: new Map(),
  };
}

/**
 * GET/HEAD /api/<name>[.json|.xml] (N-1..N-13); `base` is the path before the name, so other
 * resources (H-3's /healthz) are served by the same path: `resource` is the route's parameter.
 */
export function createRepresentationHandler(registry: Registry, selector: Selector, base = '/api/') {
  const etagOf = createEtagMemo();
  const targetOf = createMemo((key: string) => parseTarget(key, base), TARGET_MEMO);
  return function representation(ctx: RequestContext, params: Readonly<Record<string, string>>): Reply | Promise<Reply> {
    const segment = params['resource'] ?? '';
    const rawQuery = ctx.rawQuery;
    // '?' never occurs in a path segment, so the key is unambiguous.
    const target = targetOf(rawQuery === undefined ? segment : `${segment}?${rawQuery}`);
    const load = registry.get(target.name);
    if (load === undefined) throw new HttpError(problem(404, 'not-found'));
    const selection = selector.select(target.extension, target.extension === undefined ? target.returnType : undefined, ctx.headers.accept);
    if (selection.kind === 'not-acceptable') {
      throw new HttpError(problem(406, 'not-acceptable', { detail: 'This resource is available as JSON or XML.', available: [...OFFERED] }), {
        vary: 'Accept',
        ...(target.both === undefined ? {} : { link: target.both }),
      });
    }
    // A fresh URLSearchParams per call: a loader may change the one it gets.
    const search = new URLSearchParams();
    const pairs = target.pairs;
    for (let i = 0; i < pairs.length; i += 2) search.append(pairs[i] as string, pairs[i + 1] as string);
    const loaded = load(search);
    // Loaders usually return a plain value: answer synchronously then, without a promise round.
    if (isThenable(loaded)) return Promise.resolve(loaded).then((value) => represent(ctx, target, selection, value, etagOf));
    return represent(ctx, target, selection, loaded, etagOf);
  };
}

type EtagOf = (mediaType: string, body: string) => string;

/** Serializes a loaded value into the chosen representation, with its N-7 and N-13 headers. */
function represent(ctx: RequestContext, target: Target, selection: Extract<Selection, { kind: 'chosen' }>, loaded: unknown, etagOf: EtagOf): Reply {
  const value = loaded ?? null;
  const body = serialize(target, selection.format, value);
  const headers = headersFor(target, selection);
  const etag = etagOf(selection.type, body);
  // E-4: If-Match holds when it names the strong ETag of any representation of the current state,
  // so the others' tags are computed, only when it is asked. If-Unmodified-Since is ignored: these
  // representations have no modification date (RFC 9110 §13.1.4). If-None-Match → 304 is writeReply's.
  if (ctx.headers['if-match'] !== undefined) {
    requirePreconditions(ctx.method, ctx.headers, { exists: true, etags: allEtags(target, selection, value, body, etagOf), selected: etag });
  }
  return selection.byAccept ? { status: 200, headers, body, etag, vary: VARY_ACCEPT } : { status: 200, headers, body, etag };
}

function serialize(target: Target, format: Format, value: unknown): string {
  return format === 'json' ? JSON.stringify(value) ?? 'null' : toXml(value, { root: target.name });
}

/** The ETag of every offered type's representation of `value`, given the chosen one's body. */
function allEtags(target: Target, selection: Extract<Selection, { kind: 'chosen' }>, value: unknown, body: string, etagOf: EtagOf): string[] {
  const bodies: Record<Format, string | undefined> = { json: undefined, xml: undefined };
  bodies[selection.format] = body;
  return OFFERED.map((type) => {
    const format: Format = type === 'application/json' ? 'json' : 'xml';
    return etagOf(type, (bodies[format] ??= serialize(target, format, value)));
  });
}

const VARY_ACCEPT: readonly string[] = ['Accept'];

/** Content-Type and the N-13 headers of a target's representation; one frozen object per selection. */
function headersFor(target: Target, selection: Extract<Selection, { kind: 'chosen' }>): Readonly<Record<string, string>> {
  let headers = target.headerSets.get(selection);
  if (headers === undefined) {
    const links = selection.format === 'json' ? target.json : target.xml;
    const made: Record<string, string> = { 'content-type': CONTENT_TYPES[selection.type] };
    if (links !== undefined) {
      made['link'] = links.link;
      if (selection.byAccept) made['content-location'] = links.location;
    }
    headers = Object.freeze(made);
    target.headerSets.set(selection, headers);
  }
  return headers;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** The query re-encoded, less `return_type` (it no longer decides): '' or '?k=v&…', in request order. */
function linkQuery(pairs: readonly string[]): string {
  let out = '';
  for (let i = 0; i < pairs.length; i += 2) {
    const name = pairs[i] as string;
    if (name === 'return_type') continue;
    out += `${out === '' ? '?' : '&'}${encodeURIComponent(name)}=${encodeURIComponent(pairs[i + 1] as string)}`;
  }
  return out;
}
