// Who is asking (R, A-2): the caller of a user-resource or administration request, or of an
// embedder's resource that asks. Authenticated exactly as the password PUT (P-2: Basic; Digest when
// on; P-8 throttling through the same authenticator, so one budget per account and per address
// whichever route the guesses come through), except that a reset token never authorises these
// routes (R: 401 with the usual challenges).
import type { Authenticator } from '../auth/authenticate.js';
import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import type { Caller } from '../resources/resource.js';
import type { UserRecord } from '../store/store.js';
import type { Users } from '../users/users.js';

/** T-3 / R: credentials never travel in clear; refused before they are looked at. */
export function requireHttps(ctx: RequestContext, detail = 'This operation is accepted only over HTTPS.'): void {
  if (!ctx.secure) throw new HttpError(problem(403, 'https-required', { detail }), { connection: 'close' });
}

/**
 * `records` remembers, for each Caller handed out, the record it was read from, so the user
 * resource reading the caller themself needs no second read; it stays internal (a loader of the
 * embedder's gets the Caller, never the record and its hash).
 */
export function createCallerAuthenticator(auth: Authenticator, users: Pick<Users, 'get'>, records: WeakMap<Caller, UserRecord>): (ctx: RequestContext) => Promise<Caller> {
  return async function authenticateCaller(ctx) {
    requireHttps(ctx);
    // No `bearer` option: a reset token is refused here with the plain challenges.
    const proved = await auth.authenticate(ctx);
    // The record verification just read fresh (S-2), so the role is current: a demotion counts
    // from the next request.
    const record = proved.record ?? (await users.get(proved.caller));
    if (record === undefined) throw auth.unauthorized();
    const caller: Caller = { name: record.name, role: record.role };
    records.set(caller, record);
    return caller;
  };
}
