import { ServiceError } from '../errors.js';
import type { HashGate } from './hash-gate.js';
import { checkNewUserName } from './names.js';
import { createDummyHash, hashPassword, needsRehash, verifyPassword, type ScryptCost } from './password-hash.js';
import { checkPasswordPolicy, type PolicyViolation } from './policy.js';
import { preparePassword } from './prepare.js';
import { hasLiveResetToken, issueResetToken } from './reset-tokens.js';
import type { Store, UserRecord } from '../store/store.js';

export type Role = 'user' | 'admin';

/**
 * U-2 and P-6 for a new user, with no store: what add() refuses whatever the store holds. The
 * library and the CLI ask it before a store is opened (a file store is created when first opened),
 * so a refused name or password leaves nothing behind.
 */
export async function checkNewUser(rawName: string, password: string, minPasswordLength: number): Promise<void> {
  const check = checkNewUserName(rawName);
  if (!check.ok) throw new ServiceError('ERR_INVALID_NAME', `invalid user name (${check.violation})`);
  const violations = await checkPasswordPolicy(preparePassword(password), { username: check.name, minLength: minPasswordLength });
  if (violations.length > 0) throw new PasswordPolicyError(violations);
}
export type ChangeVia = 'basic' | 'digest' | 'token' | 'form' | 'cli' | 'library';

/** What the library and the CLI show of a user: never the hash. */
export interface UserInfo {
  readonly name: string;
  readonly role: Role;
  readonly createdAt: Date;
  readonly passwordChangedAt: Date;
}

/** A new password that breaks the policy (P-6); `violations` are the codes. */
export class PasswordPolicyError extends ServiceError {
  constructor(readonly violations: readonly PolicyViolation[]) {
    super('ERR_PASSWORD_POLICY', `the password does not meet the policy: ${violations.join(', ')}`);
  }
}

/** Digest secrets support (P-10), present only while Digest is on. */
export interface DigestSecrets {
  /**
   * Seals H(user:realm:password) for both algorithms into the record's opaque `digest` field.
   * Asynchronous: the key is loaded on first use, so what never seals never needs it (S-4).
   */
  seal(name: string, prepared: string): Promise<string>;
}

export interface UsersOptions {
  readonly store: Store;
  readonly gate: HashGate;
  readonly cost: ScryptCost;
  readonly minPasswordLength: number;
  readonly resetTokenTtlMs: number;
  readonly digest: DigestSecrets | undefined;
  readonly now: () => number;
  readonly changed: (event: { name: string; by: string | null; via: ChangeVia; at: Date }) => void;
  readonly issued: (event: { name: string; token: string; expiresAt: Date }) => void;
}

export interface SetPasswordOptions {
  readonly via: ChangeVia;
  readonly by: string | null;
  /** The current password, when the caller just proved it: spares a hash for `same-as-current`. */
  readonly knownCurrent?: string;
  /** A reset token to consume in the same atomic write (P-9: single use). */
  readonly token?: string;
  /**
   * The user's record as this request already read it (by the authenticator, or to answer 404):
   * spares a read. The change itself still runs on the committed state, atomically.
   */
  readonly current?: UserRecord;
  /** Who asks (an address key, addressKey()): its hashes take their turns beside other callers' (HashGate). */
  readonly caller?: string;
}

/**
 * E-4: a condition on the user's current state, checked in the same atomic update as the change
 * (an HTTP If-Match), so no change can slip in between the check and the write: false gives
 * 'precondition-failed' and nothing is done.
 */
export type Expectation = (current: UserRecord) => boolean;

