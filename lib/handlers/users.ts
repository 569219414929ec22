// R-1..R-7: the user as a resource, and user administration over HTTPS. Reading a user goes through
// the one representation path (lib/handlers/representation.ts) as a Resource whose loader asks who
// the caller is; the page and the writes reuse its serializer, selection and ETags.
// Order of checks, as P-0: transport, then credentials and authorization, then the body.
import { ServiceError } from '../errors.js';
import { parseContentType, unsupportedBody } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import { evaluatePreconditions, hasTagConditions } from '../http/preconditions.js';
import { HttpError, problem } from '../http/problem.js';
import { parsePairs } from '../http/query.js';
import type { Reply } from '../http/reply.js';
import { strongEtag } from '../representation/etag.js';
import { parseFormat, type Format, type Selection, type Selector } from '../representation/select.js';
import type { Caller, Resource } from '../resources/resource.js';
import { decodeUtf8Strict, hasLoneSurrogate } from '../users/prepare.js';
import { PasswordPolicyError } from '../users/users.js';
import { addressKey } from '../users/throttle.js';
import { requireHttps } from './caller.js';
import { policyError } from './password.js';
import { contentTypeOf, notAcceptable, PRIVATE, representationEtags, serialize, VARY_ACCEPT } from './representation.js';
import { PAGE_SHAPE, pathUserName, USER_SHAPE, userName, userPath, userView, type UserLike } from './user-view.js';

type Role = 'user' | 'admin';
type Outcome = 'ok' | 'not-found' | 'last-admin' | 'precondition-failed';
/** A condition on the user's state, checked atomically with the change (E-4). */
type Expectation = (current: UserLike) => boolean;

/** What the handlers need of the Users domain (lib/users/users.ts). */
export interface UserDirectory {
  get(name: string): Promise<UserLike | undefined>;
  page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<{ readonly users: readonly UserLike[]; readonly more: boolean }>;
  add(name: string, password: string, role: Role, caller?: string): Promise<UserLike>;
  remove(name: string, options?: { readonly expect?: Expectation }): Promise<Outcome>;
  setRole(name: string, role: Role, options?: { readonly expect?: Expectation }): Promise<Outcome>;
}

/** one change, for the audit log line and onUserChanged. */
export interface UserChange {
  readonly name: string;
  readonly change: 'created' | 'deleted' | 'role';
  readonly by: string;
  readonly address: string;
  readonly role?: Role;
}

