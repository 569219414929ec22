// Preloaded (`--import`) by scripts/test.ts into every test file's process. When node:test stops a
// file at its time-out it sends the file's process SIGTERM and prints only "test timed out", without
// the file's own output; this writes what the process still had open (sockets, servers, child
// processes, timers) to HTTPSKIT_TEST_HANG_DIR, and scripts/test.ts prints it after the run. A
// process stuck in synchronous code cannot answer: a time-out with no report points there.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env['HTTPSKIT_TEST_HANG_DIR'];
const file = process.argv[1] ?? '';
// Only a test file's own process: not node:test's runner, and not a server or CLI a test starts
// with this process's flags (their SIGTERM is theirs to handle).
if (dir !== undefined && dir !== '' && process.env['NODE_TEST_CONTEXT'] !== undefined && file.endsWith('.test.ts')) {
  process.once('SIGTERM', () => {
    const lines = [`${file}`, `stopped by SIGTERM after ${Math.round(process.uptime())} s; still open:`, ...openThings().map((thing) => `  ${thing}`)];
    try {
      writeFileSync(join(dir, `${process.pid}.txt`), `${lines.join('\n')}\n`);
    } finally {
      process.exit(143);
    }
  });
}

/** A line for each of the process's active handles, naming what a person needs to find it. */
function openThings(): string[] {
  const handles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
  const counts = new Map<string, number>();
  for (const line of handles.map(describe)) if (line !== undefined) counts.set(line, (counts.get(line) ?? 0) + 1);
  const described = [...counts].map(([line, count]) => (count === 1 ? line : `${line} ×${count}`));
  return [...described, `resources by kind: ${process.getActiveResourcesInfo().join(', ') || 'none'}`];
}

function describe(handle: unknown): string | undefined {
  if (typeof handle !== 'object' || handle === null) return String(handle);
  const kind = handle.constructor?.name ?? 'Object';
  const h = handle as Record<string, unknown>;
  // The file's report channel to the runner: always open, never the reason.
  if (handle === process.stdout || handle === process.stderr || handle === process.stdin) return undefined;
  if (typeof h['spawnfile'] === 'string') return `${kind} pid ${String(h['pid'])}: ${(h['spawnargs'] as string[] | undefined)?.join(' ') ?? h['spawnfile']}`;
  if (typeof (h['address'] as unknown) === 'function' && 'listening' in h) {
    return `${kind} listening on ${JSON.stringify((handle as { address: () => unknown }).address())}`;
  }
  if ('remoteAddress' in h || 'localPort' in h) {
    if (h['localPort'] === undefined && h['remoteAddress'] === undefined) return `${kind} (a pipe: a child's stdio or the runner's channel)`;
    return `${kind} ${String(h['localAddress'])}:${String(h['localPort'])} -> ${String(h['remoteAddress'])}:${String(h['remotePort'])}${h['destroyed'] === true ? ' (destroyed)' : ''}`;
  }
  if ('_idleTimeout' in h) {
    const callback = h['_onTimeout'] as { name?: string } | undefined;
    return `${kind} every ${String(h['_idleTimeout'])} ms${h['_repeat'] !== null && h['_repeat'] !== undefined ? ' (repeating)' : ''}: ${callback?.name || 'anonymous'}`;
  }
  return kind;
}
