import { access, constants, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { TestContext } from 'node:test';

/** `$<override>` when set, else the first of `names` found executable on PATH; undefined when none. */
export async function findExecutable(override: string, names: readonly string[]): Promise<string | undefined> {
  const given = process.env[override];
  if (given !== undefined && given !== '') return given;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    for (const name of names) {
      const file = join(dir, name);
      if (await access(file, constants.X_OK).then(() => true, () => false)) return file;
    }
  }
  return undefined;
}

/**
 * A fresh profile directory for a browser, removed after the test by the same hook that first
 * stopped the browser (`stop`): removing it while the browser still writes there fails (ENOTEMPTY),
 * and a failed after-hook skips the hooks behind it, which would leave the browser running.
 */
export async function browserProfile(t: TestContext, stop: () => Promise<void>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-browser-'));
  t.after(async () => {
    try {
      await stop();
    } finally {
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    }
  });
  return dir;
}
