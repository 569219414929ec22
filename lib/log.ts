/**
 * One JSON object per line (CONTRACT C-6). Fields are chosen by the callers from a fixed set, never by
 * dumping headers or bodies, so a password or an Authorization value cannot reach a log (P-11).
 */
import { Buffer } from 'node:buffer';
import { process } from './process.js';

export interface RequestLog {
  /** The service's own request id (base-36 digits and '-', lib/http/dispatch.ts): written as it is. */
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** Milliseconds; the line gives them to the microsecond. */
  readonly durationMs: number;
  readonly address: string;
  /**
   * `performance.now()` when it was answered, which the caller read for `durationMs` anyway: the
   * line's time is taken from it (with the wall clock's offset, read again every second) instead of
   * a third clock read. Without it, or with a logger's own clock, the clock is read.
   */
  readonly at?: number;
}

/**
 * How much is written. `info`: everything, one line per request. `warn`: requests answered 4xx or
 * 5xx, warnings and errors. `error`: requests answered 5xx and errors. `off` (alias `silent`): no
 * line per request, errors only. The startup line (the URL, T-6) is written at every level.
 */
export type LogLevel = 'info' | 'warn' | 'error' | 'off';
export const LOG_LEVELS: readonly string[] = ['info', 'warn', 'error', 'off', 'silent'];

/** The lowest status of a request line written at each level (Infinity: none). */
const REQUEST_THRESHOLD: { readonly [L in LogLevel]: number } = { info: 0, warn: 400, error: 500, off: Infinity };

export interface Logger {
  /** False when no request line can be written: callers skip the work of building them. */
  readonly enabled: boolean;
  request(entry: RequestLog): void;
  /** Written at every level: the startup line. */
  notice(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, error?: unknown, fields?: Readonly<Record<string, unknown>>): void;
}

export function createLogger(write: false | LineSink, level: LogLevel = 'info', now?: () => Date): Logger {
  const nothing = (): void => {};
  if (write === false) return { enabled: false, request: nothing, notice: nothing, info: nothing, warn: nothing, error: nothing };
  // The access log's cost per request is measured (bench/README.md): the ISO time's date and
  // seconds made once per second and the milliseconds appended (no Date per line unless a clock
  // is given; a request line's time comes from the clock read its caller made, RequestLog `at`),
  // and the request line built as text rather than copied into an object for JSON.stringify, from
  // pieces kept while they hold (the time and level, the address).
  const clock = now === undefined ? Date.now : () => now().getTime();
  let lastSecond = Number.NaN;
  // "2026-11-23T10:00:00." of "2026-11-23T10:00:00.123Z", made when the second changes.
  let secondPrefix = '';
  /** The time `ms` as ISO 8601 (`2026-11-23T10:00:00.123Z`), its second's prefix made when it changes. */
  const isoOf = (ms: number): string => {
    const second = Math.floor(ms / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      secondPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    }
    return `${secondPrefix}${MILLIS_Z[ms - second * 1000] as string}`;
  };
  const time = (): string => isoOf(clock());
  // A request line's time from its `at` (RequestLog): the wall clock's offset from performance.now(),
  // read again whenever the second changes, so a wall clock set meanwhile shows within a second.
  let offset = Number.NaN;
  let offsetSecond = Number.NaN;
  const wallOf = (at: number | undefined): number => {
    if (at === undefined || now !== undefined) return clock();
    const ms = Math.floor(at + offset);
    if (Math.floor(ms / 1000) === offsetSecond) return ms;
    offset = Date.now() - performance.now();
    const wall = Math.floor(at + offset);
    offsetSecond = Math.floor(wall / 1000);
    return wall;
  };
  // What a request line starts with, up to its id: the time and the level, made again when the
  // millisecond or the level changes (at saturation, dozens of lines share one).
  let headMs = Number.NaN;
  let headLevel = '';
  let head = '';
  // What it ends with, from the address on: made again when the address changes (each connection's
  // requests come from one), with whether it is printable ASCII.
  let tailAddress: string | undefined;
  let tail = '';
  let tailAscii = true;
  // The last path and whether it is printable ASCII: a path asked for again is the same string
  // (lib/http/context.ts keeps the last target's), found by identity instead of scanned.
  let lastPath: string | undefined;
  let lastPathPlain = true;
  const emit = (lineLevel: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    try {
      write(JSON.stringify({ time: time(), level: lineLevel, msg: message, ...fields }));
    } catch {
      // A broken log sink must not take a request down with it.
    }
  };
  const threshold = REQUEST_THRESHOLD[level];
  // Request lines are nearly always printable ASCII: a writer of ours sends those as they are,
  // one byte a character, instead of encoding the batch as UTF-8 (createLineWriter).
  const writeAscii = write.ascii ?? write;
  return {
    enabled: threshold !== Infinity,
    request: (e) => {
      if (e.status < threshold) return;
      // The same text as JSON.stringify of the entry (fields in the same order), built as one
      // string with no object on the way and as few joins as can be (each costs an allocation):
      // the quotes are in the constant pieces (one for each method and each status, made once),
      // the path and the address escaped by jsonChars (as they are, unless they hold a character
      // JSON escapes), the duration (to the microsecond) printed from whole microseconds.
      try {
        const ms = wallOf(e.at);
        const level = e.status >= 500 ? LEVEL_ERROR : e.status >= 400 ? LEVEL_WARN : LEVEL_INFO;
        if (ms !== headMs || level !== headLevel) {
          headMs = ms;
          headLevel = level;
          head = flat(`{"time":"${isoOf(ms)}${level}`);
        }
        const { path, address } = e;
        if (address !== tailAddress) {
          tailAddress = address;
          tailAscii = plainAscii(address);
          tail = flat(`${ADDRESS_PIECE}${tailAscii ? address : jsonChars(address)}"}`);
        }
        const method = methodPiece(e.method);
        if (path !== lastPath) {
          lastPath = path;
          lastPathPlain = plainAscii(path);
        }
        const plainPath = lastPathPlain;
        const line = `${head}${e.id}${method.text}${plainPath ? path : jsonChars(path)}${statusPiece(e.status)}${millis(e.durationMs)}${tail}`;
        // The id is base-36 digits and '-': ASCII.
        if (plainPath && tailAscii && method.plain) writeAscii(line);
        else write(line);
      } catch {
        // As above.
      }
    },
    notice: (message, fields) => emit('info', message, fields),
    info: level === 'info' ? (message, fields) => emit('info', message, fields) : nothing,
    warn: level === 'info' || level === 'warn' ? (message, fields) => emit('warn', message, fields) : nothing,
    error: (message, error, fields) =>
      emit('error', message, { ...fields, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) }),
  };
}

