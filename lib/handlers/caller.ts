// Who is asking (R, A-2): the caller of a user-resource or administration request, or of an
// embedder's resource that asks. Authenticated exactly as the password PUT (P-2: Basic; Digest when
// on; P-8 throttling through the same authenticator, so one budget per account and per address
// whichever route the guesses come through), except that a reset token never authorises these
// routes (R: 401 with the usual challenges).
import type { Authenticator } from '../auth/authenticate.js';
import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import type { Caller } from '../resources/resource.js';
import type { Users } from '../users/users.js';

/** T-3 / R: credentials never travel in clear; refused before they are looked at. */
export function requireHttps(ctx: RequestContext): void {
  if (!ctx.secure) {
    throw new HttpError(problem(403, 'https-required', { detail: 'This operation is accepted only over HTTPS.' }), { connection: 'close' });
  }
}

export function createCallerAuthenticator(auth: Authenticator, users: Users): (ctx: RequestContext) => Promise<Caller> {
  return async function authenticateCaller(ctx) {
    requireHttps(ctx);
    // No `bearer` option: a reset token is refused here with the plain challenges.
    const { caller } = await auth.authenticate(ctx);
    // The role is read after the authentication, fresh (S-2): a demotion counts from the next request.
    const record = await users.get(caller);
    if (record === undefined) throw auth.unauthorized();
    return { name: record.name, role: record.role };
  };
}
