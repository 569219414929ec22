// The memory store (U-6): users, reset tokens and every ledger in this process's memory, for tests
// and throwaway services. It writes no file and nothing survives the process; each open() is a new,
// empty store (a second service does not see the first's users). Single process by nature.
//
// Every call runs at once on one state (JavaScript runs one at a time), so update() is atomic
// without a lock: `fn` is synchronous and nothing else runs between its read and its write.
import { ServiceError } from '../../errors.js';
import type { Ledgers } from '../ledgers.js';
import { LedgerState } from '../ledger-state.js';
import type { StoreConfig } from '../options.js';
import { checkWrite, needUserhash } from '../record.js';
import { reserveThenGet } from '../reserve-then-get.js';
import type { Page, ReservedRead, Store, UpdateDecision, UpdateOptions, UpdateView, UserRecord } from '../store.js';

/** A new, empty memory store. */
export function openMemoryStore(config: StoreConfig): Store {
  return new MemoryStore(config);
}

class MemoryStore implements Store {
  readonly throttle: Ledgers['throttle'];
  readonly nonces: Ledgers['nonces'];
  readonly issuance: Ledgers['issuance'];
  readonly settings = undefined;
  readonly #config: StoreConfig;
  readonly #users = new Map<string, UserRecord>();
  /** The users sorted by name (R-3's order), rebuilt after a change only when asked for. */
  #sorted: readonly UserRecord[] | undefined;
  #closed = false;

  constructor(config: StoreConfig) {
    this.#config = config;
    const ledgers = createMemoryLedgers(config);
    this.throttle = ledgers.throttle;
    this.nonces = ledgers.nonces;
    this.issuance = ledgers.issuance;
  }

  async get(name: string): Promise<UserRecord | undefined> {
    this.#assertOpen();
    return this.#users.get(name);
  }

  async page(options: { readonly after?: string | undefined; readonly limit: number }): Promise<Page> {
    this.#assertOpen();
    const sorted = this.#sortedUsers();
    const { after, limit } = options;
    const start = after === undefined ? 0 : sorted.findIndex((user) => user.name > after);
    const from = start === -1 ? sorted.length : start;
    return { users: sorted.slice(from, from + limit), more: from + limit < sorted.length };
  }

  async list(): Promise<UserRecord[]> {
    this.#assertOpen();
    return [...this.#sortedUsers()];
  }

  async count(): Promise<number> {
    this.#assertOpen();
    return this.#users.size;
  }

  async findByUserhash(algorithm: 'SHA-256' | 'MD5', realm: string, hash: string): Promise<string | undefined> {
    this.#assertOpen();
    const userhash = needUserhash(this.#config.userhash);
    const wanted = hash.toLowerCase();
    for (const { name } of this.#users.values()) if (userhash(algorithm, name, realm) === wanted) return name;
    return undefined;
  }

  async update<T>(name: string, fn: (current: UserRecord | undefined, view: UpdateView) => UpdateDecision<T>, options: UpdateOptions = {}): Promise<T> {
    this.#assertOpen();
    if (typeof name !== 'string') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a user name string');
    if (typeof fn !== 'function') throw new ServiceError('ERR_INVALID_OPTION', 'update() needs a function');
    const current = this.#users.get(name);
    const { next, result } = fn(current, { admins: options.countAdmins === true ? this.#admins() : 0 });
    if (next === null) {
      if (current !== undefined) this.#users.delete(name);
      this.#sorted = undefined;
    } else if (next !== undefined) {
      this.#users.set(name, checkWrite(name, next, options.verbatim === true ? 'shape' : 'policy'));
      this.#sorted = undefined;
    }
    return result;
  }

  reserveAndGet(account: string, address: string): Promise<ReservedRead> {
    return reserveThenGet(this, account, address);
  }

  async ping(): Promise<void> {
    this.#assertOpen();
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #sortedUsers(): readonly UserRecord[] {
    // UTF-16 code unit order, as JavaScript's `<` compares.
    this.#sorted ??= [...this.#users.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this.#sorted;
  }

  #admins(): number {
    let admins = 0;
    for (const user of this.#users.values()) if (user.role === 'admin') admins++;
    return admins;
  }

  #assertOpen(): void {
    if (this.#closed) throw new ServiceError('ERR_STORE_CLOSED', 'the memory store is closed');
  }
}

/** The ledgers on their state alone: every decision is taken at once, nothing is written. */
function createMemoryLedgers(config: StoreConfig): Ledgers {
  const state = new LedgerState(config.throttle);
  const { now } = config;
  let leases = 0;
  return {
    throttle: {
      reserve: async (account, address) => state.reserve(account, address, now(), { id: (leases++).toString(36), published: false }),
      async settle(id, account, address, outcome) {
        state.leases.delete(id);
        if (outcome === 'fail') state.applyFailure(account ?? null, address, now());
        else if (outcome === 'success' && account !== undefined) state.accounts.delete(account);
      },
    },
    nonces: { claim: async (nonce, nc, expiresAt) => state.claimNonce(nonce, nc, expiresAt, now()) },
    issuance: { take: async (account, max, windowMs) => state.takeIssuance(account, max, windowMs, now()) },
  };
}
