import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NonceLedger, Outcome, Reservation, ThrottleLedger } from '../store/ledgers.js';
import type { Store, UserRecord } from '../store/store.js';
import { addressKey } from '../users/throttle.js';
import type { Users } from '../users/users.js';
import { basicChallenge, parseBasic } from './basic.js';
import { bearerChallenge, parseBearer } from './bearer.js';
import { parseDigest, type DigestAuth, type DigestParams } from './digest.js';
import type { DigestVault } from './digest-vault.js';

/** Who proved what: the caller's name and the scheme, plus what later steps may reuse. */
export interface Authenticated {
  readonly caller: string;
  readonly via: 'basic' | 'digest' | 'token';
  /** Basic only: the caller's current password, which spares a hash for `same-as-current`. */
  readonly password?: string;
  /** Bearer only: the reset token, consumed atomically with the change. */
  readonly token?: string;
  /** The caller's record as just read to verify them (Basic, Digest, a token), so later steps need not read it again. */
  readonly record?: UserRecord;
}

export interface AuthenticatorOptions {
  readonly realm: string;
  readonly users: Users;
  /** P-8 budgets, shared by every process on the store (S-2). */
  readonly throttle: ThrottleLedger;
  /** The reservation and the user's read in one store operation (issue 20): the store's reserveAndGet(). */
  readonly reserveAndGet: Store['reserveAndGet'];
  /** P-10 replay protection, shared likewise. */
  readonly nonces: NonceLedger;
  readonly digest: { readonly auth: DigestAuth; readonly vault: DigestVault } | undefined;
  /** How long an attempt waits for attempts in flight ahead of it before 503. @default 3000 */
  readonly busyWaitMs?: number;
  /** Told when an attempt is refused: 'locked' (429) or 'busy' (503). */
  readonly onRefused?: (kind: 'locked' | 'busy') => void;
}

/** One admitted attempt; settle it once (later calls do nothing). Each returns when recorded. */
export interface Attempt {
  fail(): Promise<void>;
  succeed(): Promise<void>;
  /** Neither: the attempt ended without a verdict (overload, store error, stale nonce). */
  release(): Promise<void>;
  /** The key of the address it is counted under (addressKey()), which its hash is queued by too. */
  readonly addressKey: string;
}

/**
 * P-2: Basic, Digest (when on) or a reset token as Bearer, from the headers alone (P-0). Every
 * failure is an HttpError: 401 with the challenges, 400 for malformed credentials, 429 when
 * throttled (P-8), 503 when hashing is saturated or the store cannot answer. Unknown user and
 * wrong password fail alike.
 */
