// L-1's limits for HTTP/2 sessions (H-1), which Node's HTTP/1.1 time-outs do not reach: an idle
// session is closed, a stream whose request does not complete in time is reset, and close()
// ends every session with GOAWAY (C-5). L-2 (amended 2026-11-27) for the responses: one whose
// reader takes no bytes for the request time-out (an HTTP/2 window that never opens) is reset, a
// session whose every response stalls is destroyed, and the bytes a session holds unsent are
// bounded.
import { constants, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
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
}

/** L-2: what one HTTP/2 session may hold unsent by default, across its streams (bodies over 16 KiB). */
export const DEFAULT_MAX_UNSENT_BYTES = 4 * 1024 * 1024;

export interface SessionGuard {
  /** GOAWAY to every session (open streams may finish), then destroy what is left after `graceMs`. */
  close(graceMs: number): Promise<void>;
}

// After GOAWAY, an idle session whose peer does not read is cut this much later.
const GOAWAY_GRACE_MS = 1_000;

// How often a session with open streams is checked, as node:http checks its connections.
const CHECK_INTERVAL_MS = 1_000;

/** What the guard knows of one open stream. */
interface Watched {
  readonly started: number;
  complete: boolean;
  /** Unsent response bytes at the last check, and since when the response has not moved. */
  unsent: number;
  since: number;
  /** When the stream was reset for stalling (its RST_STREAM may be stuck behind queued data). */
  cut: number | undefined;
}

interface Watch {
  readonly streams: Map<ServerHttp2Stream, Watched>;
  readonly maxUnsentBytes: number;
}

const watches = new WeakMap<ServerHttp2Session, Watch>();

/** Bodies this small are never refused: 100 streams of them are 1.6 MiB (a refused PUT would hide its outcome). */
export const SMALL_BODY_BYTES = 16 * 1024;

/**
 * L-2: may `stream` take `body` to send? A small body always may; a larger one not when
 * the session's other streams already hold it up to the limit (one response of any size may be
 * held on its own). A stream of a session the guard does not watch always may.
 */
export function mayHoldUnsent(stream: ServerHttp2Stream, body: string): boolean {
  // At most 3 bytes per UTF-16 unit: the usual small body is let through without encoding it.
  if (body.length * 3 <= SMALL_BODY_BYTES) return true;
  const watch = watches.get(stream.session as ServerHttp2Session);
  if (watch === undefined) return true;
  const bytes = Buffer.byteLength(body);
  if (bytes <= SMALL_BODY_BYTES) return true;
  let held = 0;
  for (const other of watch.streams.keys()) if (other !== stream) held += unsentBytes(other);
  return held === 0 || held + bytes <= watch.maxUnsentBytes;
}

export function guardSessions(server: Http2SecureServer, limits: SessionLimits): SessionGuard {
  const sessions = new Set<ServerHttp2Session>();

  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    const streams = new Map<ServerHttp2Stream, Watched>();
    watches.set(session, { streams, maxUnsentBytes: limits.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES });
    let idle: NodeJS.Timeout | undefined;
    let check: NodeJS.Timeout | undefined;
    const arm = (ms: number): void => {
      idle = setTimeout(() => closeIdle(session), ms);
      idle.unref();
    };
    // Like HTTP/1.1's headersTimeout: a silent or dribbling connection (no complete HEADERS)
    // is closed; a PING or SETTINGS frame does not count as a request.
    arm(limits.headersTimeoutMs);
    session.once('close', () => {
      clearTimeout(idle);
      clearInterval(check);
      streams.clear();
      sessions.delete(session);
    });
    session.on('stream', (stream: ServerHttp2Stream, _headers: unknown, flags: number) => {
      const now = performance.now();
      const watched: Watched = { started: now, complete: (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0, unsent: 0, since: now, cut: undefined };
      if (!watched.complete) stream.once('end', () => (watched.complete = true));
      if (streams.size === 0) {
        clearTimeout(idle);
        check = setInterval(() => checkStreams(session, streams, limits.requestTimeoutMs), CHECK_INTERVAL_MS);
        check.unref();
      }
      streams.set(stream, watched);
      stream.once('close', () => {
        streams.delete(stream);
        if (streams.size === 0) {
          clearInterval(check);
          if (!session.closed && !session.destroyed) arm(limits.keepAliveTimeoutMs);
        }
      });
    });
  });

  return {
    async close(graceMs) {
      const all = [...sessions];
      const closed = all.map((session) => new Promise<void>((resolve) => (session.destroyed ? resolve() : session.once('close', () => resolve()))));
      for (const session of all) goAway(session);
      const timer = setTimeout(() => {
        for (const session of all) session.destroy();
      }, graceMs);
      timer.unref();
      await Promise.all(closed);
      clearTimeout(timer);
    },
  };
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
  const cut = setTimeout(() => session.destroy(), GOAWAY_GRACE_MS);
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
function checkStreams(session: ServerHttp2Session, streams: Map<ServerHttp2Stream, Watched>, timeoutMs: number): void {
  const now = performance.now();
  const stalled: ServerHttp2Stream[] = [];
  let moving = false;
  for (const [stream, watched] of streams) {
    if (watched.cut !== undefined) {
      if (now - watched.cut >= CHECK_INTERVAL_MS) {
        session.destroy();
        return;
      }
      continue;
    }
    if (!watched.complete) {
      if (now - watched.started >= timeoutMs) stalled.push(stream);
      continue;
    }
    const unsent = unsentBytes(stream);
    const took = lastProgress(stream);
    if (unsent === 0 || unsent !== watched.unsent || (took !== undefined && took > watched.since)) {
      watched.unsent = unsent;
      watched.since = now;
    }
    if (unsent === 0) continue;
    if (now - watched.since >= timeoutMs) stalled.push(stream);
    else moving = true;
  }
  if (stalled.length === 0) return;
  const responses = stalled.filter((stream) => unsentBytes(stream) > 0);
  if (responses.length > 0 && !moving) {
    session.destroy();
    return;
  }
  for (const stream of stalled) {
    (streams.get(stream) as Watched).cut = now;
    if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
  }
}
