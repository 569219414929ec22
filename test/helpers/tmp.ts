import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/**
 * A fresh temporary directory, removed after the test. node:test runs a test's `after` hooks in
 * the order they were added and stops at the first that throws, so this one never throws: a
 * failed removal (a process still writing there) must not keep a later hook from closing a server,
 * which would leave the test file's process running for good.
 */
export async function tempDir(t: TestContext | { after: (fn: () => unknown) => void }): Promise<string> {
  const dir = await makeTempDir();
  t.after(() => removeTempDir(dir));
  return dir;
}

export function makeTempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'httpskit-test-'));
}

/** Removes `dir`, retrying while something still writes there; reports and returns on failure. */
export async function removeTempDir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  } catch (error) {
    process.stderr.write(`test: could not remove ${dir}: ${(error as Error).message}\n`);
  }
}
