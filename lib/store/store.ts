// The seam between the user domain (lib/users/) and where users are kept: types only. Every
// store (file/, postgres/, memory/) implements Store; open.ts picks one from the `store` option.
import type { IssuanceLedger, NonceLedger, Reservation, ThrottleLedger } from './ledgers.js';

export type { IssuanceLedger, NonceLedger, Outcome, Reservation, ThrottleLedger, ThrottlePolicy } from './ledgers.js';

/** A reset token as stored: only its SHA-256, never the token itself (P-9). */
export interface ResetTokenRecord {
  /** base64url SHA-256 of the token. */
  readonly hash: string;
  /** Milliseconds since the epoch; the token is dead from this instant on. */
  readonly expiresAt: number;
}

/** One user as the store keeps it (U-2). */
export interface UserRecord {
  readonly name: string;
  readonly role: 'user' | 'admin';
  /** PHC string (U-3). */
  readonly hash: string;
  /** Opaque encrypted Digest secret (P-10); absent while Digest is off. */
  readonly digest?: string;
  readonly resetTokens?: readonly ResetTokenRecord[];
  readonly createdAt: number;
  readonly passwordChangedAt: number;
}

/** RFC 7616 §3.4.4: H(name ":" realm) under `algorithm`, lower-case hex (the domain passes it in). */
export type Userhash = (algorithm: 'SHA-256' | 'MD5', name: string, realm: string) => string;

/** What an update function decides: `next` undefined writes nothing, null deletes the user. */
export interface UpdateDecision<T> {
  readonly next: UserRecord | null | undefined;
  readonly result: T;
}

/** What an update function may know besides the user, as of the same atomic moment. */
export interface UpdateView {
  /** The number of admins; counted only when the update asked for it (0 otherwise). */
  readonly admins: number;
}

export interface UpdateOptions {
  /** Count the admins for the view (R-5, R-6: the last admin is protected). */
  readonly countAdmins?: boolean;
  /**
   * The record comes from another store (`store copy`): its name is checked as loading checks it
   * (a non-empty string), not as a new name is, so a name that older rules allowed moves too.
   */
  readonly verbatim?: boolean;
}

/** What reserveAndGet() found: the reservation, and the user when it was admitted. */
export type ReservedRead =
  | { readonly reservation: Extract<Reservation, { ok: true }>; readonly record: UserRecord | undefined }
  | { readonly reservation: Extract<Reservation, { ok: false }>; readonly record?: undefined };

export interface Page {
  readonly users: readonly UserRecord[];
  /** True when users after the last one exist. */
  readonly more: boolean;
}

/**
 * Where users and the state that decides a login live. Three implementations: the JSON file (the
 * default, file/), PostgreSQL (postgres/) and the process's memory (memory/). Reads are fresh: a
 * change made by another process sharing the store is seen by the next read (S-2, S-3).
 */
export interface Store {
  get(name: string): Promise<UserRecord | undefined>;
  /** Users sorted by name (UTF-16 code unit order), those after `after`, at most `limit`. */
  page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<Page>;
  /** Every user, sorted as page(). */
  list(): Promise<UserRecord[]>;
  count(): Promise<number>;
  /** RFC 7616 §3.4.4 userhash: the user whose H(name ":" realm) under `algorithm` is `hash` (hex). */
  findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined>;
  /**
   * Atomic read-modify-write of one user, on the latest committed state. Resolves once the change
   * is durable. `fn` must be synchronous and runs once per call; if it throws, nothing is written
   * and the error propagates. A failed write rejects with ERR_STORE_WRITE (or
   * ERR_STORE_UNAVAILABLE) and changes nothing.
   */
  update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options?: UpdateOptions): Promise<T>;
  /**
   * P-8's gate and the login's read in one step (issue 20: one round trip on PostgreSQL): reserves
   * an attempt as `throttle.reserve(account, address)` does and, when it is admitted, reads the
   * user `account` as get() does. Refused: nothing is read. Settle the reservation as ever.
   */
  reserveAndGet(account: string, address: string): Promise<ReservedRead>;
  /** Readiness (H-3): resolves when the store answers reads, rejects otherwise; never waits for the writers' lock. */
  ping(): Promise<void>;
  readonly throttle: ThrottleLedger;
  readonly nonces: NonceLedger;
  readonly issuance: IssuanceLedger;
  /** S-4: the settings every server on the store must agree on (PostgreSQL, and a file store's running servers); undefined for a memory store. */
  readonly settings: SettingsLedger | undefined;
  /**
   * Waits for queued work (including a compaction) and refuses further updates. `abandon`: the
   * caller has given up on work still running (the service, past its grace): a database store ends
   * the connections such work holds instead of waiting for it.
   */
  close(options?: { readonly abandon?: boolean }): Promise<void>;
}

export interface SharedSettings {
  readonly realm: string;
  readonly digest: boolean;
  /** A fingerprint of the Digest key (never the key), or null without Digest. */
  readonly digestKeyFingerprint: string | null;
  readonly minPasswordLength: number;
}

export interface SettingsLedger {
  /**
   * The settings the store's servers use: those recorded at the first server start (PostgreSQL),
   * or those of the servers running on it (a file store); undefined when there are none.
   */
  read(): Promise<SharedSettings | undefined>;
  /**
   * A server starts with `wanted`: 'recorded' when there are no settings yet (PostgreSQL's first
   * start; no other server running on a file store), 'agreed' when they equal those; otherwise
   * ERR_STORE_SETTINGS naming the difference, and nothing changes.
   */
  agree(wanted: SharedSettings): Promise<'recorded' | 'agreed'>;
  /** The server that agreed stops: a file store forgets its settings, PostgreSQL keeps them recorded. */
  leave(): Promise<void>;
}

/** PostgreSQL's: recorded for good, changed only by the one explicit command. */
export interface RecordedSettingsLedger extends SettingsLedger {
  /** Replaces the recorded settings; userhashes follow a new realm. */
  replace(wanted: SharedSettings): Promise<void>;
}
