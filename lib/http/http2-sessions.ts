// L-1's limits for HTTP/2 sessions (H-1), which Node's HTTP/1.1 time-outs do not reach: an idle
// session is closed, a stream whose request does not complete in time is reset, and close()
// ends every session with GOAWAY (C-5). L-2 (amended 2026-11-27) for the responses: one whose
// reader takes no bytes for the request time-out (an HTTP/2 window that never opens) is reset, a
// session whose every response stalls is destroyed, and the bytes a session holds unsent are
// bounded. And across sessions: what all the sessions of a server hold for their streams is
// bounded too (the budget below), since each connection's own bound, times the connections one
// client can open, is no bound at all.
import { Buffer } from 'node:buffer';
import { constants, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { awaitsContinue, bodyBytesTaken } from './body.js';
import { lastProgress, unsentBytes } from './send-body.js';

export interface SessionLimits {
  /** The first request's headers must arrive within this much of the session's start. */
  readonly headersTimeoutMs: number;
  /** A request (headers and body) must be complete within this much of its stream's start; a response that makes no progress for this long is ended. */
  readonly requestTimeoutMs: number;
  /** A session with no open stream for this long is closed. */
  readonly keepAliveTimeoutMs: number;
  /** Response bytes one session may hold unsent across its streams (L-2). @default DEFAULT_MAX_UNSENT_BYTES */
  readonly maxUnsentBytes?: number | undefined;
  /** The SETTINGS_MAX_CONCURRENT_STREAMS the server announces (a session is told 1 while the budget is full). */
  readonly maxConcurrentStreams: number;
  /** What all the sessions together may hold for their open streams (L-2; see Budget). @default DEFAULT_MAX_UNSENT_BYTES_TOTAL */
  readonly maxUnsentBytesTotal?: number | undefined;
  /** Told when the sessions come to hold the whole budget (at most once every BUDGET_REPORT_MS). */
  readonly onBudgetFull?: ((fields: BudgetReport) => void) | undefined;
}

/** What onBudgetFull is told: the budget, and what was refused or cut since the last report. */
export type BudgetReport = {
  readonly heldBytes: number;
  readonly limitBytes: number;
  readonly openStreams: number;
  readonly refusedStreams: number;
  readonly cutStreams: number;
};

/** L-2: what one HTTP/2 session may hold unsent by default, across its streams (bodies over 16 KiB). */
export const DEFAULT_MAX_UNSENT_BYTES = 4 * 1024 * 1024;

/** L-2: what all the HTTP/2 sessions of a server may hold by default (see Budget). */
export const DEFAULT_MAX_UNSENT_BYTES_TOTAL = 64 * 1024 * 1024;

/**
 * What an open stream is counted as holding besides its body: its objects in JavaScript and in
 * nghttp2. Measured: 200 zero-window sessions × 100 streams of a 15-byte body took RSS 78 → 217 MB,
 * about 7 KB a stream.
 */
export const STREAM_BYTES = 8 * 1024;

/** RFC 9113 §6.9.2: a stream's flow-control window unless SETTINGS say otherwise (node:http2's too). */
const DEFAULT_WINDOW_BYTES = 65_535;

export interface SessionGuard {
  /** GOAWAY to every session (open streams may finish), then destroy what is left after `graceMs`. */
  close(graceMs: number): Promise<void>;
}

// After GOAWAY, an idle session whose peer does not read is cut this much later.
const GOAWAY_GRACE_MS = 1_000;

// How often a session with open streams is checked, as node:http checks its connections.
const CHECK_INTERVAL_MS = 1_000;

// Under pressure (Budget), a response that took nothing for this long is stalled: two checks, so
// that an event loop late by a second under the load does not make a reader look stalled.
const PRESSURE_STALL_MS = 2 * CHECK_INTERVAL_MS;

// Under pressure, an open request that sent less than this in PRESSURE_STALL_MS is silent (512 B/s:
// one byte of DATA a second no longer keeps a stream open).
const MIN_REQUEST_PROGRESS_BYTES = 1024;

// The fair share never falls below this many streams' worth: sessions holding one stream each
// (a connection and 8 KiB apiece) cannot shrink everyone else to one or two.
const SHARE_FLOOR_STREAMS = 16;

/** What the guard knows of one open stream. */
interface Watched {
  readonly started: number;
  complete: boolean;
  /** Unsent response bytes at the last check, and since when the response has not moved. */
  unsent: number;
  since: number;
  /** When the stream was reset for stalling (its RST_STREAM may be stuck behind queued data). */
  cut: number | undefined;
  /** While its request is open: its body's bytes seen (read and waiting) when last counted as progress, and since when. */
  seen: number;
  seenSince: number;
  /** Its body's bytes, counted in the budget (with STREAM_BYTES) until the stream closes. */
  body: number;
  /** What its request's body may hold in the server (inbound), counted in the budget likewise (chargeInbound); 0 once discarded. */
  inbound: number;
  /** Given back (its stream or its session closed). */
  released: boolean;
  /** Its session's. */
  readonly watch: Watch;
}

interface Watch {
  readonly session: ServerHttp2Session;
  readonly streams: Map<ServerHttp2Stream, Watched>;
  readonly maxUnsentBytes: number;
  readonly budget: Budget;
  /** What this session's open streams count for in the budget. */
  held: number;
  /** Told SETTINGS_MAX_CONCURRENT_STREAMS 1 while the budget is full (Budget). */
  narrowed: boolean;
  /** The flow-control window each of the session's streams opens to its peer: what a body nobody reads may leave waiting. */
  readonly window: number;
  /** Its TLS connection (undefined if it could not be told): what it holds queued is read from it (queuedBytes). */
  readonly socket: Socket | undefined;
  /** What its connection held queued when last looked at, counted in `held` (syncQueued), and since when that has not changed. */
  queued: number;
  queuedSince: number;
  /** Its session has closed and given back all it held: nothing is counted for it any more. */
  gone: boolean;
}

/**
 * L-2 across sessions: what the open streams of all the sessions of one server hold, counted as
 * they go: STREAM_BYTES when a stream opens, its body when the body is let through, all of it back
 * when the stream closes (a body's bytes live until its last piece is sent, and the stream closes
 * then). Each session's own bound (maxUnsentBytes, 100 streams) times the sessions a client can
 * open is no bound: 200 sessions of 100 zero-window streams of /openapi.json took RSS 79 → 1,029
 * MB before it.
 *
 * Past the limit:
 *
 * - a new stream is refused before any handler runs (RST_STREAM(REFUSED_STREAM), RFC 9113 §8.7:
 *   the client may retry it) when its session holds more than its fair share (the limit shared by
 *   the sessions that hold anything, never less than SHARE_FLOOR_STREAMS streams' worth), and that
 *   session is told it may open one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1, until the
 *   budget is half free). A session's first stream is never refused. So sessions that keep many
 *   streams open cost themselves, not the others;
 * - a request still open that has sent less than MIN_REQUEST_PROGRESS_BYTES in PRESSURE_STALL_MS
 *   (its HEADERS never ending the stream, a body announced and not sent, or dribbled) is reset at
 *   its session's next check, and so on until the budget is half free: such streams can no longer
 *   hold the budget until the request time-out;
 * - a large body is refused (ENHANCE_YOUR_CALM, as past the session's own bound) unless it is all
 *   its session holds: every session may still hold one response, as an HTTP/1.1 connection does,
 *   and a reader that takes what it is sent is served whoever holds the rest.
 *
 * Past half of the limit, a response that took nothing for PRESSURE_STALL_MS is stalled
 * (checkStreams), so the sessions of readers that read nothing are cut within seconds instead of at
 * the request time-out. Refusing rather than cutting others to make room: an attacker's new
 * sessions would then evict its old ones as fast as they came, the server encoding a body for each.
 */
interface Budget {
  held: number;
  readonly limit: number;
  /** Sessions whose streams count for anything (they share the limit when it is full). */
  sessions: number;
  /** The concurrent streams a session is told it may open when not narrowed. */
  readonly maxConcurrentStreams: number;
  /** Open streams, and what was refused or cut since the last report (onBudgetFull). */
  streams: number;
  refused: number;
  cut: number;
  reportedAt: number;
  readonly report: ((fields: BudgetReport) => void) | undefined;
}

/** At most one report of a full budget this often (an attack would otherwise write a line per stream). */
export const BUDGET_REPORT_MS = 10_000;

// By session, not by stream: a WeakMap entry per stream (tens of thousands a second) is work for
// every garbage collection; a stream's own record is in its session's `streams`.
const watches = new WeakMap<ServerHttp2Session, Watch>();

/** Bodies this small are never refused: 100 streams of them are 1.6 MiB (a refused PUT would hide its outcome). */
export const SMALL_BODY_BYTES = 16 * 1024;

/**
 * L-2: may `stream` take `body` to send? A small body always may, and so may a larger one that is
 * all its session holds unsent. Otherwise not when, with it, the session would pass its own limit
 * or the server's sessions their budget. Whatever is let through is counted. A stream of a session
 * the guard does not watch always may.
 */
export function mayHoldUnsent(stream: ServerHttp2Stream, body: string): boolean {
  const watched = watches.get(stream.session as ServerHttp2Session)?.streams.get(stream);
  if (watched === undefined) return true;
  // At most 3 bytes per UTF-16 unit: the usual small body is let through without encoding it, and
  // counted by its length (its bytes, for the usual ASCII JSON or XML).
  if (body.length * 3 <= SMALL_BODY_BYTES) return chargeBody(watched, body.length);
  const bytes = Buffer.byteLength(body);
  if (bytes <= SMALL_BODY_BYTES) return chargeBody(watched, bytes);
  const { watch } = watched;
  const { budget } = watch;
  let held = 0;
  for (const other of watch.streams.keys()) if (other !== stream) held += unsentBytes(other);
  // What its connection holds queued (queuedBytes): next to nothing for a reader that reads (its
  // SETTINGS, the tail of a response), megabytes for one that reads nothing.
  const queued = syncQueued(watch);
  // One response held alone is let through whatever its size: a session that takes what it is
  // sent is served whoever holds the budget (so each session may hold one, as an HTTP/1.1
  // connection holds the response in progress).
  if (held === 0 && queued <= QUEUED_COPIES * SMALL_BODY_BYTES) return chargeBody(watched, bytes);
  held += queued;
  if (held + bytes > watch.maxUnsentBytes) return false;
  if (budget.held + bytes > budget.limit) {
    budget.refused++;
    reportFull(budget);
    return false;
  }
  return chargeBody(watched, bytes);
}

/** The limit shared by the sessions that hold anything, or SHARE_FLOOR_STREAMS streams' worth. */
function fairShare(budget: Budget): number {
  return Math.max(budget.limit / Math.max(1, budget.sessions), SHARE_FLOOR_STREAMS * STREAM_BYTES);
}

/** Counts `bytes` of `watched`'s stream (STREAM_BYTES when it opens) in its session's and its server's share. */
function charge(watched: Watched, bytes: number): void {
  chargeSession(watched.watch, bytes);
}

/** Counts `bytes` in `watch`'s session's and its server's share (uncharge's reverse). */
function chargeSession(watch: Watch, bytes: number): void {
  if (watch.held === 0) watch.budget.sessions++;
  watch.held += bytes;
  watch.budget.held += bytes;
}

/**
 * What `watch`'s connection holds queued for the kernel: node:http2 hands its socket one write at a
 * time, all it may send at that moment (every stream's DATA its peer's windows allow), and writes
 * the next once the last is taken. A peer that opens its windows wide and reads nothing from the
 * connection (a hostile review: SETTINGS_INITIAL_WINDOW_SIZE 2^31-1, 100 requests for
 * /openapi.json a second) leaves that write, about 4 MiB, queued for good, on streams that are
 * closed by then: 300 such connections took RSS to 1.4 GB, and their descriptors stayed after the
 * peers had gone. The TLS socket's handle says how many bytes its writes hold (`writeQueueSize`,
 * what `socket.bufferSize` reads for node:net's own writes); 0 where it does not say.
 */
function queuedBytes(watch: Watch): number {
  const size = (watch.socket as { readonly _handle?: { readonly writeQueueSize?: unknown } | null } | undefined)?._handle?.writeQueueSize;
  return typeof size === 'number' && size > 0 ? size * QUEUED_COPIES : 0;
}

/**
 * A queued write is held twice until it is done: as node:http2 wrote it (its streams' buffers,
 * which it frees when the write completes) and as TLS encrypted it (measured: 300 such connections
 * held 42 MB queued and 120 MB of buffers).
 */
const QUEUED_COPIES = 2;

/**
 * Counts what `watch`'s connection holds queued now in its share, instead of what it held when last
 * looked at (at each check, each stream's close and each large body); returns it.
 */
function syncQueued(watch: Watch): number {
  if (watch.gone) return 0;
  const queued = queuedBytes(watch);
  if (queued === watch.queued) return queued;
  if (queued > watch.queued) chargeSession(watch, queued - watch.queued);
  else uncharge(watch, watch.queued - queued);
  watch.queued = queued;
  watch.queuedSince = performance.now();
  return queued;
}

/** Counts a body let through on `watched`'s stream; true. */
function chargeBody(watched: Watched, bytes: number): true {
  if (watched.released) return true;
  watched.body += bytes;
  charge(watched, bytes);
  if (watched.watch.budget.held > watched.watch.budget.limit) reportFull(watched.watch.budget);
  return true;
}

/**
 * Counts `bytes` more of what `watched`'s request body may hold. node:http2 keeps what arrives on a
 * stream until it is read, up to the stream's window (64 KiB by default): a body nobody reads (a
 * GET's, or a body waiting for its authentication) holds that much, and one being read holds what
 * its reader took so far (readBody). So a stream with a body counts for its window from the start,
 * and for what its reader took at each check: a hostile review had 80 connections of 100 GETs, each
 * followed by 64 KiB of DATA behind a window that never opened, take RSS from 60 to 655 MB while
 * each such stream counted for STREAM_BYTES alone.
 */
function chargeInbound(watched: Watched, bytes: number): void {
  if (watched.released) return;
  watched.inbound += bytes;
  charge(watched, bytes);
}

/**
 * L-2, RFC 9113 §8.1: a response is under way and nobody has read its request's body (a GET sent
 * with one, a request refused before its body was read). What arrives is discarded and its count in
 * the budget given back; once the response is out, a client still sending is asked to stop with
 * RST_STREAM(NO_ERROR). node:http discards such a body over HTTP/1.1, and node:http2 closes such a
 * stream by itself only once the response is out, keeping what arrives until then: up to the
 * stream's window for as long as a reader that takes nothing holds the response.
 */
export function discardUnreadBody(stream: ServerHttp2Stream): void {
  if (stream.endAfterHeaders || stream.readableEnded || stream.readableFlowing !== null) return;
  stream.resume();
  const watched = watches.get(stream.session as ServerHttp2Session)?.streams.get(stream);
  if (watched !== undefined && !watched.released && watched.inbound > 0) {
    uncharge(watched.watch, watched.inbound);
    watched.inbound = 0;
  }
  // Not before: a body written in pieces (send-body.ts) is not ended yet, and a stream closed now
  // would lose the rest of it.
  stream.once('finish', () => {
    if (!stream.closed && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
  });
}

/** Gives back what `watched`'s stream counted for in the budget, once. */
function release(watched: Watched): void {
  if (watched.released) return;
  watched.released = true;
  uncharge(watched.watch, STREAM_BYTES + watched.body + watched.inbound);
  watched.watch.budget.streams--;
}

/** Takes `bytes` off `watch`'s session's and its server's share (charge's reverse). */
function uncharge(watch: Watch, bytes: number): void {
  watch.held -= bytes;
  watch.budget.held -= bytes;
  if (watch.held === 0) watch.budget.sessions--;
}

export function guardSessions(server: Http2SecureServer, limits: SessionLimits): SessionGuard {
  const sessions = new Set<ServerHttp2Session>();
  // The TLS connection node:http2 is making a session of: its 'secureConnection' listener emits
  // 'session' synchronously, between this prepended listener and the one appended after it.
  let arriving: Socket | undefined;
  server.prependListener('secureConnection', (socket: Socket) => {
    arriving = socket;
  });
  server.on('secureConnection', () => {
    arriving = undefined;
  });
  const maxUnsentBytes = limits.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES;
  const budget: Budget = {
    held: 0,
    limit: limits.maxUnsentBytesTotal ?? DEFAULT_MAX_UNSENT_BYTES_TOTAL,
    sessions: 0,
    maxConcurrentStreams: limits.maxConcurrentStreams,
    streams: 0,
    refused: 0,
    cut: 0,
    reportedAt: -Infinity,
    report: limits.onBudgetFull,
  };

  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    if (arriving !== undefined) socketOf.set(session, arriving);
    const streams = new Map<ServerHttp2Stream, Watched>();
    const watch: Watch = {
      session,
      streams,
      maxUnsentBytes,
      budget,
      held: 0,
      narrowed: false,
      window: session.localSettings.initialWindowSize ?? DEFAULT_WINDOW_BYTES,
      socket: arriving,
      queued: 0,
      queuedSince: 0,
      gone: false,
    };
    watches.set(session, watch);
    let idle: NodeJS.Timeout | undefined;
    let check: NodeJS.Timeout | undefined;
    const arm = (ms: number): void => {
      idle = setTimeout(() => closeIdle(session), ms);
      idle.unref();
    };
    // Checked while a stream is open or its connection holds anything queued (a response whose
    // streams have closed may still be on its way: queuedBytes); idle from then on.
    const tick = (): void => {
      checkStreams(session, watch, limits.requestTimeoutMs);
      if (streams.size === 0 && watch.queued === 0 && check !== undefined) quiet();
    };
    const quiet = (): void => {
      clearInterval(check);
      check = undefined;
      if (!session.closed && !session.destroyed) arm(limits.keepAliveTimeoutMs);
    };
    // Like HTTP/1.1's headersTimeout: a silent or dribbling connection (no complete HEADERS)
    // is closed; a PING or SETTINGS frame does not count as a request.
    arm(limits.headersTimeoutMs);
    session.once('close', () => {
      clearTimeout(idle);
      clearInterval(check);
      // Its streams' own 'close' comes too; whichever is first gives their charge back.
      for (const watched of streams.values()) release(watched);
      streams.clear();
      if (watch.queued > 0) uncharge(watch, watch.queued);
      watch.queued = 0;
      watch.gone = true;
      sessions.delete(session);
    });
    session.on('stream', (stream: ServerHttp2Stream, _headers: unknown, flags: number) => {
      const now = performance.now();
      const watched: Watched = { started: now, complete: (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0, unsent: 0, since: now, cut: undefined, seen: 0, seenSince: now, body: 0, inbound: 0, released: false, watch };
      charge(watched, STREAM_BYTES);
      budget.streams++;
      if (!watched.complete) {
        // A body follows: what it may leave waiting unread is counted from the start (chargeInbound).
        chargeInbound(watched, watch.window);
        stream.once('end', () => (watched.complete = true));
      }
      if (check === undefined) {
        clearTimeout(idle);
        check = setInterval(tick, CHECK_INTERVAL_MS);
        check.unref();
      }
      streams.set(stream, watched);
      stream.once('close', () => {
        release(watched);
        streams.delete(stream);
        // What it sent may now wait in the connection's queue instead: counted there (syncQueued).
        if (syncQueued(watch) === 0 && streams.size === 0) quiet();
        // Its streams go when the session is destroyed, by us or by node:http2 (a peer's error).
        if (session.destroyed) cutSocketLater(session);
      });
      admit(watch, stream);
    });
  });

  return {
    async close(graceMs) {
      const all = [...sessions];
      const closed = all.map((session) => new Promise<void>((resolve) => (session.destroyed ? resolve() : session.once('close', () => resolve()))));
      for (const session of all) goAway(session);
      const timer = setTimeout(() => {
        for (const session of all) destroySession(session);
      }, graceMs);
      timer.unref();
      await Promise.all(closed);
      clearTimeout(timer);
    },
  };
}

/** The TLS socket under a session: `session.socket` is a proxy whose destroy() node:http2 refuses. */
const socketOf = new WeakMap<ServerHttp2Session, Socket>();

/** Destroys a session, and its connection with it (cutSocketLater). */
function destroySession(session: ServerHttp2Session): void {
  session.destroy();
  cutSocketLater(session);
}

/**
 * L-2: node:http2 (Node 20) ends a destroyed session's socket gracefully, waiting for its queued
 * writes to go out, and a peer that has gone or reads nothing never takes them: the socket, its
 * descriptor and its buffers stayed for good (a hostile review: 20 connections that sent 100
 * requests and dropped left 13–19 descriptors each time, and a few hundred of them took a server's
 * last descriptor). Whatever is still open GOAWAY_GRACE_MS after the session went is destroyed.
 */
function cutSocketLater(session: ServerHttp2Session): void {
  const socket = socketOf.get(session);
  if (socket === undefined) return;
  socketOf.delete(session);
  const cut = setTimeout(() => {
    if (!socket.destroyed) socket.destroy();
  }, GOAWAY_GRACE_MS);
  cut.unref();
}

/** Graceful: GOAWAY now; open streams may finish, new ones are refused (RFC 9113 §6.8). */
function goAway(session: ServerHttp2Session): void {
  if (!session.closed && !session.destroyed) session.close();
}

/**
 * An idle session: GOAWAY, and since no stream is open Node destroys it at once; one whose peer
 * does not read (the GOAWAY cannot be written) is cut shortly after.
 */
function closeIdle(session: ServerHttp2Session): void {
  goAway(session);
  const cut = setTimeout(() => destroySession(session), GOAWAY_GRACE_MS);
  cut.unref();
  session.once('close', () => clearTimeout(cut));
}

/**
 * One check of a session's open streams. A request not complete within the request time-out is
 * reset (RFC 9113 §8.1: CANCEL, the stream is no longer needed). A response with bytes waiting
 * that the peer took none of for the request time-out is reset too; when no response of the
 * session moves at all, or a reset stream is still held a check later (its RST_STREAM queued behind
 * data the peer does not read), the session is destroyed: that frees what it holds.
 */
function checkStreams(session: ServerHttp2Session, watch: Watch, timeoutMs: number): void {
  const { streams, budget } = watch;
  // What its connection holds queued, counted before the budget is judged (syncQueued).
  const queued = syncQueued(watch);
  // Past half the budget (Budget) a response that took nothing for PRESSURE_STALL_MS is stalled, and
  // so is a request that sent next to nothing: cut down to half of it, not just under it, since a
  // budget left full to the brim would still refuse every newcomer its streams.
  const crowded = budget.held > budget.limit / 2;
  const stallMs = crowded ? PRESSURE_STALL_MS : timeoutMs;
  if (watch.narrowed && !crowded) narrow(watch, false);
  const now = performance.now();
  // A queue the peer took nothing of for as long: all of the session is stuck behind it
  // (node:http2 writes nothing more meanwhile, and reads nothing either).
  if (queued > 0 && now - watch.queuedSince >= stallMs) {
    budget.cut++;
    destroySession(session);
    return;
  }
  const stalled: ServerHttp2Stream[] = [];
  let moving = false;
  for (const [stream, watched] of streams) {
    if (watched.cut !== undefined) {
      if (now - watched.cut >= CHECK_INTERVAL_MS) {
        destroySession(session);
        return;
      }
      continue;
    }
    // What a reader took of the body beyond the window counted from the start (chargeInbound);
    // nothing for a stream without a body, or whose body was discarded.
    if (watched.inbound > 0) {
      const more = watch.window + bodyBytesTaken(stream) - watched.inbound;
      if (more > 0) chargeInbound(watched, more);
    }
    if (!watched.complete) {
      if (now - watched.started >= timeoutMs || (crowded && requestSilent(stream, watched, now))) stalled.push(stream);
      continue;
    }
    const unsent = unsentBytes(stream);
    const took = lastProgress(stream);
    if (unsent === 0 || unsent !== watched.unsent || (took !== undefined && took > watched.since)) {
      watched.unsent = unsent;
      watched.since = now;
    }
    if (unsent === 0) continue;
    if (now - watched.since >= stallMs) stalled.push(stream);
    else moving = true;
  }
  if (stalled.length === 0) return;
  budget.cut += stalled.length;
  const responses = stalled.filter((stream) => unsentBytes(stream) > 0);
  if (responses.length > 0 && !moving) {
    destroySession(session);
    return;
  }
  for (const stream of stalled) {
    (streams.get(stream) as Watched).cut = now;
    if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
  }
}

/**
 * Under pressure (Budget): has this open request sent less than MIN_REQUEST_PROGRESS_BYTES for
 * PRESSURE_STALL_MS? What it sent is what its body reader took and what waits unread in the stream.
 * Not silent: a request whose side has ended (its body waits, whole, for its handler), or one whose
 * 100 Continue the service holds back (the client waits for it: a password change queued behind
 * hashes).
 */
function requestSilent(stream: ServerHttp2Stream, watched: Watched, now: number): boolean {
  if (awaitsContinue(stream) || (stream.state as { readonly remoteClose?: number }).remoteClose === 1) return false;
  const seen = bodyBytesTaken(stream) + stream.readableLength;
  if (seen - watched.seen >= MIN_REQUEST_PROGRESS_BYTES) {
    watched.seen = seen;
    watched.seenSince = now;
  }
  return now - watched.seenSince >= PRESSURE_STALL_MS;
}

/**
 * A new stream past the budget (Budget): refused, unless it is its session's first or its session
 * holds no more than its share; a session refused is narrowed, and widened again by its next stream
 * or check once the budget is half free. A refused stream is closed before the dispatcher sees it
 * (server.ts serves open streams only).
 */
function admit(watch: Watch, stream: ServerHttp2Stream): void {
  const { budget } = watch;
  if (budget.held <= budget.limit) {
    if (watch.narrowed && budget.held <= budget.limit / 2) narrow(watch, false);
    return;
  }
  reportFull(budget);
  if (watch.streams.size <= 1 || watch.held <= fairShare(budget)) return;
  budget.refused++;
  // Closed with an error code, the stream emits 'error': nothing to answer, ignored.
  stream.on('error', ignore);
  stream.close(constants.NGHTTP2_REFUSED_STREAM);
  if (!watch.narrowed) narrow(watch, true);
}

/** SETTINGS_MAX_CONCURRENT_STREAMS 1 for `watch`'s session, or back to the server's own. */
function narrow(watch: Watch, narrowed: boolean): void {
  watch.narrowed = narrowed;
  try {
    watch.session.settings({ maxConcurrentStreams: narrowed ? 1 : watch.budget.maxConcurrentStreams });
  } catch {
    // A peer that leaves too many SETTINGS unacknowledged (ERR_HTTP2_MAX_PENDING_SETTINGS_ACK) or
    // a session closing: its streams are still refused one by one.
  }
}

/** onBudgetFull, unless told less than BUDGET_REPORT_MS ago; the counts start again from there. */
function reportFull(budget: Budget): void {
  const now = performance.now();
  if (budget.report === undefined || now - budget.reportedAt < BUDGET_REPORT_MS) return;
  budget.reportedAt = now;
  budget.report({ heldBytes: budget.held, limitBytes: budget.limit, openStreams: budget.streams, refusedStreams: budget.refused, cutStreams: budget.cut });
  budget.refused = 0;
  budget.cut = 0;
}

function ignore(): void {}
