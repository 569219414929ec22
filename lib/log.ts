/**
 * One JSON object per line (CONTRACT C-6). Fields are chosen by the callers from a fixed set, never by
 * dumping headers or bodies, so a password or an Authorization value cannot reach a log (P-11).
 */
export interface RequestLog {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
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

export function createLogger(write: false | ((line: string) => void), level: LogLevel = 'info', now: () => Date = () => new Date()): Logger {
  const nothing = (): void => {};
  if (write === false) return { enabled: false, request: nothing, notice: nothing, info: nothing, warn: nothing, error: nothing };
  const emit = (lineLevel: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    try {
      write(JSON.stringify({ time: now().toISOString(), level: lineLevel, msg: message, ...fields }));
    } catch {
      // A broken log sink must not take a request down with it.
    }
  };
  const threshold = REQUEST_THRESHOLD[level];
  return {
    enabled: threshold !== Infinity,
    request: (entry) => {
      if (entry.status < threshold) return;
      emit(entry.status >= 500 ? 'error' : entry.status >= 400 ? 'warn' : 'info', 'request', { ...entry });
    },
    notice: (message, fields) => emit('info', message, fields),
    info: level === 'info' ? (message, fields) => emit('info', message, fields) : nothing,
    warn: level === 'info' || level === 'warn' ? (message, fields) => emit('warn', message, fields) : nothing,
    error: (message, error, fields) =>
      emit('error', message, { ...fields, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) }),
  };
}