/** Domain operations on users: names, policy, hashing and the store, shared by HTTP, CLI and library. */
export interface Users {
  /** `caller`: who asks (an address key), for the hash's turn (HashGate). */
  add(name: string, password: string, role?: Role, caller?: string): Promise<UserInfo>;
  /**
   * The user's record when the password is right; constant work for unknown users (U-3).
   * `read`: the user as the caller just read it (store.reserveAndGet(), `record` undefined for an
   * unknown user), which spares the read here. `caller`: who asks (an address key), for the hash's turn (HashGate).
   */
  verify(name: string, password: string, read?: { readonly record: UserRecord | undefined }, caller?: string): Promise<UserRecord | undefined>;
  /** Sets a password after the policy; 'not-found', or 'token-invalid' when the token was used meanwhile. */
  setPassword(name: string, password: string, options: SetPasswordOptions): Promise<'ok' | 'not-found' | 'token-invalid'>;
  /** Removes a user; 'last-admin' when it is the only admin left, unless `allowLastAdmin`. */
  remove(name: string, options?: { readonly allowLastAdmin?: boolean; readonly expect?: Expectation }): Promise<'ok' | 'not-found' | 'last-admin' | 'precondition-failed'>;
  /** Changes a role; 'last-admin' when it would demote the only admin left. */
  setRole(name: string, role: Role, options?: { readonly expect?: Expectation }): Promise<'ok' | 'not-found' | 'last-admin' | 'precondition-failed'>;
  list(): Promise<UserInfo[]>;
  /** A page of users sorted by name. */
  page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<{ readonly users: readonly UserInfo[]; readonly more: boolean }>;
  /** The user's record, read fresh from the store. */
  get(name: string): Promise<UserRecord | undefined>;
  /** RFC 7616 userhash → name. */
  findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined>;
  /** Computes the dummy hash now, so the first unknown-user login costs what a wrong password does. */
  warmUp(): Promise<void>;
  issueResetToken(name: string): Promise<{ token: string; expiresAt: Date }>;
  /** True when `token` is a live reset token of `name` (does not consume it); `read` as for verify(). */
  hasResetToken(name: string, token: string, read?: { readonly record: UserRecord | undefined }): Promise<boolean>;
}