const ADDRESS_PIECE = ',"address":"';

/**
 * `text` made one flat string (V8 flattens a joined string when it is read as a number): a piece
 * that goes into many lines is then copied whole into each batch instead of walked piece by piece
 * each time (pino's flatstr). Counted: about 250 instructions a line for the head and the tail.
 */
function flat(text: string): string {
  Number(text);
  return text;
}

/**
 * `","method":"GET","path":"` for each method seen (the few a server sees; at most 64 kept), with
 * whether the method is printable ASCII; and each status's `","status":200,"durationMs":`.
 */
const METHOD_PIECES = new Map<string, MethodPiece>();
const STATUS_PIECES: string[] = [];

interface MethodPiece {
  readonly text: string;
  readonly plain: boolean;
}

function methodPiece(method: string): MethodPiece {
  let piece = METHOD_PIECES.get(method);
  if (piece === undefined) {
    piece = { text: flat(`","method":"${jsonChars(method)}","path":"`), plain: plainAscii(method) };
    if (METHOD_PIECES.size < 64) METHOD_PIECES.set(method, piece);
  }
  return piece;
}

function statusPiece(status: number): string {
  const known = status >= 100 && status <= 999 ? STATUS_PIECES[status] : undefined;
  if (known !== undefined) return known;
  const piece = `","status":${status},"durationMs":`;
  if (Number.isInteger(status) && status >= 100 && status <= 999) STATUS_PIECES[status] = piece;
  return piece;
}

