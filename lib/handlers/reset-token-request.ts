// P-12: POST /user/{name}/resettoken — "I forgot my password". No credentials, no body needed.
// The answer never depends on the name: the same 202, headers and body for an unknown user, an
// existing one, one whose hourly allowance is spent, or a failed delivery. The same time too: the
// lookup, the issuance and the delivery all run after the answer is written, so nothing that
// differs between those cases (a store write and fsync for a real user) is on the response's path.
import type { RequestContext } from '../http/context.js';
import type { Reply } from '../http/reply.js';
import { requireTransport } from './password.js';
import { segmentUserName } from './user-view.js';

export interface ResetTokenRequestOptions {
  /** P-8: counts the request against the client address's budget; throws 429 (or 503) beyond it. */
  readonly admit: (ctx: RequestContext) => Promise<void>;
  /**
   * Issues and delivers a token to `name` if that user exists and fewer than 3 were issued to it
   * within the hour. Runs detached: it must log its own failures and never reject.
   */
  readonly issue: (name: string) => Promise<void>;
  readonly maxBodyBytes: number;
}

const ACCEPTED: Reply = Object.freeze({ status: 202, headers: Object.freeze({ 'cache-control': 'no-store' }) });

export function createResetTokenRequestHandler(o: ResetTokenRequestOptions) {
  return async function requestResetToken(ctx: RequestContext, params: Readonly<Record<string, string>>): Promise<Reply> {
    // P-1 / T-3: HTTPS only, no query string; then the address budget before any other work.
    requireTransport(ctx);
    await o.admit(ctx);
    // A body is not needed and is ignored, but it is read (up to the limit: 413 beyond) so the
    // connection stays usable for the next request.
    await ctx.readBody(o.maxBodyBytes);
    const name = segmentUserName(params['name'] ?? '');
    if (name !== undefined) void o.issue(name);
    return ACCEPTED;
  };
}
