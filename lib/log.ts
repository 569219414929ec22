/**
 * One JSON object per line (CONTRACT C-6). Fields are chosen by the callers from a fixed set, never by
 * dumping headers or bodies, so a password or an Authorization value cannot reach a log (P-11).
 */
export interface RequestLog {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** Milliseconds; the line gives them to the microsecond. */
  readonly durationMs: number;
  readonly address: string;
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

export function createLogger(write: false | ((line: string) => void), level: LogLevel = 'info', now?: () => Date): Logger {
  const nothing = (): void => {};
  if (write === false) return { enabled: false, request: nothing, notice: nothing, info: nothing, warn: nothing, error: nothing };
  // The access log's cost per request is measured (bench/README.md): the ISO time's date and
  // seconds made once per second and the milliseconds appended (no Date per line unless a clock
  // is given), and the request line built as text rather than copied into an object for
  // JSON.stringify.
  const clock = now === undefined ? Date.now : () => now().getTime();
  let lastSecond = Number.NaN;
  let secondPrefix = '';
  const time = (): string => {
    const ms = clock();
    const second = Math.floor(ms / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      // "2026-11-23T10:00:00." of "2026-11-23T10:00:00.123Z"
      secondPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    }
    const milli = ms - second * 1000;
    return `${secondPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  };
  const emit = (lineLevel: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    try {
      write(JSON.stringify({ time: time(), level: lineLevel, msg: message, ...fields }));
    } catch {
      // A broken log sink must not take a request down with it.
    }
  };
  const threshold = REQUEST_THRESHOLD[level];
  return {
    enabled: threshold !== Infinity,
    request: (e) => {
      if (e.status < threshold) return;
      const lineLevel = e.status >= 500 ? 'error' : e.status >= 400 ? 'warn' : 'info';
      // The same fields, in the same order, as JSON.stringify of the entry would give; the strings
      // that come from the request (path, method, address) still go through JSON.stringify.
      // To the microsecond: a shorter number, and cheaper to print than the timer's full double.
      const duration = Number.isFinite(e.durationMs) ? Math.round(e.durationMs * 1e3) / 1e3 : null;
      try {
        write(
          `{"time":"${time()}","level":"${lineLevel}","msg":"request","id":${JSON.stringify(e.id)},"method":${JSON.stringify(e.method)},` +
            `"path":${JSON.stringify(e.path)},"status":${e.status},"durationMs":${duration},"address":${JSON.stringify(e.address)}}`,
        );
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

/**
 * Log lines joined into few writes instead of one each: the access log's cost per request is
 * measured (bench/README.md, "The access log side by side"). The pending lines are written together by the
 * first line that comes LINE_DELAY_MS or more after the oldest of them, by the MAX_PENDING_LINES-th,
 * or, when no line comes to carry them, by a timer IDLE_FLUSH_MS after the oldest.
 * The lines carry each other because a timer per LINE_DELAY_MS (as before) wakes the process when
 * it would otherwise sleep until the next request, and each such wake-up measured as a large part
 * of the log's cost at a few hundred requests a second; the one timer here fires at most
 * 1000 / IDLE_FLUSH_MS times a second, and is not cleared when lines go out earlier (a cleared
 * timer still wakes the event loop at its time: Node re-arms its one libuv timer only when due).
 * `flush()` writes what is pending at once (before a planned exit). `clock` is for tests.
 */
export function createLineWriter(
  sink: (text: string) => void,
  clock: () => number = () => performance.now(),
): { readonly write: (line: string) => void; readonly flush: () => void } {
  let pending: string[] = [];
  let oldest = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    if (pending.length === 0) return;
    const text = `${pending.join('\n')}\n`;
    pending = [];
    sink(text);
  };
  const onTimer = (): void => {
    timer = undefined;
    flush();
  };
  return {
    write(line) {
      const n = pending.push(line);
      if (n === 1) {
        oldest = clock();
        if (timer === undefined) {
          timer = setTimeout(onTimer, IDLE_FLUSH_MS);
          // Lines still pending at exit are written by flush() (the CLI calls it before it exits).
          timer.unref();
        }
      } else if (n >= MAX_PENDING_LINES || clock() - oldest >= LINE_DELAY_MS) flush();
    },
    flush,
  };
}

/** How long a log line waits for later ones to share its write while requests keep coming. */
export const LINE_DELAY_MS = 25;
/** The longest a log line waits (when no later line comes): what a reader of the log can lag by. */
export const IDLE_FLUSH_MS = 100;
const MAX_PENDING_LINES = 256;
