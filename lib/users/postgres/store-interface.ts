// TEMPORARY: the Store interface of the seam (SEAM.md), until lib/users/store.ts carries it.
// Replaced by a re-export from '../store.js' once the lead's "seam:" commit is merged.
import type { UserRecord } from '../store-record.js';

export type { UserRecord };
export interface UpdateView {
  readonly admins: number;
}
export interface UpdateDecision<T> {
  readonly next: UserRecord | null | undefined;
  readonly result: T;
}
export interface Store {
  get(name: string): Promise<UserRecord | undefined>;
  page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<{ readonly users: readonly UserRecord[]; readonly more: boolean }>;
  list(): Promise<UserRecord[]>;
  count(): Promise<number>;
  findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined>;
  update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options?: { readonly countAdmins?: boolean }): Promise<T>;
  ping(): Promise<void>;
  readonly throttle: ThrottleLedger;
  readonly nonces: NonceLedger;
  readonly issuance: IssuanceLedger;
  close(): Promise<void>;
}
export interface ThrottlePolicy {
  readonly accountFreeFailures: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly addressMaxFailures: number;
  readonly addressWindowMs: number;
  readonly leaseMs: number;
}
export type Reservation =
  | { readonly ok: true; readonly id: string }
  | { readonly ok: false; readonly reason: 'locked'; readonly retryAfterSeconds: number }
  | { readonly ok: false; readonly reason: 'busy' };
export interface ThrottleLedger {
  reserve(account: string | undefined, address: string): Promise<Reservation>;
  settle(id: string, account: string | undefined, address: string, outcome: 'fail' | 'success' | 'none'): Promise<void>;
}
export interface NonceLedger {
  claim(nonce: string, nc: number, expiresAt: number): Promise<boolean>;
}
export interface IssuanceLedger {
  take(account: string, max: number, windowMs: number): Promise<boolean>;
}
