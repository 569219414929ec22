import type { Authenticator } from '../auth/authenticate.js';
import { parseContentType, unsupportedBody } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import { requirePreconditions } from '../http/preconditions.js';
import { HttpError, problem } from '../http/problem.js';
import type { Reply } from '../http/reply.js';
import { decodeUtf8Strict, hasLoneSurrogate } from '../users/prepare.js';
import { addressKey } from '../users/throttle.js';
import { PasswordPolicyError, type Users } from '../users/users.js';
import { requireHttps } from './caller.js';
import { segmentUserName } from './user-view.js';

export interface PasswordHandlerOptions {
  readonly users: Users;
  readonly auth: Authenticator;
  readonly maxBodyBytes: number;
}

const NO_CONTENT: Reply = { status: 204, headers: { 'cache-control': 'no-store' } };

/**
 * PUT /user/{name}/password and POST /user/{name}/resetpassword/ (P-0..P-7). Checks run in the
 * contract's order: transport, then credentials and authorization from the headers, then the body.
 */
export function createPasswordHandlers(o: PasswordHandlerOptions) {
  async function put(ctx: RequestContext, params: Readonly<Record<string, string>>): Promise<Reply> {
    requireTransport(ctx);
    const target = segmentUserName(params['name'] ?? '');
    const who = await o.auth.authenticate(ctx, { bearer: true, bearerFor: target });
    // The records this request reads: the caller's came with its authentication (Basic, Digest),
    // the target's is read once here and handed on to the change (issue 20: no read twice).
    const own = who.caller === target;
    // P-3: a user changes their own password; an admin anyone's (404 if absent); others 403.
    if (!own) {
      const caller = who.record ?? (await o.users.get(who.caller));
      if (caller?.role !== 'admin') throw new HttpError(problem(403, 'forbidden', { detail: 'You may change only your own password.' }));
    }
    const current = own && who.record !== undefined ? who.record : target === undefined ? undefined : await o.users.get(target);
    if (!own && current === undefined) throw new HttpError(problem(404, 'not-found', { detail: 'No such user.' }));
    // E-4, RFC 9110 §13.2.1: preconditions once authorized, before the body. No ETag: only `*` holds.
    requirePreconditions(ctx.method, ctx.headers, { exists: current !== undefined, etags: [], lastModified: current?.passwordChangedAt });
    const type = parseContentType(ctx.headers['content-type']);
    if (type?.type !== 'text/plain' || (type.charset !== undefined && type.charset !== 'utf-8')) {
      throw unsupportedBody(ctx.headers['content-type'], 'Send the new password as text/plain; charset=utf-8.');
    }
    const password = decodeUtf8Strict(await ctx.readBody(o.maxBodyBytes));
    if (password === undefined) throw badRequest('The body is not valid UTF-8.');
    await change(target as string, password, {
      via: who.via,
      by: who.via === 'token' ? null : who.caller,
      ...(own && who.password !== undefined ? { knownCurrent: who.password } : {}),
      ...(who.token === undefined ? {} : { token: who.token }),
      ...(current === undefined ? {} : { current }),
      caller: addressKey(ctx.address),
    });
    return NO_CONTENT;
  }

  async function post(ctx: RequestContext, params: Readonly<Record<string, string>>): Promise<Reply> {
    requireTransport(ctx);
    const type = parseContentType(ctx.headers['content-type']);
    if (type?.type !== 'application/json' || (type.charset !== undefined && type.charset !== 'utf-8')) {
      throw unsupportedBody(ctx.headers['content-type'], 'Send {"oldpasswd": "…", "newpasswd": "…"} as application/json.');
    }
    const text = decodeUtf8Strict(await ctx.readBody(o.maxBodyBytes));
    if (text === undefined) throw badRequest('The body is not valid UTF-8.');
    const { oldpasswd, newpasswd } = parseForm(text);
    const target = segmentUserName(params['name'] ?? '');
    const account = target ?? params['name'] ?? '';
    const caller = addressKey(ctx.address);
    // The user is read with the reservation (issue 20: one store operation), when there is one to read.
    const { attempt, record: read } = target === undefined ? { attempt: await o.auth.gate(account, ctx.address), record: undefined } : await o.auth.gateAndRead(target, ctx.address);
    let record;
    try {
      record = target === undefined ? undefined : await o.users.verify(target, oldpasswd, { record: read }, caller);
      if (record === undefined || target === undefined) {
        await attempt.fail();
        // P-5: the old password is in the body, so no challenge is owed: 403, not 401.
        throw new HttpError(problem(403, 'invalid-credentials', { detail: 'The user name or the old password is wrong.' }));
      }
      await attempt.succeed();
      requirePreconditions(ctx.method, ctx.headers, { exists: true, etags: [], lastModified: record.passwordChangedAt });
    } finally {
      await attempt.release();
    }
    // The record just verified is handed on: the change reads the user no second time.
    await change(target as string, newpasswd, { via: 'form', by: target as string, knownCurrent: oldpasswd, current: record, caller });
    return NO_CONTENT;
  }

  async function change(target: string, password: string, options: Parameters<Users['setPassword']>[2]): Promise<void> {
    let outcome;
    try {
      outcome = await o.users.setPassword(target, password, options);
    } catch (error) {
      if (error instanceof PasswordPolicyError) throw policyError(error);
      throw error;
    }
    if (outcome === 'not-found') throw new HttpError(problem(404, 'not-found', { detail: 'No such user.' }));
    if (outcome === 'token-invalid') throw o.auth.unauthorized({ bearer: true });
  }

  return { put, post };
}

/** P-1 / T-3: HTTPS only, and no query string (it would land in logs). Checked before anything else. */
export function requireTransport(ctx: RequestContext): void {
  requireHttps(ctx, 'Password operations are accepted only over HTTPS.');
  if (ctx.rawQuery !== undefined) throw badRequest('Password operations take no query string; send nothing secret in a URL.');
}

function parseForm(text: string): { oldpasswd: string; newpasswd: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('The body is not valid JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('The body must be a JSON object.');
  const { oldpasswd, newpasswd } = value as Record<string, unknown>;
  if (typeof oldpasswd !== 'string' || typeof newpasswd !== 'string') {
    throw badRequest('oldpasswd and newpasswd must both be strings.');
  }
  if (hasLoneSurrogate(oldpasswd) || hasLoneSurrogate(newpasswd)) throw badRequest('Passwords must be valid Unicode (no lone surrogates).');
  return { oldpasswd, newpasswd };
}

/** P-6: 422 with the violated rules' codes. */
export function policyError(error: PasswordPolicyError): HttpError {
  return new HttpError(problem(422, 'password-policy', { detail: 'The new password does not meet the password policy.', violations: [...error.violations] }));
}

function badRequest(detail: string): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail }));
}