export interface UserHandlerOptions {
  readonly users: UserDirectory;
  readonly authenticate: (ctx: RequestContext) => Promise<Caller>;
  readonly selector: Selector;
  readonly maxBodyBytes: number;
  readonly changed: (change: UserChange) => void;
  /** the service's mount prefix, put before every path written (Location, Content-Location, Link, `next`). @default '' */
  readonly basePath?: string;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const NO_STORE_204: Reply = { status: 204, headers: { 'cache-control': 'no-store' } };

/** the user at /user/{name}[.json|.xml], for the representation path. */
export function createUserResource(users: Pick<UserDirectory, 'get'>, recordOf: (caller: Caller) => UserLike | undefined = () => undefined): Resource {
  return {
    ...USER_SHAPE,
    async load(_query, context) {
      const caller = await context.authenticate();
      const name = userName(context.name);
      // R-2 (P-3's rule): yourself, or anyone as an admin; otherwise 403 whether the user exists or not.
      if (caller.name !== name && caller.role !== 'admin') throw forbidden('You may read only your own user.');
      // Reading yourself: the record authentication just read is as fresh as another read.
      const own = caller.name === name ? recordOf(caller) : undefined;
      const record = own ?? (name === undefined ? undefined : await users.get(name));
      if (record === undefined) throw notFound();
      return userView(record);
    },
  };
}

export function createUserHandlers(o: UserHandlerOptions) {
  const base = o.basePath ?? '';
  async function admin(ctx: RequestContext): Promise<Caller> {
    const caller = await o.authenticate(ctx);
    if (caller.role !== 'admin') throw forbidden('Only an admin may do this.');
    return caller;
  }

  /** GET|HEAD /user/ — a page of users, admins only. */
  async function page(ctx: RequestContext): Promise<Reply> {
    requireHttps(ctx);
    const query = parsePageQuery(ctx.rawQuery);
    const selection = o.selector.select(undefined, query.returnType, ctx.headers.accept);
    if (selection.kind === 'not-acceptable') throw notAcceptable(undefined);
    await admin(ctx);
    const found = await o.users.page({ after: query.after, limit: query.limit });
    const last = found.users[found.users.length - 1];
    const next = found.more && last !== undefined ? `${base}/user/?after=${encodeURIComponent(last.name)}&limit=${query.limit}` : null;
    const value = { users: found.users.map(userView), next };
    const body = serialize(selection.format, PAGE_SHAPE, value);
    const headers: Record<string, string> = { 'content-type': contentTypeOf(selection), 'cache-control': PRIVATE };
    if (next !== null) headers['link'] = `<${next}>; rel="next"`;
    return reply(200, headers, body, strongEtag(selection.type, body), selection);
  }

  /** POST /user/ — create a user, admins only. */
  async function create(ctx: RequestContext): Promise<Reply> {
    requireHttps(ctx);
    const by = await admin(ctx);
    const selection = responseSelection(ctx);
    const body = await readJson(ctx, ['application/json'], 'Send {"name": "…", "password": "…", "role": "user" | "admin"} as application/json.');
    const { name, password, role } = parseNewUser(body);
    let created: UserLike;
    try {
      created = await o.users.add(name, password, role, addressKey(ctx.address));
    } catch (error) {
      throw userError(error);
    }
    o.changed({ name: created.name, change: 'created', by: by.name, address: ctx.address, role: created.role });
    const location = `${base}${userPath(created.name)}`;
    return represent(201, selection, created, { location, base });
  }

  /** DELETE /user/{name} — admins only; the last admin stays. */
  async function remove(ctx: RequestContext, params: Readonly<Record<string, string>>): Promise<Reply> {
    requireHttps(ctx);
    const by = await admin(ctx);
    const name = pathUserName(params['name'] ?? '');
    if (name === undefined) throw notFound();
    const expect = conditionsOf(ctx);
    const outcome = await o.users.remove(name, expect === undefined ? {} : { expect });
    if (outcome === 'not-found') throw notFound();
    if (outcome === 'precondition-failed') throw preconditionFailed();
    if (outcome === 'last-admin') throw lastAdmin('delete');
    o.changed({ name, change: 'deleted', by: by.name, address: ctx.address });
    return NO_STORE_204;
  }

  /** PATCH /user/{name} with application/merge-patch+json (RFC 7396) — only `role`, admins only. */
  async function patch(ctx: RequestContext, params: Readonly<Record<string, string>>): Promise<Reply> {
    requireHttps(ctx);
    const by = await admin(ctx);
    const selection = responseSelection(ctx);
    const body = await readJson(ctx, ['application/merge-patch+json'], 'Send {"role": "user" | "admin"} as application/merge-patch+json.');
    const role = parseRolePatch(body);
    const name = pathUserName(params['name'] ?? '');
    const current = name === undefined ? undefined : await o.users.get(name);
    if (name === undefined || current === undefined) throw notFound();
    const expect = conditionsOf(ctx);
    if (role === undefined || role === current.role) {
      // Nothing to write: the conditions are checked against what was just read.
      if (expect !== undefined && !expect(current)) throw preconditionFailed();
    } else {
      const outcome = await o.users.setRole(name, role, expect === undefined ? {} : { expect });
      if (outcome === 'not-found') throw notFound();
      if (outcome === 'precondition-failed') throw preconditionFailed();
      if (outcome === 'last-admin') throw lastAdmin('demote');
      o.changed({ name, change: 'role', by: by.name, address: ctx.address, role });
    }
    const fresh = await o.users.get(name);
    if (fresh === undefined) throw notFound();
    return represent(200, selection, fresh, { base });
  }

  /** A write's answer is a user representation: chosen by return_type or Accept, before anything is done. */
  function responseSelection(ctx: RequestContext): Extract<Selection, { kind: 'chosen' }> {
    const returnType = ctx.rawQuery === undefined ? undefined : parsePageQuery(ctx.rawQuery, false).returnType;
    const selection = o.selector.select(undefined, returnType, ctx.headers.accept);
    if (selection.kind === 'not-acceptable') throw notAcceptable(undefined);
    return selection;
  }

  async function readJson(ctx: RequestContext, types: readonly string[], hint: string): Promise<unknown> {
    const type = parseContentType(ctx.headers['content-type']);
    if (type === undefined || !types.includes(type.type) || (type.charset !== undefined && type.charset !== 'utf-8')) {
      throw unsupportedBody(ctx.headers['content-type'], hint);
    }
    const text = decodeUtf8Strict(await ctx.readBody(o.maxBodyBytes));
    if (text === undefined) throw badRequest('The body is not valid UTF-8.');
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw badRequest('The body is not valid JSON.');
    }
  }

  return { page, create, remove, patch };
}

/** The 200/201 of a write: the R-1 representation of `user`, with its ETag (E-4: what If-Match names next). */
function represent(status: number, selection: Extract<Selection, { kind: 'chosen' }>, user: UserLike, extra: { location?: string; base: string }): Reply {
  const body = serialize(selection.format, USER_SHAPE, userView(user));
  const headers: Record<string, string> = {
    'content-type': contentTypeOf(selection),
    'cache-control': PRIVATE,
    'content-location': `${extra.base}${userPath(user.name)}.${selection.format}`,
  };
  if (extra.location !== undefined) headers['location'] = extra.location;
  return reply(status, headers, body, strongEtag(selection.type, body), selection);
}

function reply(status: number, headers: Record<string, string>, body: string, etag: string, selection: Extract<Selection, { kind: 'chosen' }>): Reply {
  return selection.byAccept ? { status, headers, body, etag, vary: VARY_ACCEPT } : { status, headers, body, etag };
}

