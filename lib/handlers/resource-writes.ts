// the writes of an embedder's resource: POST /api/<name>, and PUT, PATCH and
// DELETE /api/<name>/<id>. Every answer with a value goes through the representation path's own
// serializer, ETag and headers (representValue), chosen before anything is done (406 first).
// Order: the answer's representation (406), the body's type (415), the write's conditions'
// presence (428), the body (413, 400), its check (422); then, one write per item at a time, the
// current value, If-Match / If-None-Match against it (412), and the method.
import type { RequestContext } from '../http/context.js';
import type { Handler } from '../http/dispatch.js';
import { hasTagConditions, requirePreconditions } from '../http/preconditions.js';
import { HttpError, problem } from '../http/problem.js';
import type { Reply } from '../http/reply.js';
import { strongEtag } from '../representation/etag.js';
import type { Selector } from '../representation/select.js';
import { noSuchItem, type ServedResource } from '../resources/definition.js';
import { createKeyedLock } from '../resources/item-lock.js';
import { bareSegment, isDotSegment } from '../http/path-segment.js';
import { readJsonBody } from '../http/json-body.js';
import { applyMergePatch } from '../resources/merge-patch.js';
import type { Caller, Created, ResourceDefinition } from '../resources/resource.js';
import { createTargetMemo, ItemLoaderContext, LoaderContext, notFound, representationEtags, representValue, searchOf, selectFor, type EtagOf, type Target } from './representation.js';

export interface ResourceWriteOptions {
  readonly resource: ServedResource;
  readonly selector: Selector;
  readonly authenticate: (ctx: RequestContext) => Promise<Caller>;
  /** the mount prefix of the URLs written (Location, Content-Location, Link). @default '' */
  readonly basePath?: string;
  /** The item GET's ETag memo: a write's answer is usually what the next GET sends. @default unmemoized */
  readonly etagOf?: EtagOf;
}

export interface ResourceWriteHandlers {
  readonly post?: Handler;
  readonly put?: Handler;
  readonly patch?: Handler;
  readonly delete?: Handler;
}

const NO_CONTENT: Reply = { status: 204, headers: { 'cache-control': 'no-store' } };
/** The body types a POST or PUT takes, and a PATCH: 415 names them, and so does OPTIONS (RFC 5789 §3.1). */
export const JSON_TYPES = ['application/json'] as const;
export const MERGE_PATCH_TYPES = ['application/merge-patch+json'] as const;

