// The CPU time of a PostgreSQL server's processes (Linux /proc): the postmaster, its backends,
// WAL writer, checkpointer and the rest, so the bench can put the database's own CPU per
// operation beside the service's. A backend that has exited is counted too: the postmaster reaps
// it, and the kernel adds its time to the postmaster's cutime/cstime.
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/** Fields of /proc/PID/stat after the command name (field 3 onward), split on spaces. */
function statFields(pid: number, file = `/proc/${pid}/stat`): string[] | undefined {
  try {
    const text = readFileSync(file, 'latin1');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** The postmaster listening on `port`: the `postgres` process whose arguments hold `-p PORT`. */
export function findPostmaster(port: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
      if (!/(^|\/)postgres$/.test(args[0] ?? '')) continue;
      const at = args.indexOf('-p');
      if (at >= 0 && args[at + 1] === String(port)) return Number(entry);
    } catch {
      // gone between readdir and read
    }
  }
  return undefined;
}

/**
 * User + system CPU, µs, of the postmaster `pid` and every process it started, living or reaped.
 * Fields (proc(5), counting from 3 after the name): ppid 4, utime 14, stime 15, cutime 16, cstime 17.
 */
export function postgresCpuMicros(pid: number): number {
  const own = statFields(pid);
  if (own === undefined) return Number.NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields === undefined || Number(fields[1]) !== pid) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks / clockTicks()) * 1e6;
}

/** CPU of a process's main thread (its event loop, for Node), µs, in clock ticks' resolution. */
export function mainThreadCpuMicros(pid: number): number {
  const fields = statFields(pid, `/proc/${pid}/task/${pid}/stat`);
  return fields === undefined ? Number.NaN : ((Number(fields[11]) + Number(fields[12])) / clockTicks()) * 1e6;
}

/** Scheduler times of a set of threads, ms: on a CPU, and runnable but waiting in a run queue. */
export interface ThreadTimes {
  readonly runMs: number;
  readonly waitMs: number;
}

/**
 * Per thread of `pid` at nice `nice` (the hashing threads run at HASH_THREAD_NICE), the kernel's
 * schedstat (Documentation/scheduler/sched-stats.rst: time on a CPU, time waiting on a run queue,
 * both ns). Keyed by thread id, so threads started or ended between two readings can be told apart.
 */
export function threadTimes(pid: number, nice: number): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    const fields = statFields(pid, `/proc/${pid}/task/${tid}/stat`);
    // Field 19 is the nice value (index 16 after the name).
    if (fields === undefined || Number(fields[16]) !== nice) continue;
    try {
      const [run = 0, wait = 0] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').trim().split(' ').map(Number);
      out.set(Number(tid), { runMs: run / 1e6, waitMs: wait / 1e6 });
    } catch {
      // ended between readdir and read
    }
  }
  return out;
}

/** What the threads of `after` spent since `before` (a thread absent before started since, from 0). */
export function threadTimesSince(before: ReadonlyMap<number, ThreadTimes>, after: ReadonlyMap<number, ThreadTimes>): ThreadTimes {
  let runMs = 0;
  let waitMs = 0;
  for (const [tid, t] of after) {
    const was = before.get(tid);
    runMs += t.runMs - (was?.runMs ?? 0);
    waitMs += t.waitMs - (was?.waitMs ?? 0);
  }
  return { runMs, waitMs };
}
