// The IPC side of a server under test: the parent asks for the process's own CPU time and peak RSS
// (process.cpuUsage covers every thread of the process: main, libuv pool, GC helpers) and for
// event-loop delay figures. Messages are rare (a few per round), so they cost nothing measurable.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

const ELD_RESOLUTION_MS = 10;

/** What a server child sends when it is listening. */
export interface ReadyMessage {
  readonly kind: 'ready';
  readonly url: string;
  readonly httpUrl: string;
}

/** Requests the parent may send; each gets one reply with the same `id`. */
export type ControlRequest =
  | { readonly id: number; readonly kind: 'usage' }
  | { readonly id: number; readonly kind: 'eld-start' }
  | { readonly id: number; readonly kind: 'eld-stop' }
  | { readonly id: number; readonly kind: 'call'; readonly name: string; readonly args: readonly unknown[] };

export interface Usage {
  /** User + system CPU of the whole process, µs. */
  readonly cpuMicros: number;
  /** The system (kernel) part of it, µs. */
  readonly systemMicros: number;
  /** Peak resident set size so far (getrusage ru_maxrss), KiB. */
  readonly maxRssKiB: number;
  readonly rssKiB: number;
}

export interface EventLoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** Extra operations a server exposes to the parent (e.g. adding users). */
export type Calls = Readonly<Record<string, (...args: never[]) => Promise<unknown>>>;

/** Installs the control channel and reports readiness. Exits when the parent goes away. */
export function serveControl(ready: ReadyMessage, calls: Calls = {}): void {
  const send = process.send?.bind(process);
  if (send === undefined) throw new Error('a bench server must be started with an IPC channel');
  let eld: IntervalHistogram | undefined;
  process.on('message', (raw: ControlRequest) => {
    const reply = (result: unknown): void => void send({ id: raw.id, result });
    switch (raw.kind) {
      case 'usage': {
        const cpu = process.cpuUsage();
        reply({ cpuMicros: cpu.user + cpu.system, systemMicros: cpu.system, maxRssKiB: process.resourceUsage().maxRSS, rssKiB: Math.round(process.memoryUsage.rss() / 1024) } satisfies Usage);
        return;
      }
      case 'eld-start':
        eld?.disable();
        eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
        eld.enable();
        reply(null);
        return;
      case 'eld-stop': {
        const h = eld;
        h?.disable();
        eld = undefined;
        // The histogram holds whole intervals between timer ticks: the delay is what exceeds the resolution.
        const delay = (ns: number): number => Math.max(0, ns / 1e6 - ELD_RESOLUTION_MS);
        reply(h === undefined ? null : ({ p50Ms: delay(h.percentile(50)), p99Ms: delay(h.percentile(99)), maxMs: delay(h.max) } satisfies EventLoopDelay));
        return;
      }
      case 'call': {
        const fn = calls[raw.name] as ((...args: readonly unknown[]) => Promise<unknown>) | undefined;
        if (fn === undefined) {
          void send({ id: raw.id, error: `no call ${raw.name}` });
          return;
        }
        fn(...raw.args).then(reply, (error: unknown) => void send({ id: raw.id, error: String(error) }));
        return;
      }
    }
  });
  process.on('disconnect', () => process.exit(0));
  send(ready);
}
