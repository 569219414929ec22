// The interfaces this store implements, from the seam (lib/users/store.ts, lib/users/ledgers.ts).
export type { Store, UpdateDecision, UpdateOptions, UpdateView, UserRecord } from '../store.js';
export type { IssuanceLedger, NonceLedger, Reservation, ThrottleLedger, ThrottlePolicy } from '../ledgers.js';
