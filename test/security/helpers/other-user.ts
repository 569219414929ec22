// Acting as another local user (`nobody`) to plant files, as an attacker sharing the machine
// would. Needs root (setpriv drops to nobody); tests that use it skip with a message otherwise.
import { spawn, spawnSync } from 'node:child_process';

export const NOBODY_UID = 65_534;
export const NOGROUP_GID = 65_534;

/** Why tests that act as another user cannot run here, or undefined when they can. */
export function otherUserSkip(): string | undefined {
  if (process.platform === 'win32') return 'POSIX owners and modes only';
  if (process.geteuid?.() !== 0) return 'needs root to create files as another user (setpriv --reuid=nobody)';
  const probe = spawnSync('setpriv', ['--version'], { stdio: 'ignore' });
  if (probe.error !== undefined || probe.status !== 0) return 'setpriv (util-linux) is not installed';
  return undefined;
}

/** Writes `bytes` to `path` as nobody:nogroup with umask 0, then sets `mode` (default 0666). */
export function writeAsNobody(path: string, bytes: string | Buffer, mode = 0o666): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'setpriv',
      ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', 'sh', '-c', 'umask 0 && cat > "$0" && chmod "$1" "$0"', path, mode.toString(8)],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`writing ${path} as nobody failed (${code}): ${stderr}`))));
    child.stdin.end(bytes);
  });
}
