// The service in a child process (test/security/fixtures/listener-server.ts), so a test can watch
// it from outside: its open descriptors in /proc, its limits (`ulimit -n`), its exit.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ServiceOptions } from '../../../lib/config.js';
import { testCertificate } from '../../helpers/service.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SERVER = fileURLToPath(new URL('../fixtures/listener-server.ts', import.meta.url));

/** Why descriptor-counting tests cannot run here, or false when they can. */
export const noProcFs: string | false = existsSync('/proc/self/fd') ? false : 'no /proc/<pid>/fd on this system: descriptor counts cannot be read';

export interface ChildServer {
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  /** The test certificate the child serves (trust it as the CA). */
  readonly ca: string;
  /** How many descriptors the child has open right now. */
  descriptors(): number;
  /** How many of those are sockets (listening ones included): files the store opens and closes are not counted. */
  sockets(): number;
  /** The child's resident set size right now, in MiB (/proc/<pid>/status). */
  rssMiB(): number;
  /** Asks the child for a full garbage collection (started with `exposeGc`); resolves shortly after. */
  collectGarbage(): Promise<void>;
  /** Everything the child wrote to stderr so far. */
  stderr(): string;
  /** True until the child has exited. */
  alive(): boolean;
}

/**
 * Starts the service in a child process with `options` (JSON-compatible ones only) on a store in
 * `dir`; `fdLimit` runs it under `ulimit -n`. `bigBytes` adds a resource /api/big of about that
 * many bytes; `exposeGc` lets collectGarbage() tell memory still held from garbage an idle
 * process has not collected yet (fixtures/listener-server.ts). Killed after the test.
 */
export async function startChildServer(
  t: { after: (fn: () => unknown) => void },
  dir: string,
  options: ServiceOptions & { readonly bigBytes?: number } = {},
  { fdLimit, exposeGc = false }: { fdLimit?: number; exposeGc?: boolean } = {},
): Promise<ChildServer> {
  const { cert, key } = testCertificate();
  const args = [...(exposeGc ? ['--expose-gc'] : []), '--import', 'tsx', SERVER, JSON.stringify({ store: join(dir, 'users.json'), cert, key, ...options })];
  const child =
    fdLimit === undefined
      ? spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('sh', ['-c', `ulimit -n ${fdLimit} && exec "$0" "$@"`, process.execPath, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  t.after(async () => {
    if (!exited) child.kill('SIGKILL');
    await exit;
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    void exit.then(() => reject(new Error(`the server exited before listening:\n${stderr}`)));
  });
  const pid = child.pid as number;
  return {
    pid,
    url,
    port: Number(new URL(url).port),
    ca: cert,
    descriptors: () => readdirSync(`/proc/${pid}/fd`).length,
    sockets: () =>
      readdirSync(`/proc/${pid}/fd`).filter((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
        } catch {
          return false; // closed while being listed
        }
      }).length,
    rssMiB: () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024,
    collectGarbage: async () => {
      child.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 500));
    },
    stderr: () => stderr,
    alive: () => !exited,
  };
}
