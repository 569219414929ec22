// L-2 (amended 2026-11-27): a response whose reader stops taking bytes is ended after the request
// time-out. To see a response's progress at all, a large body is written a piece at a time, the
// next piece once the transport has taken the last: node:http2 hands a stream's queued writes to
// nghttp2 as one request, and node:http a socket's, so one big write reports nothing until the
// last byte is out. The pieces share the body's memory (subarrays), nothing is copied.

/** Bodies up to this size are written whole; larger ones in pieces of this size. */
export const PIECE_BYTES = 64 * 1024;

/** Where a body goes: node:http's ServerResponse, node:http2's compatibility response or a stream. */
export interface BodySink {
  write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
  end(chunk: string | Buffer, callback?: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
  readonly writableLength: number;
}

interface Progress {
  /** Bytes of the body the transport has not taken yet. */
  unsent: number;
  /** performance.now() when the transport last took a piece. */
  at: number;
}

const progress = new WeakMap<object, Progress>();

/**
 * Writes `body` and ends `out`. With `stallMs`, `onStall` runs when the transport takes none of a
 * body that does not fit at once for that long (the caller ends the connection).
 */
export function sendBody(out: BodySink, body: string, stallMs?: number, onStall?: () => void): void {
  // A JavaScript string has at most 3 bytes per UTF-16 unit: most bodies are known small unencoded.
  // One that fits is written as the string: the transport encodes it into memory it frees when the
  // write is done, where a Buffer made here would live until the next garbage collection (a 64 KB
  // OpenAPI document per request kept tens of MiB of them alive under load).
  const bytes = body.length * 3 <= PIECE_BYTES || Buffer.byteLength(body) <= PIECE_BYTES ? undefined : Buffer.from(body);
  if (bytes === undefined) {
    out.end(body);
    // Taken at once (the usual case) unless the peer's window is already full.
    if (stallMs !== undefined && onStall !== undefined && out.writableLength > 0) watch(out, stallMs, onStall);
    return;
  }
  const record: Progress = { unsent: bytes.length, at: performance.now() };
  // Kept by the stream under node:http2's compatibility response: the stream is what is watched.
  progress.set((out as { readonly stream?: object }).stream ?? out, record);
  const timer = stallMs !== undefined && onStall !== undefined ? watch(out, stallMs, onStall) : undefined;
  let taken = 0;
  const next = (): void => {
    const end = Math.min(taken + PIECE_BYTES, bytes.length);
    const piece = bytes.subarray(taken, end);
    const took = (): void => {
      taken = end;
      record.unsent = bytes.length - taken;
      record.at = performance.now();
      timer?.refresh();
    };
    if (end === bytes.length) {
      out.end(piece, () => {
        took();
        clearTimeout(timer);
      });
    } else {
      out.write(piece, (error) => {
        if (error !== null && error !== undefined) return;
        took();
        if (!out.destroyed) next();
      });
    }
  };
  next();
}

/** `onStall` after `ms` unless the timer is refreshed or `out` closes (when its response is done, or cut). */
function watch(out: BodySink, ms: number, onStall: () => void): NodeJS.Timeout {
  const timer = setTimeout(onStall, ms);
  timer.unref();
  out.once('close', () => clearTimeout(timer));
  return timer;
}

/** Bytes of the response on `out` (a stream, or a node:http response) not yet taken by the transport. */
export function unsentBytes(out: BodySink): number {
  return progress.get(out)?.unsent ?? out.writableLength;
}

/** When the transport last took a piece of a body sendBody() writes on `out` (performance.now()). */
export function lastProgress(out: BodySink): number | undefined {
  return progress.get(out)?.at;
}