export function createAuthenticator(o: AuthenticatorOptions) {
  const busyWaitMs = o.busyWaitMs ?? 3_000;

  const challenges = (extra: { stale?: boolean; bearer?: boolean } = {}): string[] => [
    basicChallenge(o.realm),
    ...(o.digest === undefined ? [] : o.digest.auth.challenges(extra.stale === true)),
    ...(extra.bearer === true ? [bearerChallenge(o.realm, 'invalid_token')] : []),
  ];

  const unauthorized = (extra: { stale?: boolean; bearer?: boolean } = {}): HttpError =>
    new HttpError(problem(401, 'unauthorized', { detail: 'Valid credentials are required.' }), { 'www-authenticate': challenges(extra) });

  const throttled = (retryAfterSeconds: number): HttpError =>
    new HttpError(problem(429, 'too-many-requests', { detail: 'Too many failed attempts; try again later.' }), {
      'retry-after': String(retryAfterSeconds),
    });

  /**
   * Throttle gate before any hashing (P-8): reserves one attempt against the account's and the
   * address's budgets, to be settled by the caller. Attempts in flight hold their place in the
   * budget, so one beyond it waits for those ahead of it (a success frees the place) rather than
   * being told it failed; past `busyWaitMs` it gets 503.
   */
  async function gate(account: string | undefined, address: string): Promise<Attempt> {
    return (await admit(account, address, (key) => o.throttle.reserve(account, key).then((reservation) => ({ reservation, record: undefined })))).attempt;
  }

  /** gate(), and the user `account` read with the reservation that admits it (one store operation). */
  function gateAndRead(account: string, address: string): Promise<{ readonly attempt: Attempt; readonly record: UserRecord | undefined }> {
    return admit(account, address, (key) => o.reserveAndGet(account, key));
  }

  async function admit(
    account: string | undefined,
    address: string,
    reserve: (key: string) => Promise<{ readonly reservation: Reservation; readonly record?: UserRecord | undefined }>,
  ): Promise<{ readonly attempt: Attempt; readonly record: UserRecord | undefined }> {
    const key = addressKey(address);
    const deadline = performance.now() + busyWaitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
      const { reservation, record } = await reserve(key);
      if (reservation.ok) return { attempt: attempt(reservation.id, account, key), record };
      o.onRefused?.(reservation.reason);
      if (reservation.reason === 'locked') throw throttled(reservation.retryAfterSeconds);
      if (performance.now() + pause > deadline) {
        throw new HttpError(problem(503, 'overloaded', { detail: 'Too many attempts in flight for this account or address; retry shortly.' }), {
          'retry-after': '1',
        });
      }
      await sleep(pause);
    }
  }

  function attempt(id: string, account: string | undefined, address: string): Attempt {
    let open = true;
    const settle = (outcome: Outcome) => (): Promise<void> => {
      if (!open) return SETTLED;
      open = false;
      return o.throttle.settle(id, account, address, outcome);
    };
    return { fail: settle('fail'), succeed: settle('success'), release: settle('none'), addressKey: address };
  }

  async function basic(header: string, ctx: RequestContext): Promise<Authenticated> {
    const creds = parseBasic(header);
    if (creds === undefined || creds === 'malformed') {
      throw new HttpError(problem(400, 'bad-request', { detail: 'Malformed Basic credentials (RFC 7617, UTF-8).' }), {
        'www-authenticate': challenges(),
      });
    }
    // One throttle key per account (P-8): the NFC form the store uses, or "jose\u0301" would get
    // guesses of its own beside "jos\u00e9", and a name with k accents 2^k fresh windows.
    const name = creds.name.normalize('NFC');
    const { attempt, record: read } = await gateAndRead(name, ctx.address);
    let record: UserRecord | undefined;
    try {
      record = await o.users.verify(name, creds.password, { record: read }, attempt.addressKey);
    } catch (error) {
      await attempt.release();
      throw error;
    }
    if (record === undefined) {
      await attempt.fail();
      throw unauthorized();
    }
    await attempt.succeed();
    return { caller: record.name, via: 'basic', password: creds.password, record };
  }

  async function digest(header: string, ctx: RequestContext): Promise<Authenticated> {
    const d = o.digest;
    if (d === undefined) throw unauthorized();
    const params = parseDigest(header);
    if (params === undefined || params === 'malformed') {
      throw new HttpError(problem(400, 'bad-request', { detail: 'Malformed Digest credentials (RFC 7616).' }), { 'www-authenticate': challenges() });
    }
    const resolved = params.userhash ? await o.users.findByUserhash(params.algorithm, o.realm, params.username) : params.username;
    // An unknown userhash names nobody to read: its attempt counts against the hash itself.
    const { attempt, record } = resolved === undefined ? { attempt: await gate(params.username, ctx.address), record: undefined } : await gateAndRead(resolved, ctx.address);
    try {
      return await settleDigest(attempt, d, params, record, ctx);
    } finally {
      await attempt.release();
    }
  }

  async function settleDigest(
    attempt: Attempt,
    d: NonNullable<AuthenticatorOptions['digest']>,
    params: DigestParams,
    record: UserRecord | undefined,
    ctx: RequestContext,
  ): Promise<Authenticated> {
    const verdict = d.auth.verify(params, { method: ctx.method, uri: ctx.path + (ctx.rawQuery === undefined ? '' : `?${ctx.rawQuery}`) }, (_username, _userhash, algorithm) => {
      if (record?.digest === undefined) return undefined;
      const secrets = d.vault.open(record.digest, record.name);
      return secrets === undefined ? undefined : { name: record.name, ha1: secrets[algorithm] };
    });
    switch (verdict.result) {
      case 'ok':
        // P-10 (amended): a count is good once, in every process that shares the store, after restarts too.
        if (!(await o.nonces.claim(verdict.nonce, verdict.count, verdict.expiresAt))) {
          await attempt.fail();
          throw unauthorized();
        }
        await attempt.succeed();
        return record === undefined ? { caller: verdict.username, via: 'digest' } : { caller: verdict.username, via: 'digest', record };
      case 'stale':
        throw unauthorized({ stale: true });
      case 'bad-request':
        throw new HttpError(problem(400, 'bad-request', { detail: 'The Digest credentials do not match this request.' }), {
          'www-authenticate': challenges(),
        });
      case 'invalid':
        await attempt.fail();
        throw unauthorized();
    }
  }

  async function bearer(header: string, target: string | undefined, ctx: RequestContext): Promise<Authenticated> {
    const token = parseBearer(header);
    const { attempt, record } = target === undefined ? { attempt: await gate('', ctx.address), record: undefined } : await gateAndRead(target, ctx.address);
    try {
      if (token === undefined || token === 'malformed' || target === undefined || !(await o.users.hasResetToken(target, token, { record }))) {
        await attempt.fail();
        throw unauthorized({ bearer: true });
      }
      await attempt.succeed();
      // The record the token was checked against is handed on: the change reads it no second time.
      return record === undefined ? { caller: target, via: 'token', token } : { caller: target, via: 'token', token, record };
    } finally {
      await attempt.release();
    }
  }

  return {
    challenges,
    unauthorized,
    throttled,
    gate,
    gateAndRead,
    /**
     * Authenticates the request by Basic or Digest (and, when `bearerFor` names the path's user, a
     * reset token as Bearer: P-9 allows a token only for that user's password change).
     */
    async authenticate(ctx: RequestContext, options: { readonly bearerFor?: string | undefined; readonly bearer?: boolean } = {}): Promise<Authenticated> {
      const header = ctx.headers.authorization;
      if (header === undefined || header.trim() === '') throw unauthorized();
      const scheme = header.trimStart().split(/[ \t]/, 1)[0]?.toLowerCase();
      if (scheme === 'basic') return basic(header, ctx);
      if (scheme === 'digest' && o.digest !== undefined) return digest(header, ctx);
      if (scheme === 'bearer' && options.bearer === true) return bearer(header, options.bearerFor, ctx);
      throw unauthorized();
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

const SETTLED: Promise<void> = Promise.resolve();
