import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A fresh temporary directory, removed after the test. */
export async function tempDir(t: TestContext | { after: (fn: () => unknown) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'httpskit-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
