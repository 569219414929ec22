// Which other server processes share a file store's side file (ledger-file.ts), so that a process
// alone on its store can keep its attempts in flight in memory and write nothing for a login that
// succeeds. A server announces itself with a line when it first reserves an attempt and says goodbye
// when it closes; one killed with -9 says nothing, so a peer on this host is also asked the kernel
// whether its process still exists (kill(pid, 0)), at most once a second. A peer on another host
// (a store on a shared network file system) cannot be asked and counts as alive until it leaves.
import { hostname } from 'node:os';
import { processExists } from '../../fs/process-exists.js';

export interface Peer {
  readonly pid: number;
  readonly host: string;
}

/** How often a peer on this host is asked whether its process still exists. */
const RECHECK_MS = 1_000;

export class PeerTable {
  readonly #peers = new Map<string, Peer & { checkedAt: number }>();
  readonly #host = hostname();
  readonly #clock: () => number;

  constructor(clock: () => number = () => performance.now()) {
    this.#clock = clock;
  }

  /** This host's name, as a peer line records it. */
  get host(): string {
    return this.#host;
  }

  add(id: string, peer: Peer): void {
    this.#peers.set(id, { ...peer, checkedAt: -Infinity });
  }

  /** Removes a peer; true when it was known. */
  delete(id: string): boolean {
    return this.#peers.delete(id);
  }

  clear(): void {
    this.#peers.clear();
  }

  /**
   * The peers still alive, forgetting those whose process is gone (each is asked at most once a
   * second). `onGone` hears of every peer forgotten, so its attempts in flight can go too.
   */
  live(onGone?: (id: string) => void): ReadonlyMap<string, Peer> {
    const t = this.#clock();
    for (const [id, peer] of this.#peers) {
      if (peer.host !== this.#host || t - peer.checkedAt < RECHECK_MS) continue;
      peer.checkedAt = t;
      if (processExists(peer.pid)) continue;
      this.#peers.delete(id);
      onGone?.(id);
    }
    return this.#peers;
  }
}
