// L-2 (amended 2026-11-27): a response whose reader stops taking bytes is ended after the request
// time-out. To see a response's progress at all, a large body is written a piece at a time, the
// next piece once the transport has taken the last: node:http2 hands a stream's queued writes to
// nghttp2 as one request, and node:http a socket's, so one big write reports nothing until the
// last byte is out. The pieces share the body's memory (subarrays), nothing is copied.
import { Buffer } from 'node:buffer';

/** Bodies up to this size are written whole; larger ones in pieces of this size. */
export const PIECE_BYTES = 64 * 1024;

/** Where a body goes: node:http's ServerResponse, node:http2's compatibility response or a stream. */
export interface BodySink {
  write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
  end(chunk: string | Buffer, callback?: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  destroy(): unknown;
  readonly destroyed: boolean;
  readonly writableLength: number;
  /** All of it handed to the kernel (node:http's response: its socket holds none of it either). */
  readonly writableFinished?: boolean;
  /** node:http's response: its connection (one watch per connection, below). */
  readonly socket?: object | null;
}

interface Progress {
  /** Bytes of the body the transport has not taken yet. */
  unsent: number;
  /** performance.now() when the transport last took a piece. */
  at: number;
}

const progress = new WeakMap<object, Progress>();

/**
 * Writes `body` and ends `out`. With `stallMs`, `out` is destroyed (and its connection with it)
 * when the transport takes none of a body that does not fit at once for that long.
 */
export function sendBody(out: BodySink, body: string, stallMs?: number): void {
  // A JavaScript string has at most 3 bytes per UTF-16 unit: most bodies are known small unencoded.
  // One that fits is written as the string: the transport encodes it into memory it frees when the
  // write is done, where a Buffer made here would live until the next garbage collection (a 64 KB
  // OpenAPI document per request kept tens of MiB of them alive under load).
  const bytes = body.length * 3 <= PIECE_BYTES || Buffer.byteLength(body) <= PIECE_BYTES ? undefined : Buffer.from(body);
  if (bytes === undefined) {
    out.end(body);
    // Taken at once unless the peer's window is already full; over HTTP/1.1 it is usually still
    // in the corked socket at this point, which hands it to the kernel on the next tick.
    if (stallMs !== undefined && out.writableLength > 0) watchWhole(out, stallMs);
    return;
  }
  const record: Progress = { unsent: bytes.length, at: performance.now() };
  // Kept by the stream under node:http2's compatibility response: the stream is what is watched.
  progress.set((out as { readonly stream?: object }).stream ?? out, record);
  const timer = stallMs !== undefined ? watch(out, stallMs) : undefined;
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

/**
 * Destroys `out` after `ms` unless the timer is refreshed or `out` closes (when its response is done, or cut).
 * The timer holds `out` weakly: a response pipelined behind another on an HTTP/1.1 connection that
 * closes is never closed by node:http, and held here it would keep its body until `ms` had passed
 * (a few hundred connections cut with 32 large responses waiting each held gigabytes).
 */
function watch(out: BodySink, ms: number): NodeJS.Timeout {
  const ref = new WeakRef(out);
  const timer = setTimeout(() => ref.deref()?.destroy(), ms);
  timer.unref();
  out.once('close', () => clearTimeout(timer));
  return timer;
}

/** One connection's watch over the body written whole last on it. */
interface ConnectionWatch {
  /** The last body written whole on the connection. */
  out: BodySink;
  /** How many bodies were written whole on it: a new one starts the wait again. */
  written: number;
  /** `written` at the timer's last look, and how many looks in a row found that body unsent. */
  seen: number;
  looks: number;
  /** The timer is due (it sleeps while the connection's last body is all sent). */
  armed: boolean;
  readonly timer: NodeJS.Timeout;
}

const connectionWatches = new WeakMap<object, ConnectionWatch>();

/** How many times the watch over a connection looks within a time-out: a body is cut between 1× and 1.25× it. */
const LOOKS = 4;

/**
 * A body written whole: `out` is destroyed if it is not all handed to the kernel between `ms` and
 * 1.25 × `ms` after it was written, unless a later body is written on its connection (HTTP/1.1
 * answers a connection's requests in turn, so a response still held when a later one is written
 * holds that one too). One timer per connection, looking every `ms` / LOOKS while a body is unsent
 * and asleep when none is: a response costs a map lookup and a count, not a timer made or moved
 * (a refreshed timer reads the clock and is moved in Node's lists: some 500 instructions).
 */
function watchWhole(out: BodySink, ms: number): void {
  const socket = out.socket;
  if (socket === undefined || socket === null) {
    watch(out, ms);
    return;
  }
  const known = connectionWatches.get(socket);
  if (known !== undefined) {
    known.out = out;
    known.written++;
    if (!known.armed) {
      known.armed = true;
      known.timer.refresh();
    }
    return;
  }
  const watched: ConnectionWatch = {
    out,
    written: 1,
    seen: 0,
    looks: 0,
    armed: true,
    timer: setTimeout(() => {
      const last = watched.out;
      if (last.writableFinished === true || last.destroyed) {
        watched.armed = false;
        return;
      }
      if (watched.written !== watched.seen) {
        watched.seen = watched.written;
        watched.looks = 1;
      } else if (++watched.looks > LOOKS) {
        last.destroy();
        return;
      }
      watched.timer.refresh();
    }, Math.max(1, Math.ceil(ms / LOOKS))),
  };
  watched.timer.unref();
  connectionWatches.set(socket, watched);
  (socket as { once(event: 'close', listener: () => void): unknown }).once('close', () => clearTimeout(watched.timer));
}

/** Bytes of the response on `out` (a stream, or a node:http response) not yet taken by the transport. */
export function unsentBytes(out: BodySink): number {
  return progress.get(out)?.unsent ?? out.writableLength;
}

/** When the transport last took a piece of a body sendBody() writes on `out` (performance.now()). */
export function lastProgress(out: BodySink): number | undefined {
  return progress.get(out)?.at;
}
