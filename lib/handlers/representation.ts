import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import { decodeComponent, parseQuery, singleParam, type Query } from '../http/query.js';
import type { Reply } from '../http/reply.js';
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

/** The request's resource, extension and validated query: shared by the handler and problem rendering. */
export interface ResourceTarget {
  readonly name: string;
  readonly extension: Format | undefined;
  readonly query: Query;
  readonly returnType: Format | undefined;
}

/**
 * Reads `/api/<name>[.<ext>]` and the query (N-8). Throws HttpError 404 for an unknown extension,
 * 400 for malformed percent-encoding, an unknown or repeated `return_type`.
 */
export function parseResourceTarget(segment: string, rawQuery: string | undefined): ResourceTarget {
  const decoded = decodeComponent(segment, false);
  if (decoded === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The path has malformed percent-encoding.' }));
  const dot = decoded.lastIndexOf('.');
  const name = dot < 0 ? decoded : decoded.slice(0, dot);
  let extension: Format | undefined;
  if (dot >= 0) {
    extension = parseFormat(decoded.slice(dot + 1));
    if (extension === undefined) throw new HttpError(problem(404, 'not-found', { detail: 'Available extensions: .json, .xml.' }));
  }
  const query = parseQuery(rawQuery ?? '');
  if (query === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The query has malformed percent-encoding.' }));
  const rt = singleParam(query, 'return_type');
  if (rt.kind === 'repeated') throw new HttpError(problem(400, 'bad-request', { detail: 'return_type may be given at most once.' }));
  let returnType: Format | undefined;
  if (rt.kind === 'value') {
    returnType = parseFormat(rt.value);
    if (returnType === undefined) {
      throw new HttpError(problem(400, 'bad-request', { detail: 'return_type must be json or xml.', allowed: ['json', 'xml'] }));
    }
  }
  return { name, extension, query, returnType };
}

/** GET/HEAD /api/<name>[.json|.xml] (N-1..N-13). */
export function createRepresentationHandler(registry: Registry, selector: Selector) {
  const etagOf = createEtagMemo();
  return function representation(ctx: RequestContext, params: Readonly<Record<string, string>>): Reply | Promise<Reply> {
    const target = parseResourceTarget(params['resource'] ?? '', ctx.rawQuery);
    const load = registry.get(target.name);
    if (load === undefined) throw new HttpError(problem(404, 'not-found'));
    const accept = ctx.headers.accept;
    const selection = selector.select(target.extension, target.extension === undefined ? target.returnType : undefined, accept);
    if (selection.kind === 'not-acceptable') {
      throw new HttpError(problem(406, 'not-acceptable', { detail: 'This resource is available as JSON or XML.', available: [...OFFERED] }), {
        vary: 'Accept',
        ...(extensionPath(target, 'json').length <= MAX_LINK_LENGTH ? { link: alternates(target, undefined).join(', ') } : {}),
      });
    }
    const search = new URLSearchParams();
    for (const [k, values] of target.query) for (const v of values) search.append(k, v);
    const loaded = load(search);
    // Loaders usually return a plain value: answer synchronously then, without a promise round.
    if (isThenable(loaded)) return Promise.resolve(loaded).then((value) => represent(target, selection, value, etagOf));
    return represent(target, selection, loaded, etagOf);
  };
}

/** Serializes a loaded value into the chosen representation, with its N-7 and N-13 headers. */
function represent(
  target: ResourceTarget,
  selection: Extract<Selection, { kind: 'chosen' }>,
  loaded: unknown,
  etagOf: (mediaType: string, body: string) => string,
): Reply {
  const value = loaded ?? null;
  const body = selection.format === 'json' ? JSON.stringify(value) ?? 'null' : toXml(value, { root: target.name });
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPES[selection.type] };
  // N-13, within reason: a long query would make these headers larger than clients accept.
  const query = linkQuery(target); // encoded once for Link and Content-Location
  const self = extensionPath(target, selection.format, query);
  if (self.length <= MAX_LINK_LENGTH) {
    headers['link'] = alternates(target, selection.type, query).join(', ');
    if (selection.byAccept) headers['content-location'] = self;
  }
  return {
    status: 200,
    headers,
    body,
    etag: etagOf(selection.type, body),
    ...(selection.byAccept ? { vary: VARY_ACCEPT } : {}),
  };
}

const VARY_ACCEPT: readonly string[] = ['Accept'];

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** N-13: `Link: <…>; rel="alternate"; type="…"` for each representation other than `current`. */
function alternates(target: ResourceTarget, current: MediaType | undefined, query = linkQuery(target)): string[] {
  const links: string[] = [];
  if (current !== 'application/json') links.push(`<${extensionPath(target, 'json', query)}>; rel="alternate"; type="application/json"`);
  if (current !== 'application/xml' && current !== 'text/xml') {
    links.push(`<${extensionPath(target, 'xml', query)}>; rel="alternate"; type="application/xml"`);
  }
  return links;
}

/** The extension form's path with the query re-encoded (see linkQuery). */
function extensionPath(target: ResourceTarget, format: Format, query = linkQuery(target)): string {
  return `/api/${target.name}.${format}${query}`;
}

/** The query re-encoded, less `return_type` (it no longer decides): '' or '?k=v&…'. */
function linkQuery(target: ResourceTarget): string {
  let out = '';
  for (const [k, values] of target.query) {
    if (k === 'return_type') continue;
    for (const v of values) out += `${out === '' ? '?' : '&'}${encodeURIComponent(k)}=${encodeURIComponent(v)}`;
  }
  return out;
}