export function createUsers(o: UsersOptions): Users {
  let dummy: Promise<string> | undefined;
  const dummyHash = (): Promise<string> => (dummy ??= createDummyHash(o.cost));

  const info = toUserInfo;

  // Only creation applies U-2's whole rule set: a name kept from an older store (`a.json`) still works.
  const validName = (name: string): string => {
    const check = checkNewUserName(name);
    if (!check.ok) throw new ServiceError('ERR_INVALID_NAME', `invalid user name (${check.violation})`);
    return check.name;
  };

  async function policy(name: string, prepared: string, current: UserRecord | undefined, knownCurrent: string | undefined, caller?: string): Promise<void> {
    const violations = await checkPasswordPolicy(prepared, {
      username: name,
      minLength: o.minPasswordLength,
      isCurrent: async (candidate) => {
        if (current === undefined) return false;
        if (knownCurrent !== undefined) return preparePassword(knownCurrent) === candidate;
        return o.gate.run(() => verifyPassword(candidate, current.hash, o.cost), caller);
      },
    });
    if (violations.length > 0) throw new PasswordPolicyError(violations);
  }

  const hash = (prepared: string, caller?: string): Promise<string> => o.gate.run(() => hashPassword(prepared, o.cost), caller);
  // The record's `digest` member while Digest is on (P-10), sealed before the atomic update.
  const seal = async (name: string, prepared: string): Promise<{ digest?: string }> => (o.digest === undefined ? {} : { digest: await o.digest.seal(name, prepared) });

  return {
    async add(rawName, password, role = 'user', caller) {
      const name = validName(rawName);
      if ((await o.store.get(name)) !== undefined) throw new ServiceError('ERR_USER_EXISTS', `user "${name}" already exists`);
      const prepared = preparePassword(password);
      await policy(name, prepared, undefined, undefined);
      const phc = await hash(prepared, caller);
      const sealed = await seal(name, prepared);
      const at = o.now();
      const record = await o.store.update(name, (current) => {
        if (current !== undefined) throw new ServiceError('ERR_USER_EXISTS', `user "${name}" already exists`);
        const next: UserRecord = {
          name,
          role,
          hash: phc,
          ...sealed,
          createdAt: at,
          passwordChangedAt: at,
        };
        return { next, result: next };
      });
      return info(record);
    },

    async verify(name, password, read, caller) {
      const prepared = preparePassword(password);
      const record = read === undefined ? await o.store.get(name) : read.record;
      const phc = record?.hash ?? (await dummyHash());
      // U-3: at least the configured cost, whatever the stored hash's: no faster answer for old hashes.
      const ok = await o.gate.run(() => verifyPassword(prepared, phc, o.cost), caller);
      if (record === undefined || !ok) return undefined;
      const upgrade = needsRehash(record.hash, o.cost);
      // The record read before verifying is the one returned: a second read per login cost a refresh.
      if (!upgrade && (o.digest === undefined || record.digest !== undefined)) return record;
      // U-3 / P-10: upgrade a weak hash, or write the Digest secret, on a successful login.
      const phcNext = upgrade ? await hash(prepared, caller) : record.hash;
      const sealed = await seal(name, prepared);
      await o.store.update(name, (current) => {
        if (current === undefined || current.hash !== record.hash) return { next: undefined, result: undefined };
        const next: UserRecord = { ...current, hash: phcNext, ...sealed };
        return { next, result: undefined };
      });
      return (await o.store.get(name)) ?? record;
    },

    async setPassword(name, password, options) {
      const current = options.current?.name === name ? options.current : await o.store.get(name);
      if (current === undefined) return 'not-found';
      const prepared = preparePassword(password);
      await policy(name, prepared, current, options.knownCurrent, options.caller);
      const phc = await hash(prepared, options.caller);
      const sealed = await seal(name, prepared);
      const at = o.now();
      const outcome = await o.store.update(name, (latest) => {
        if (latest === undefined) return { next: undefined, result: 'not-found' as const };
        if (options.token !== undefined && !hasLiveResetToken(latest, options.token, at)) return { next: undefined, result: 'token-invalid' as const };
        const { digest: _old, resetTokens: _dead, ...rest } = latest;
        const next: UserRecord = {
          ...rest,
          hash: phc,
          ...sealed,
          resetTokens: [], // P-7: a change kills every outstanding reset token
          passwordChangedAt: at,
        };
        return { next, result: 'ok' as const };
      });
      if (outcome === 'ok') o.changed({ name, by: options.by, via: options.via, at: new Date(at) });
      return outcome;
    },

    remove(name, options = {}) {
      return o.store.update(
        name,
        (current, { admins }) => {
          if (current === undefined) return { next: undefined, result: 'not-found' as const };
          if (options.expect !== undefined && !options.expect(current)) return { next: undefined, result: 'precondition-failed' as const };
          if (current.role === 'admin' && admins <= 1 && options.allowLastAdmin !== true) return { next: undefined, result: 'last-admin' as const };
          return { next: null, result: 'ok' as const };
        },
        { countAdmins: true },
      );
    },

    setRole(name, role, options = {}) {
      return o.store.update(
        name,
        (current, { admins }) => {
          if (current === undefined) return { next: undefined, result: 'not-found' as const };
          if (options.expect !== undefined && !options.expect(current)) return { next: undefined, result: 'precondition-failed' as const };
          if (current.role === role) return { next: undefined, result: 'ok' as const };
          if (current.role === 'admin' && admins <= 1) return { next: undefined, result: 'last-admin' as const };
          return { next: { ...current, role }, result: 'ok' as const };
        },
        { countAdmins: true },
      );
    },

    async list() {
      return (await o.store.list()).map(info);
    },

    async page(options) {
      const { users, more } = await o.store.page(options);
      return { users: users.map(info), more };
    },

    get: (name) => o.store.get(name),
    findByUserhash: (algorithm, realm, hash) => o.store.findByUserhash(algorithm, realm, hash),
    warmUp: async () => void (await dummyHash()),

    async issueResetToken(name) {
      const issued = await issueResetToken(o.store, name, { ttlMs: o.resetTokenTtlMs, now: o.now });
      const event = { name, token: issued.token, expiresAt: new Date(issued.expiresAt) };
      o.issued(event);
      return { token: issued.token, expiresAt: event.expiresAt };
    },

    async hasResetToken(name, token, read) {
      const record = read === undefined ? await o.store.get(name) : read.record;
      return record !== undefined && hasLiveResetToken(record, token, o.now());
    },
  };
}

/** What may be shown of a record: never the hash, the Digest secret or tokens. */
export function toUserInfo(r: UserRecord): UserInfo {
  return { name: r.name, role: r.role, createdAt: new Date(r.createdAt), passwordChangedAt: new Date(r.passwordChangedAt) };
}
