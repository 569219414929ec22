// Which other server processes share a file store's side file (ledger-file.ts), so that a process
// alone on its store can keep its attempts in flight in memory and write nothing for a login that
// succeeds. A server announces itself with a line when it first reserves an attempt and says goodbye
// when it closes; one killed with -9 says nothing, so a peer on this host is also asked the kernel
// whether its process still exists (kill(pid, 0)) and is the one that joined (its start time, where
// /proc says it), at most once a second. A peer on another host
// (a store on a shared network file system) cannot be asked and counts as alive until it leaves.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { process } from '../../process.js';
import { processStart, sameProcessRuns } from '../../fs/process-exists.js';
import type { LedgerLine } from './ledger-lines.js';

export interface Peer {
  readonly pid: number;
  readonly host: string;
  /** Its process's start (processStart), where known: a pid used again later is not this peer. */
  readonly start?: string | undefined;
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
      if (sameProcessRuns(peer.pid, peer.start)) continue;
      this.#peers.delete(id);
      onGone?.(id);
    }
    return this.#peers;
  }
}

/**
 * The peer protocol over the side file: a server announces itself ("joined") before its first
 * attempt; one that sees a newcomer writes out its attempts in flight and acknowledges ("ack"); the
 * newcomer waits for those acknowledgements before it admits an attempt. A server says goodbye
 * ("left") when it closes. This holds what each server knows of the others; the ledger writes the
 * lines this gives it.
 */
export class PeerProtocol {
  /** This server's id on the store (a prefix of its lease ids). */
  readonly self = randomBytes(9).toString('base64url');
  /** Announced: our "joined" line is in the side file. */
  member = false;
  readonly #table = new PeerTable();
  readonly #seen = new Set<string>();
  /** Newcomers owed an acknowledgement. */
  readonly #owed = new Set<string>();
  /** Every acknowledgement seen, as "<from> <to>". */
  readonly #acks = new Set<string>();
  readonly #onGone: (server: string) => void;

  /** `onGone` hears of every server that left or whose process is gone (its leases go with it). */
  constructor(onGone: (server: string) => void) {
    this.#onGone = onGone;
  }

  /** A peer line read from the side file. */
  apply(line: Extract<LedgerLine, { kind: 'joined' | 'left' | 'ack' }>): void {
    switch (line.kind) {
      case 'joined':
        if (line.server === this.self) return;
        this.#table.add(line.server, { pid: line.pid, host: line.host, start: line.start });
        // A newcomer (not one re-read after a compaction) waits for our leases before it admits any.
        if (!this.#seen.has(line.server) && this.member) this.#owed.add(line.server);
        this.#seen.add(line.server);
        return;
      case 'left':
        this.#table.delete(line.server);
        this.#owed.delete(line.server);
        this.#onGone(line.server);
        return;
      case 'ack':
        this.#acks.add(`${line.from} ${line.to}`);
    }
  }

  /** The side file was replaced or is gone: the servers are read again from it. */
  clear(): void {
    this.#table.clear();
  }

  live(): ReadonlyMap<string, Peer> {
    return this.#table.live(this.#onGone);
  }

  /** No other live server on the store: our attempts in flight may stay in memory. */
  alone(): boolean {
    return this.live().size === 0;
  }

  get owing(): boolean {
    return this.#owed.size > 0;
  }

  /** The acknowledgement lines owed now, and `done` to call once they are written. */
  acknowledgements(): { readonly lines: LedgerLine[]; readonly done: () => void } {
    const newcomers = [...this.#owed];
    return {
      lines: newcomers.map((to) => ({ kind: 'ack', from: this.self, to })),
      done: () => {
        for (const peer of newcomers) this.#owed.delete(peer);
      },
    };
  }

  joinedLine(): LedgerLine {
    return { kind: 'joined', server: this.self, pid: process.pid, host: this.#table.host, start: processStart(process.pid) };
  }

  leftLine(): LedgerLine {
    return { kind: 'left', server: this.self };
  }

  /** Those of `waitFor` still alive that have not acknowledged us yet. */
  silent(waitFor: readonly string[]): string[] {
    const live = this.live();
    return waitFor.filter((id) => live.has(id) && !this.#acks.has(`${id} ${this.self}`));
  }

  /** What a compaction keeps of the protocol: us (once announced), the live servers, the acknowledgements between them. */
  compactionLines(): LedgerLine[] {
    const live = this.live();
    const lines: LedgerLine[] = [];
    if (this.member) lines.push(this.joinedLine());
    for (const [id, peer] of live) lines.push({ kind: 'joined', server: id, pid: peer.pid, host: peer.host, start: peer.start });
    for (const ack of this.#acks) {
      const [from = '', to = ''] = ack.split(' ');
      if ((from === this.self || live.has(from)) && (to === this.self || live.has(to))) lines.push({ kind: 'ack', from, to });
    }
    return lines;
  }
}
