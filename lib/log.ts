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

export interface Logger {
  /** False when log lines go nowhere: callers skip the work of building them. */
  readonly enabled: boolean;
  request(entry: RequestLog): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, error?: unknown, fields?: Readonly<Record<string, unknown>>): void;
}

export function createLogger(write: false | ((line: string) => void), now: () => Date = () => new Date()): Logger {
  if (write === false) return { enabled: false, request() {}, info() {}, warn() {}, error() {} };
  const emit = (level: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    try {
      write(JSON.stringify({ time: now().toISOString(), level, msg: message, ...fields }));
    } catch {
      // A broken log sink must not take a request down with it.
    }
  };
  return {
    enabled: true,
    request: (entry) => emit('info', 'request', { ...entry }),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, error, fields) =>
      emit('error', message, { ...fields, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) }),
  };
}