/**
 * E-4 on a user (RFC 9110 §13.2.2's order, lib/http/preconditions.ts), as a condition checked in
 * the same atomic update as the change: If-Match holds when it names the strong ETag of any
 * representation of the current state (the tags GET sends), `*` for any existing user. A user has
 * no modification date that covers every change (a new role moves no timestamp), so the date
 * conditions are ignored, as §13.1.4 says for a resource without one. Undefined: nothing to check.
 */
function conditionsOf(ctx: RequestContext): Expectation | undefined {
  const h = ctx.headers;
  if (!hasTagConditions(h)) return undefined;
  return (current) => evaluatePreconditions(ctx.method, h, { exists: true, etags: representationEtags(USER_SHAPE, userView(current)) }) === 'ok';
}

function preconditionFailed(): HttpError {
  return new HttpError(problem(412, 'precondition-failed', { detail: 'The user has changed since you read it (If-Match, If-None-Match); nothing was done.' }));
}

/** R-3's query: `limit` 1..1000 (default 100), `after` (exclusive), `return_type`; each at most once. */
function parsePageQuery(raw: string | undefined, page = true): { limit: number; after: string | undefined; returnType: Format | undefined } {
  const pairs = parsePairs(raw ?? '');
  if (pairs === undefined) throw badRequest('The query has malformed percent-encoding.');
  const seen = new Set<string>();
  let limit = DEFAULT_LIMIT;
  let after: string | undefined;
  let returnType: Format | undefined;
  for (let i = 0; i < pairs.length; i += 2) {
    const key = pairs[i] as string;
    const value = pairs[i + 1] as string;
    if (key !== 'return_type' && !(page && (key === 'limit' || key === 'after'))) continue;
    if (seen.has(key)) throw badRequest(`${key} may be given at most once.`);
    seen.add(key);
    if (key === 'return_type') {
      returnType = parseFormat(value);
      if (returnType === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'return_type must be json or xml.', allowed: ['json', 'xml'] }));
    } else if (key === 'limit') {
      if (!/^[0-9]{1,4}$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIMIT) throw badRequest(`limit must be a whole number from 1 to ${MAX_LIMIT}.`);
      limit = Number(value);
    } else {
      after = value;
    }
  }
  return { limit, after, returnType };
}

const NEW_USER_MEMBERS = new Set(['name', 'password', 'role']);

function parseNewUser(body: unknown): { name: string; password: string; role: Role } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('The body must be a JSON object.');
  const unknown = Object.keys(body).filter((k) => !NEW_USER_MEMBERS.has(k));
  if (unknown.length > 0) throw badRequest(`Unknown member ${JSON.stringify(unknown[0])}: only name, password and role.`);
  const { name, password, role = 'user' } = body as Record<string, unknown>;
  if (typeof name !== 'string') throw badRequest('name must be a string.');
  if (typeof password !== 'string') throw badRequest('password must be a string.');
  if (hasLoneSurrogate(password)) throw badRequest('The password must be valid Unicode (no lone surrogates).');
  if (role !== 'user' && role !== 'admin') throw badRequest('role must be "user" or "admin".');
  return { name, password, role };
}

/** RFC 7396 on a user: only `role` may change; anything else is 422 naming the member. */
function parseRolePatch(body: unknown): Role | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    // A merge patch that is not an object would replace the whole user (RFC 7396 §2).
    throw new HttpError(problem(422, 'unprocessable', { detail: 'A merge patch of a user must be a JSON object; only role may change.' }));
  }
  for (const key of Object.keys(body)) {
    if (key !== 'role') throw new HttpError(problem(422, 'unprocessable', { detail: `Member ${JSON.stringify(key)} cannot be changed; only role may.`, member: key }));
  }
  const role = (body as Record<string, unknown>)['role'];
  if (role === undefined) return undefined;
  if (role !== 'user' && role !== 'admin') throw new HttpError(problem(422, 'unprocessable', { detail: 'role must be "user" or "admin".', member: 'role' }));
  return role;
}

/** users.add's failures as R-4 says: 400 for a name (reason in detail), 409 for an existing one, 422 for the policy. */
function userError(error: unknown): unknown {
  if (error instanceof PasswordPolicyError) return policyError(error);
  if (error instanceof ServiceError) {
    if (error.code === 'ERR_USER_EXISTS') return new HttpError(problem(409, 'conflict', { detail: 'A user of that name exists.' }));
    if (error.code === 'ERR_INVALID_NAME') return badRequest(`The user name is not allowed: ${error.message}. ${NAME_RULES}`);
  }
  return error;
}

const NAME_RULES = 'Names are 1-64 characters (NFC), without control or format characters, "/" or ":", without surrounding spaces, and not ending in .json or .xml.';

function lastAdmin(what: 'delete' | 'demote'): HttpError {
  return new HttpError(problem(409, 'conflict', { detail: `This would ${what} the last admin; make another user admin first.` }));
}

function forbidden(detail: string): HttpError {
  return new HttpError(problem(403, 'forbidden', { detail }));
}

function notFound(): HttpError {
  return new HttpError(problem(404, 'not-found', { detail: 'No such user.' }));
}

function badRequest(detail: string): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail }));
}
