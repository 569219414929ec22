import type { RequestContext } from '../http/context.js';
import { requirePreconditions } from '../http/preconditions.js';
import { HttpError, problem } from '../http/problem.js';
import { pathSegment } from '../http/path-segment.js';
import { decodeComponent, parsePairs } from '../http/query.js';
import { headerSet, type Reply } from '../http/reply.js';
import { createMemo } from '../memo.js';
import { createEtagMemo, strongEtag } from '../representation/etag.js';
import { OFFERED, parseFormat, type Format, type MediaType, type Selection, type Selector } from '../representation/select.js';
import { toXml } from '../representation/xml.js';
import type { Caller, ItemContext, Resource, ResourceContext } from '../resources/resource.js';

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
export interface Target {
  /** The path's name, percent-decoded, without the extension. */
  readonly name: string;
  readonly extension: Format | undefined;
  readonly returnType: Format | undefined;
  /** The query's names and values in request order, as a URLSearchParams never handed out: each loader gets a copy (searchOf). */
  readonly search: URLSearchParams;
  /** Link and Content-Location for a JSON and for an XML answer; undefined when too long to send. */
  readonly json: Links | undefined;
  readonly xml: Links | undefined;
  /** A 406's Link (both representations), undefined when too long. */
  readonly both: string | undefined;
  /** The response headers for each selection (they are constants), made when first needed. */
  readonly headerSets: Map<Selection, Readonly<Record<string, string>>>;
  /** The same for a response that depended on the caller (R-1: `Cache-Control: private, no-cache`). */
  readonly privateHeaderSets: Map<Selection, Readonly<Record<string, string>>>;
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
 * Reads `segment` (`<name>[.json|.xml]`) or `segment?rawQuery` (N-8; '?' never occurs in a path
 * segment) of a resource under `base`. Only a literal `.json`/`.xml` ending is an extension: the
 * extension is split off before percent-decoding, so `a%2Ejson` names `a.json` (U-2), and any other
 * ending (`.yaml`) is part of the name. Throws HttpError 400 for malformed percent-encoding, an
 * unknown or repeated `return_type`.
 */
export function parseTarget(key: string, base: string): Target {
  const q = key.indexOf('?');
  const raw = q < 0 ? key : key.slice(0, q);
  const dot = raw.lastIndexOf('.');
  const extension = dot < 0 ? undefined : parseFormat(raw.slice(dot + 1));
  const name = decodeComponent(extension === undefined ? raw : raw.slice(0, dot), false);
  if (name === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The path has malformed percent-encoding.' }));
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
  const encodedName = pathSegment(name);
  const path = (format: Format): string => `${base}${encodedName}.${format}${query}`;
  const alternate = (format: Format): string => `<${path(format)}>; rel="alternate"; type="${format === 'json' ? 'application/json' : 'application/xml'}"`;
  // N-13, within reason: a long query would make these headers larger than clients accept.
  const fits = (format: Format): boolean => path(format).length <= MAX_LINK_LENGTH;
  return {
    name,
    extension,
    returnType,
    search: searchOfPairs(pairs),
    json: fits('json') ? { link: alternate('xml'), location: path('json') } : undefined,
    xml: fits('xml') ? { link: alternate('json'), location: path('xml') } : undefined,
    both: fits('json') ? `${alternate('json')}, ${alternate('xml')}` : undefined,
    headerSets: new Map(),
    privateHeaderSets: new Map(),
  };
}

/** parseTarget for names under `base`, memoized (the key is `segment` or `segment?rawQuery`). */
export function createTargetMemo(base: string): (key: string) => Target {
  return createMemo((key) => parseTarget(key, base), TARGET_MEMO);
}

/** N-1: the representation a request for `target` chose, or 406 (N-4). */
export function selectFor(selector: Selector, target: Target, accept: string | undefined): Chosen {
  const selection = selector.select(target.extension, target.extension === undefined ? target.returnType : undefined, accept);
  if (selection.kind === 'not-acceptable') throw notAcceptable(target.both);
  return selection;
}

export interface RepresentationOptions {
  /** The path the names live under, with its slashes (`/api/`, `/user/`): Link and Content-Location are built on it. */
  readonly base: string;
  /** The resource a decoded name stands for, or undefined (404). */
  readonly resolve: (name: string) => Resource | undefined;
  readonly selector: Selector;
  /** Authenticates a request's caller, for loaders that ask (ResourceContext.authenticate). */
  readonly authenticate: (ctx: RequestContext) => Promise<Caller>;
  /**
   * the names under `base` are items of this resource: a loader's context then carries the
   * resource's name as `name` and the decoded segment as `id`.
   */
  readonly collection?: string | undefined;
  /** The route parameter holding the segment. @default 'resource' */
  readonly param?: string | undefined;
  /** The ETags' memo, when shared with the writes of the same items (a PUT's answer is the next GET's). */
  readonly etagOf?: EtagOf | undefined;
}

/**
 * GET/HEAD <base><name>[.json|.xml] (N-1..N-13, R-1): one path for every resource, the built-in and
 * the embedder's at /api/ and the user at /user/ alike; a loader that needs the caller asks its context.
 */
export function createRepresentationHandler(options: RepresentationOptions) {
  const { base, resolve, selector, authenticate, collection } = options;
  const param = options.param ?? 'resource';
  const etagOf = options.etagOf ?? createEtagMemo();
  const targetOf = createTargetMemo(base);
  // The last target asked for. Its segment is the router's (one string per path, remembered with
  // the route), so a request for it again compares its query alone and joins no memo key (joined,
  // the key is flattened again to be compared: some 300 instructions a request).
  let last: { readonly segment: string; readonly rawQuery: string | undefined; readonly target: Target } | undefined;
  return function representation(ctx: RequestContext, params: Readonly<Record<string, string>>): Reply | Promise<Reply> {
    const segment = params[param] ?? '';
    const rawQuery = ctx.rawQuery;
    let target: Target;
    if (last !== undefined && last.segment === segment && last.rawQuery === rawQuery) target = last.target;
    else {
      // '?' never occurs in a path segment, so the key is unambiguous.
      target = targetOf(rawQuery === undefined ? segment : `${segment}?${rawQuery}`);
      last = { segment, rawQuery, target };
    }
    const resource = resolve(target.name);
    if (resource === undefined) throw notFound(target);
    const selection = selectFor(selector, target, ctx.headers.accept);
    const search = searchOf(target);
    const context = collection === undefined ? new LoaderContext(target.name, ctx, authenticate) : new ItemLoaderContext(collection, target.name, ctx, authenticate);
    const loaded = resource.load(search, context);
    // Loaders usually return a plain value: answer synchronously then, without a promise round.
    if (isThenable(loaded)) {
      return Promise.resolve(loaded).then((value) => represent(ctx, target, selection, resource, value, context.asked, etagOf));
    }
    return represent(ctx, target, selection, resource, loaded, context.asked, etagOf);
  };
}

/** 404 for a name no resource has; one with an extension other than .json and .xml says which there are. */
export function notFound(target: Target): HttpError {
  const detail = target.extension === undefined && target.name.includes('.') ? { detail: 'Available extensions: .json, .xml.' } : {};
  return new HttpError(problem(404, 'not-found', detail));
}

/**
 * A fresh URLSearchParams of a target's query, per call: a loader may change the one it gets. Copied
 * from the target's own (Node copies another URLSearchParams' list as it is, where appending each
 * pair checks and converts it again).
 */
export function searchOf(target: Target): URLSearchParams {
  return new URLSearchParams(target.search);
}

function searchOfPairs(pairs: readonly string[]): URLSearchParams {
  const search = new URLSearchParams();
  for (let i = 0; i < pairs.length; i += 2) search.append(pairs[i] as string, pairs[i + 1] as string);
  return search;
}

/** N-4: 406 with the offered types, and (N-13) both representations' links when they fit. */
export function notAcceptable(link: string | undefined): HttpError {
  return new HttpError(problem(406, 'not-acceptable', { detail: 'This resource is available as JSON or XML.', available: [...OFFERED] }), {
    vary: 'Accept',
    ...(link === undefined ? {} : { link }),
  });
}

/** A loader's context: a class, so the common loader that ignores it costs one small allocation. */
export class LoaderContext implements ResourceContext {
  readonly name: string;
  /** Whether the loader asked who the caller is: the answer is then private to that caller. */
  asked = false;
  readonly #ctx: RequestContext;
  readonly #authenticate: (ctx: RequestContext) => Promise<Caller>;

  constructor(name: string, ctx: RequestContext, authenticate: (ctx: RequestContext) => Promise<Caller>) {
    this.name = name;
    this.#ctx = ctx;
    this.#authenticate = authenticate;
  }

  authenticate(): Promise<Caller> {
    this.asked = true;
    return this.#authenticate(this.#ctx);
  }
}

/** An item's context: the resource's name and the item's id. */
export class ItemLoaderContext extends LoaderContext implements ItemContext {
  readonly id: string;

  constructor(name: string, id: string, ctx: RequestContext, authenticate: (ctx: RequestContext) => Promise<Caller>) {
    super(name, ctx, authenticate);
    this.id = id;
  }
}

export type Chosen = Extract<Selection, { kind: 'chosen' }>;

export type EtagOf = (mediaType: string, body: string) => string;

/** Serializes a loaded value into the chosen representation, with its N-7 and N-13 headers. */
function represent(ctx: RequestContext, target: Target, selection: Chosen, resource: Resource, loaded: unknown, personal: boolean, etagOf: EtagOf): Reply {
  const body = serialize(selection.format, resource, loaded);
  const headers = headersFor(target, selection, personal);
  const etag = etagOf(selection.type, body);
  // E-4: If-Match holds when it names the strong ETag of any representation of the current state,
  // so the others' tags are computed, only when it is asked. If-Unmodified-Since is ignored: these
  // representations have no modification date (RFC 9110 §13.1.4). If-None-Match → 304 is writeReply's.
  if (ctx.headers['if-match'] !== undefined) {
    requirePreconditions(ctx.method, ctx.headers, { exists: true, etags: allEtags(selection, resource, loaded, body, etagOf), selected: etag });
  }
  return selection.byAccept ? { status: 200, headers, body, etag, vary: VARY_ACCEPT } : { status: 200, headers, body, etag };
}

/**
 * A write's answer with a value (A-5: 200, or 201 with `location`): the same body, ETag, Vary, Link
 * and Content-Type as a GET of `target` would send. `located` puts Content-Location on it even when
 * the extension chose the format (a POST's body is the new item, not the collection).
 */
export function representValue(status: number, target: Target, selection: Chosen, resource: Pick<Resource, 'root' | 'unwrap'>, value: unknown, etagOf: EtagOf, extra: { readonly location?: string; readonly located?: boolean } = {}): Reply {
  const body = serialize(selection.format, resource, value);
  const own = headersFor(target, selection, false);
  let headers: Readonly<Record<string, string>> = own;
  if (extra.location !== undefined || extra.located === true) {
    const made: Record<string, string> = { ...own };
    if (extra.location !== undefined) made['location'] = extra.location;
    const links = selection.format === 'json' ? target.json : target.xml;
    if (extra.located === true && links !== undefined) made['content-location'] = links.location;
    headers = made;
  }
  const etag = etagOf(selection.type, body);
  return selection.byAccept ? { status, headers, body, etag, vary: VARY_ACCEPT } : { status, headers, body, etag };
}

/** The body of `value` as JSON or as XML under the resource's root (N-9..N-11). */
export function serialize(format: Format, resource: Pick<Resource, 'root' | 'unwrap'>, value: unknown): string {
  // What JSON.stringify leaves out (undefined, a function, a symbol) is null in both formats.
  const v = value === undefined || typeof value === 'function' || typeof value === 'symbol' ? null : value;
  if (format === 'json') return JSON.stringify(v) ?? 'null';
  return toXml(v, resource.unwrap === undefined ? { root: resource.root } : { root: resource.root, unwrap: resource.unwrap });
}

/**
 * The strong ETag of every representation of `value` (E-4: `If-Match` is true when it names any of
 * them): the same bytes and the same tags as GET sends.
 */
export function representationEtags(resource: Pick<Resource, 'root' | 'unwrap'>, value: unknown): string[] {
  const json = serialize('json', resource, value);
  const xml = serialize('xml', resource, value);
  return [strongEtag('application/json', json), strongEtag('application/xml', xml), strongEtag('text/xml', xml)];
}

/** The Content-Type of a chosen representation (N-6). */
export function contentTypeOf(selection: Chosen): string {
  return CONTENT_TYPES[selection.type];
}

export const VARY_ACCEPT: readonly string[] = ['Accept'];

/** an answer that depends on the caller is for that caller's cache only, and revalidated. */
export const PRIVATE = 'private, no-cache';

/** The ETag of every offered type's representation of `value`, given the chosen one's body. */
function allEtags(selection: Chosen, resource: Resource, value: unknown, body: string, etagOf: EtagOf): string[] {
  const bodies: Record<Format, string | undefined> = { json: undefined, xml: undefined };
  bodies[selection.format] = body;
  return OFFERED.map((type) => {
    const format: Format = type === 'application/json' ? 'json' : 'xml';
    return etagOf(type, (bodies[format] ??= serialize(format, resource, value)));
  });
}

/** Content-Type and the N-13 headers of a target's representation; one frozen object per selection. */
function headersFor(target: Target, selection: Chosen, personal: boolean): Readonly<Record<string, string>> {
  const sets = personal ? target.privateHeaderSets : target.headerSets;
  let headers = sets.get(selection);
  if (headers === undefined) {
    const links = selection.format === 'json' ? target.json : target.xml;
    const made: Record<string, string> = { 'content-type': CONTENT_TYPES[selection.type] };
    if (links !== undefined) {
      made['link'] = links.link;
      if (selection.byAccept) made['content-location'] = links.location;
    }
    if (personal) made['cache-control'] = PRIVATE;
    headers = headerSet(made);
    sets.set(selection, headers);
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
