import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import { GateFullError } from '../users/hash-gate.js';
import type { Attempt, Throttle } from '../users/throttle.js';
import type { Users } from '../users/users.js';
import { basicChallenge, parseBasic } from './basic.js';
import { bearerChallenge, parseBearer } from './bearer.js';
import { computeUserhash, parseDigest, type DigestAlgorithm, type DigestAuth, type DigestParams } from './digest.js';
import type { DigestVault } from './digest-vault.js';

/** Who proved what: the caller's name and the scheme, plus what later steps may reuse. */
export interface Authenticated {
  readonly caller: string;
  readonly via: 'basic' | 'digest' | 'token';
  /** Basic only: the caller's current password, which spares a hash for `same-as-current`. */
  readonly password?: string;
  /** Bearer only: the reset token, consumed atomically with the change. */
  readonly token?: string;
}

export interface AuthenticatorOptions {
  readonly realm: string;
  readonly users: Users;
  readonly throttle: Throttle;
  readonly digest: { readonly auth: DigestAuth; readonly vault: DigestVault } | undefined;
}

/**
 * P-2: Basic, Digest (when on) or a reset token as Bearer, from the headers alone (P-0). Every
 * failure is an HttpError: 401 with the challenges, 400 for malformed credentials, 429 when
 * throttled (P-8), 503 when hashing is saturated. Unknown user and wrong password fail alike.
 */
export function createAuthenticator(o: AuthenticatorOptions) {
  const userhashes = createUserhashIndex(o);

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

  /** Throttle gate before any hashing (P-8): admits one attempt, to be settled by the caller. */
  function gate(account: string, address: string): Attempt {
    const decision = o.throttle.admit(account, address);
    if (!decision.ok) throw throttled(decision.retryAfterSeconds);
    return decision.attempt;
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
    const attempt = gate(name, ctx.address);
    try {
      const record = await overloadSafe(() => o.users.verify(name, creds.password));
      if (record === undefined) {
        attempt.fail();
        throw unauthorized();
      }
      attempt.succeed();
      return { caller: record.name, via: 'basic', password: creds.password };
    } finally {
      attempt.release();
    }
  }

  function digest(header: string, ctx: RequestContext): Authenticated {
    const d = o.digest;
    if (d === undefined) throw unauthorized();
    const params = parseDigest(header);
    if (params === undefined || params === 'malformed') {
      throw new HttpError(problem(400, 'bad-request', { detail: 'Malformed Digest credentials (RFC 7616).' }), { 'www-authenticate': challenges() });
    }
    const account = params.userhash ? (userhashes.resolve(params.username, params.algorithm) ?? params.username) : params.username;
    const attempt = gate(account, ctx.address);
    try {
      return settleDigest(attempt, d, params, ctx);
    } finally {
      attempt.release();
    }
  }

  function settleDigest(attempt: Attempt, d: NonNullable<AuthenticatorOptions['digest']>, params: DigestParams, ctx: RequestContext): Authenticated {
    const verdict = d.auth.verify(params, { method: ctx.method, uri: ctx.path + (ctx.rawQuery === undefined ? '' : `?${ctx.rawQuery}`) }, (username, userhash, algorithm) => {
      const name = userhash ? userhashes.resolve(username, algorithm) : username;
      const record = name === undefined ? undefined : o.users.get(name);
      if (record?.digest === undefined) return undefined;
      const secrets = d.vault.open(record.digest, record.name);
      return secrets === undefined ? undefined : { name: record.name, ha1: secrets[algorithm] };
    });
    switch (verdict.result) {
      case 'ok':
        attempt.succeed();
        return { caller: verdict.username, via: 'digest' };
      case 'stale':
        throw unauthorized({ stale: true });
      case 'bad-request':
        throw new HttpError(problem(400, 'bad-request', { detail: 'The Digest credentials do not match this request.' }), {
          'www-authenticate': challenges(),
        });
      case 'invalid':
        attempt.fail();
        throw unauthorized();
    }
  }

  function bearer(header: string, target: string | undefined, ctx: RequestContext): Authenticated {
    const token = parseBearer(header);
    const attempt = gate(target ?? '', ctx.address);
    if (token === undefined || token === 'malformed' || target === undefined || !o.users.hasResetToken(target, token)) {
      attempt.fail();
      throw unauthorized({ bearer: true });
    }
    attempt.succeed();
    return { caller: target, via: 'token', token };
  }

  return {
    challenges,
    unauthorized,
    throttled,
    gate,
    /** Authenticates a password PUT for path user `target` (undefined when the name is not valid). */
    async authenticate(ctx: RequestContext, target: string | undefined): Promise<Authenticated> {
      const header = ctx.headers.authorization;
      if (header === undefined || header.trim() === '') throw unauthorized();
      await o.users.refresh();
      const scheme = header.trimStart().split(/[ \t]/, 1)[0]?.toLowerCase();
      if (scheme === 'basic') return basic(header, ctx);
      if (scheme === 'digest' && o.digest !== undefined) return digest(header, ctx);
      if (scheme === 'bearer') return bearer(header, target, ctx);
      throw unauthorized();
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

/** GateFullError → 503 with Retry-After (P-8). */
export async function overloadSafe<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await task();
  } catch (error) {
    if (error instanceof GateFullError) {
      throw new HttpError(problem(503, 'overloaded', { detail: 'Too many password operations at once; retry shortly.' }), { 'retry-after': '1' });
    }
    throw error;
  }
}

/**
 * RFC 7616 §3.4.4 userhash: H(name:realm) → name, per algorithm. Rebuilt when the number of users
 * changes or after a minute, so a lookup costs O(1) instead of hashing every name per request.
 */
function createUserhashIndex(o: AuthenticatorOptions) {
  let built: { count: number; at: number; map: Map<string, string> } | undefined;
  return {
    resolve(hash: string, algorithm: DigestAlgorithm): string | undefined {
      const names = o.users.names();
      const now = Date.now();
      if (built === undefined || built.count !== names.length || now - built.at > 60_000) {
        const map = new Map<string, string>();
        for (const name of names) {
          map.set(`SHA-256:${computeUserhash('SHA-256', name, o.realm)}`, name);
          map.set(`MD5:${computeUserhash('MD5', name, o.realm)}`, name);
        }
        built = { count: names.length, at: now, map };
      }
      return built.map.get(`${algorithm}:${hash.toLowerCase()}`);
    },
  };
}
