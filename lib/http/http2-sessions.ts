// L-1's limits for HTTP/2 sessions (H-1), which Node's HTTP/1.1 time-outs do not reach: an idle
// session is closed, a stream whose request does not complete in time is reset, and close()
// ends every session with GOAWAY (C-5).
import { constants, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';

export interface SessionLimits {
  /** The first request's headers must arrive within this much of the session's start. */
  readonly headersTimeoutMs: number;
  /** A request (headers and body) must be complete within this much of its stream's start. */
  readonly requestTimeoutMs: number;
  /** A session with no open stream for this long is closed. */
  readonly keepAliveTimeoutMs: number;
}

export interface SessionGuard {
  /** GOAWAY to every session (open streams may finish), then destroy what is left after `graceMs`. */
  close(graceMs: number): Promise<void>;
}

// After GOAWAY, an idle session whose peer does not read is cut this much later.
const GOAWAY_GRACE_MS = 1_000;

export function guardSessions(server: Http2SecureServer, limits: SessionLimits): SessionGuard {
  const sessions = new Set<ServerHttp2Session>();

  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = (ms: number): void => {
      idle = setTimeout(() => closeIdle(session), ms);
      idle.unref();
    };
    // Like HTTP/1.1's headersTimeout: a silent or dribbling connection (no complete HEADERS)
    // is closed; a PING or SETTINGS frame does not count as a request.
    arm(limits.headersTimeoutMs);
    session.once('close', () => {
      clearTimeout(idle);
      sessions.delete(session);
    });
    session.on('stream', (stream: ServerHttp2Stream, _headers: unknown, flags: number) => {
      open++;
      clearTimeout(idle);
      let complete = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      if (!complete) stream.once('end', () => (complete = true));
      const deadline = setTimeout(() => {
        // RFC 9113 §8.1: the request did not arrive in time; CANCEL says the stream is no longer needed.
        if (!complete && !stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      }, limits.requestTimeoutMs);
      deadline.unref();
      stream.once('close', () => {
        clearTimeout(deadline);
        if (--open === 0 && !session.closed && !session.destroyed) arm(limits.keepAliveTimeoutMs);
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