/** The write handlers a definition's methods call for; none for a plain loader. */
export function createResourceWriteHandlers(o: ResourceWriteOptions): ResourceWriteHandlers {
  const { resource, selector, authenticate } = o;
  const def: ResourceDefinition | undefined = resource.definition;
  if (def === undefined) return {};
  const { name, check, maxBodyBytes, requireConditional } = resource;
  const shape = { root: resource.itemRoot };
  const basePath = o.basePath ?? '';
  // The answers carry the ETag a client sends back in If-Match: the same tag a GET gives.
  const etagOf = o.etagOf ?? strongEtag;
  const itemBase = `${basePath}/api/${name}/`;
  const collectionTargets = createTargetMemo(`${basePath}/api/`);
  const itemTargets = createTargetMemo(itemBase);
  const lock = createKeyedLock();
  const item = def.item;
  const getItem = item?.get;

  const targetOf = (memo: (key: string) => Target, segment: string, ctx: RequestContext): Target =>
    memo(ctx.rawQuery === undefined ? segment : `${segment}?${ctx.rawQuery}`);

  /** The item a write names; `/api/<name>/.json` names none (an empty id): 404, as its GET is. */
  const itemTarget = (ctx: RequestContext, params: Readonly<Record<string, string>>): Target => {
    const target = targetOf(itemTargets, params['id'] ?? '', ctx);
    if (target.name === '') throw noSuchItem();
    return target;
  };

  /**
   * A-7 / RFC 6585: a resource that asks for them refuses a write without If-Match, or a PUT
   * without If-None-Match: * (create only). Any other If-None-Match guards nothing against a lost
   * update (a tag the item does not have is always true), so it does not count.
   */
  const requireConditions = (ctx: RequestContext): void => {
    if (!requireConditional || ctx.headers['if-match'] !== undefined || (ctx.method === 'PUT' && ctx.headers['if-none-match']?.trim() === '*')) return;
    throw new HttpError(
      problem(428, 'precondition-required', { detail: 'This resource takes writes only with If-Match (the ETag you read) or If-None-Match: * (to create).' }),
    );
  };

  /**
   * The item's current value (undefined when there is none), with E-4 / A-7 evaluated against it:
   * If-Match names the strong ETag of any representation, If-None-Match: * holds only when there is
   * none; If-Unmodified-Since is ignored (items carry no modification date, RFC 9110 §13.1.4).
   * For a method that needs the item (`needed`: PATCH, DELETE), none is 404 before any condition:
   * the answer without them would not be 2xx (§13.2.1). A PUT creates, so its conditions count.
   */
  const current = async (ctx: RequestContext, target: Target, context: ItemLoaderContext, needed: boolean): Promise<{ readonly exists: boolean; readonly value: unknown }> => {
    if (getItem === undefined) {
      // No item.get: neither the item's tags nor whether it exists can be known.
      if (hasTagConditions(ctx.headers)) throw uncheckable();
      return { exists: false, value: undefined };
    }
    const value = await getItem.call(item, target.name, searchOf(target), context);
    const exists = value !== undefined;
    if (needed && !exists) throw noSuchItem();
    // The tags cost two serializations and three hashes: made only when a condition asks.
    if (hasTagConditions(ctx.headers)) {
      requirePreconditions(ctx.method, ctx.headers, { exists, etags: exists ? representationEtags(shape, value) : [] });
    }
    return { exists, value };
  };

  /** A write's answer: the value's representation, or no content when the method returned none (201 keeps its Location). */
  const answer = (status: number, target: Target, selection: ReturnType<typeof selectFor>, value: unknown, location?: string): Reply => {
    if (value !== undefined) return representValue(status, target, selection, shape, value, etagOf, location === undefined ? {} : { location });
    return location === undefined ? NO_CONTENT : { status: 201, headers: { location, 'cache-control': 'no-store' } };
  };

  const handlers: { post?: Handler; put?: Handler; patch?: Handler; delete?: Handler } = {};

  const post = def.post;
  if (post !== undefined) {
    handlers.post = async (ctx, params) => {
      const target = targetOf(collectionTargets, params['resource'] ?? '', ctx);
      // `/api/<name>.html` names no resource: 404 as its GET is, before anything is read or written.
      if (target.name !== name) throw notFound(target);
      const selection = selectFor(selector, target, ctx.headers.accept);
      const body = await readJsonBody(ctx, { limit: maxBodyBytes, types: JSON_TYPES, acceptHeader: 'accept-post' });
      const checked = await check(body);
      const context = new LoaderContext(name, ctx, authenticate);
      // E-4: a POST's conditions are about the collection, as its GET represents it.
      if (hasTagConditions(ctx.headers)) {
        const collection = resource.collection;
        if (collection === undefined) throw uncheckable();
        const value: unknown = await collection.load(searchOf(target), context);
        requirePreconditions(ctx.method, ctx.headers, { exists: true, etags: representationEtags(collection, value) });
      }
      const created = createdOf(await post.call(def, checked, context), name);
      const segment = bareSegment(String(created.id));
      // The body is the new item: its own links, and Content-Location saying so (RFC 9110 §8.7).
      return representValue(201, itemTargets(segment), selection, shape, created.value ?? null, etagOf, { location: `${itemBase}${segment}`, located: true });
    };
  }

  const put = item?.put;
  if (put !== undefined) {
    handlers.put = async (ctx, params) => {
      const target = itemTarget(ctx, params);
      const selection = selectFor(selector, target, ctx.headers.accept);
      requireConditions(ctx);
      const body = await readJsonBody(ctx, { limit: maxBodyBytes, types: JSON_TYPES });
      const checked = await check(body);
      const context = new ItemLoaderContext(name, target.name, ctx, authenticate);
      return lock.run(target.name, async () => {
        const before = await current(ctx, target, context, false);
        if (getItem !== undefined && !before.exists && isDotSegment(target.name)) throw dotId(target.name);
        const value = await put.call(item, target.name, checked, context);
        // 201 when `get` said the item did not exist.
        if (getItem !== undefined && !before.exists) return answer(201, target, selection, value, `${itemBase}${bareSegment(target.name)}`);
        return answer(200, target, selection, value);
      });
    };
  }

  if (put !== undefined && getItem !== undefined) {
    handlers.patch = async (ctx, params) => {
      const target = itemTarget(ctx, params);
      const selection = selectFor(selector, target, ctx.headers.accept);
      requireConditions(ctx);
      const patch = await readJsonBody(ctx, { limit: maxBodyBytes, types: MERGE_PATCH_TYPES, acceptHeader: 'accept-patch' });
      const context = new ItemLoaderContext(name, target.name, ctx, authenticate);
      return lock.run(target.name, async () => {
        const before = await current(ctx, target, context, true);
        // RFC 7396: applied to the current value as JSON shows it; the result is checked like a PUT's body.
        const checked = await check(applyMergePatch(before.value, patch));
        return answer(200, target, selection, await put.call(item, target.name, checked, context));
      });
    };
  }

  const remove = item?.delete;
  if (remove !== undefined) {
    handlers.delete = async (ctx, params) => {
      const target = itemTarget(ctx, params);
      requireConditions(ctx);
      const context = new ItemLoaderContext(name, target.name, ctx, authenticate);
      return lock.run(target.name, async () => {
        // Without a condition the current value decides nothing: it is not read.
        if (hasTagConditions(ctx.headers)) await current(ctx, target, context, true);
        if ((await remove.call(item, target.name, context)) === false) throw noSuchItem();
        return NO_CONTENT;
      });
    };
  }
  return handlers;
}

/** A condition where there is no get to evaluate it against: none can be found true (RFC 9110 §13.1.1, §13.1.2). */
function uncheckable(): HttpError {
  return new HttpError(problem(412, 'precondition-failed', { detail: 'This resource cannot evaluate If-Match or If-None-Match here (it has no get to read the current value): nothing was done.' }));
}

/**
 * What `post` returned, checked: `{ id, value }` with an id that can be a path segment (not `.` or
 * `..`, which RFC 3986 §5.2.4 removes from a URL, however their dots are spelled: `%2E` is `.`,
 * §6.2.2.2). A wrong shape is the embedder's bug (500).
 */
function createdOf(created: unknown, name: string): Created {
  const id = (created as Partial<Created> | null | undefined)?.id;
  if ((typeof id === 'string' && id !== '' && !isDotSegment(id)) || (typeof id === 'number' && Number.isFinite(id))) return created as Created;
  throw new TypeError(`resource "${name}": post must return { id, value } with a finite number id or a non-empty string id other than "." and ".." (no URL can name those)`);
}

/**
 * A PUT that would create the item `.` or `..` (its dots sent as `%2E`): refused as U-2 refuses such
 * a user name. No client that removes dot segments (browsers, fetch) could reach it again; one that
 * exists already is still read, replaced and deleted.
 */
function dotId(id: string): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail: `An item cannot be created with the id "${id}": URLs remove "." and ".." segments (RFC 3986), so no client could name it.` }));
}