/** "000Z" … "999Z": a time's milliseconds and its zone. */
const MILLIS_Z: readonly string[] = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`);

/** What comes between a request line's time and its id, by level. */
const LEVEL_INFO = '","level":"info","msg":"request","id":"';
const LEVEL_WARN = '","level":"warn","msg":"request","id":"';
const LEVEL_ERROR = '","level":"error","msg":"request","id":"';

/** Printable ASCII that JSON writes as it is (no control, '"', '\\' or character above '~'). */
function plainAscii(text: string): boolean {
  // A regular expression rather than a loop of charCodeAt: a path is a slice of the request target,
  // which V8's compiled loop reads a character at a time through the slice (counted: some 700
  // instructions a line more), and the expression's own code reads directly.
  return !NOT_PLAIN_ASCII.test(text);
}

const NOT_PLAIN_ASCII = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;

/**
 * A string as the inside of the JSON string literal JSON.stringify gives (without the quotes):
 * request ids, methods, paths and addresses seldom hold a character JSON escapes, and are then
 * the text itself, with no call into JSON.stringify.
 */
function jsonChars(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Controls, '"', '\\' and any surrogate (JSON.stringify escapes a lone one): its own way.
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(text).slice(1, -1);
  }
  return text;
}

/**
 * 2^52 µs: below 2^43 ms two doubles are less than 0.001 apart, so each multiple of 0.001 is a
 * double of its own and no shorter decimal reads back as it. Above (from 8.8e12 ms, some 280 years)
 * they are 0.002 apart and 8849681330088.971 prints as 8849681330088.97: JSON.stringify's text.
 */
const MAX_EXACT_MICROS = 2 ** 52;

/**
 * Milliseconds to the microsecond, as JSON.stringify prints Math.round(ms * 1e3) / 1e3 (null when not
 * finite), from the whole number of microseconds: printing the double costs ten times more. For a
 * multiple of 0.001 up to MAX_EXACT_MICROS µs, the shortest decimal that reads back as that double
 * is that multiple with its trailing zeros dropped, which is the text built here.
 */
export function millis(ms: number): string {
  if (!Number.isFinite(ms)) return 'null';
  const micros = Math.round(ms * 1e3);
  if (micros < 0 || micros > MAX_EXACT_MICROS) return JSON.stringify(micros / 1e3);
  const whole = Math.floor(micros / 1000);
  const frac = micros - whole * 1000;
  if (frac === 0) return `${whole}`;
  if (frac % 100 === 0) return `${whole}.${frac / 100}`;
  if (frac % 10 === 0) return `${whole}.${frac < 100 ? '0' : ''}${frac / 10}`;
  return `${whole}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`;
}

/**
 * Log lines joined into few writes instead of one each (sonic-boom's technique, as pino uses it):
 * the lines of a batch are kept as they come and joined as one string, encoded once when the batch
 * is written (as UTF-8, or byte for byte when all its lines are known to be printable ASCII); the
 * sink gets that buffer.
 * The pending lines are written together by the MAX_PENDING_LINES-th or the one that would not fit
 * the batch (under load), or by a timer IDLE_FLUSH_MS after the oldest of them: no line waits
 * longer, the writer reads no clock, and the process wakes for the log at most 1000 / IDLE_FLUSH_MS
 * times a second. Below saturation each write carries IDLE_FLUSH_MS of lines, not fewer: a write
 * costs as much as several lines (bench/README.md, "The request log at saturation"). The timer
 * is not cleared when lines go out earlier (a cleared timer still wakes the event loop at its
 * time: Node re-arms its one libuv timer only when due); it then writes the lines that came since,
 * sooner.
 * `flush()` writes what is pending at once (before a planned exit).
 *
 * With `bound` (`backlog`: the bytes the sink holds and has not written yet, a stream's
 * writableLength), a sink that cannot keep up never holds more than about `maxBacklog` bytes: a
 * batch that finds the backlog at or above it is dropped and counted, and the next batch written
 * starts with a line saying how many were dropped (sonic-boom's `maxLength` with its 'drop' event).
 * Nothing blocks: a request never waits for the log (see bench/README.md, "The request log").
 */
export function createLineWriter(
  sink: (chunk: Buffer) => void,
  bound?: { readonly backlog: () => number; readonly maxBacklog?: number; readonly now?: () => Date },
): { readonly write: LineSink; readonly flush: () => void } {
  // The pending lines, each followed by its newline, and their UTF-16 units: joined once when
  // written (one copy, where appending to a string builds a rope of every piece to flatten then),
  // and the sink gets a buffer of the batch's own size (a new one each time: a stream writing
  // asynchronously keeps what it is given).
  let pending: string[] = [];
  let units = 0;
  let lines = 0;
  // Every pending line is printable ASCII (given by `write.ascii`): the batch's UTF-16 units are
  // its bytes, copied one a byte (Latin-1), where UTF-8 would be measured and encoded.
  let ascii = true;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  const maxBacklog = bound?.maxBacklog ?? MAX_BACKLOG_BYTES;
  const flush = (): void => {
    if (lines === 0) return;
    const chunk = Buffer.from(pending.join(''), ascii ? 'latin1' : 'utf8');
    const count = lines;
    pending = [];
    units = 0;
    lines = 0;
    ascii = true;
    if (bound !== undefined) {
      if (bound.backlog() >= maxBacklog) {
        dropped += count;
        return;
      }
      if (dropped > 0) {
        const time = (bound.now ?? (() => new Date()))().toISOString();
        sink(Buffer.from(`{"time":"${time}","level":"warn","msg":"log lines dropped: the output did not keep up","dropped":${dropped}}\n`));
        dropped = 0;
      }
    }
    sink(chunk);
  };
  const onTimer = (): void => {
    timer = undefined;
    flush();
  };
  const add = (line: string, printable: boolean): void => {
    // A batch holds at most BATCH_UNITS UTF-16 units (at most 3 bytes each in UTF-8); a longer
    // line (an error's long stack) goes out as a batch of its own.
    if (lines > 0 && units + line.length >= BATCH_UNITS) flush();
    if (!printable) ascii = false;
    pending.push(line, '\n');
    units += line.length + 1;
    const n = ++lines;
    if (n >= MAX_PENDING_LINES) flush();
    else if (n === 1 && timer === undefined) {
      timer = setTimeout(onTimer, IDLE_FLUSH_MS);
      // Lines still pending at exit are written by flush() (the CLI calls it before it exits).
      timer.unref();
    }
  };
  const write: LineSink = Object.assign((line: string) => add(line, false), { ascii: (line: string) => add(line, true) });
  return { write, flush };
}

/**
 * Where a logger writes its lines. One made by createLineWriter() also takes, as `ascii`, a line
 * its caller knows to be printable ASCII; any other function (an embedder's) gets every line as the
 * only argument.
 */
export type LineSink = ((line: string) => void) & { readonly ascii?: (line: string) => void };

/** The longest a log line waits for the write that carries it: what a reader of the log can lag by. */
export const IDLE_FLUSH_MS = 100;
const MAX_PENDING_LINES = 256;
/** A batch of at most 64 Ki UTF-16 units: 64 KiB of ASCII (a pipe's buffer on Linux); 256 request lines take about 60. */
const BATCH_UNITS = 64 * 1024;
/**
 * What a stream sink may hold unwritten before batches are dropped (8 MiB: some 35,000 request
 * lines, seconds of saturation; the process's memory stays bounded whatever stdout does).
 */
export const MAX_BACKLOG_BYTES = 8 * 2 ** 20;

/**
 * The log lines of a stream (standard output): batched, never blocking, bounded (createLineWriter).
 * A file or /dev/null is written at once (Node writes files synchronously); a pipe or a socket
 * asynchronously, its backlog bounded by MAX_BACKLOG_BYTES. A stream that fails (its reader went
 * away: EPIPE, `httpskit serve | head`) takes no more lines, and its error is not the process's:
 * a server whose log nobody reads any more goes on serving.
 */
export function streamLines(
  stream: { write(chunk: Buffer): unknown; readonly writableLength: number; readonly destroyed?: boolean; on?(event: 'error', listener: (error: Error) => void): unknown },
  maxBacklog = MAX_BACKLOG_BYTES,
): ReturnType<typeof createLineWriter> {
  let failed = false;
  stream.on?.('error', () => {
    failed = true;
  });
  return createLineWriter(
    (chunk) => {
      if (!failed && stream.destroyed !== true) stream.write(chunk);
    },
    { backlog: () => stream.writableLength, maxBacklog },
  );
}

let stdoutWriter: ReturnType<typeof createLineWriter> | undefined;

/**
 * Standard output as a log sink (`log: true`), shared by every service of the process: one batched
 * writer and one exit hook, so lines still pending when the process exits are written then (to a
 * file at once, to a pipe as far as it takes them without waiting).
 */
export function stdoutLines(): (line: string) => void {
  if (stdoutWriter === undefined) {
    const writer = streamLines(process.stdout);
    process.once('exit', writer.flush);
    stdoutWriter = writer;
  }
  return stdoutWriter.write;
}
