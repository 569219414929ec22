// Whether a process of this host still exists: kill(pid, 0) sends nothing and only checks.
import { readFileSync } from 'node:fs';
import { process } from '../process.js';

export function processExists(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * When process `pid` of this host started, as the kernel counts it (Linux: /proc/<pid>/stat's
 * starttime, in clock ticks since boot), or undefined where that cannot be read (no /proc, no such
 * process). With the pid it names one process: a pid used again later (a container's pid 1 after a
 * restart) has another start.
 */
export function processStart(pid: number): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces and parentheses): state is field 3,
    // starttime field 22.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start !== undefined && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the process recorded as `pid`, started at `start` (processStart's, when it could be
 * read), still runs: its pid exists and, where both starts are known, it is the same process.
 */
export function sameProcessRuns(pid: number, start: string | undefined): boolean {
  if (!processExists(pid)) return false;
  if (start === undefined) return true;
  const now = processStart(pid);
  return now === undefined || now === start;
}
