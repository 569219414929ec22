// Child processes of the benchmark: servers under test and the load generator, each its own
// process running compiled JavaScript (bench/results/build) with no loader, talked to over IPC.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { ReadyMessage, Usage, EventLoopDelay } from './servers/control.js';

export const BUILD_DIR = join(import.meta.dirname, 'results', 'build');

/** A child that answers `{ id, ... }` requests with `{ id, result | error }`. */
export class Child {
  readonly #process: ChildProcess;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #next = 1;

  constructor(child: ChildProcess) {
    this.#process = child;
    child.on('message', (message: { id?: number; result?: unknown; error?: string }) => {
      if (message.id === undefined) return;
      const waiter = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.result);
    });
    child.on('exit', (code, signal) => {
      for (const waiter of this.#pending.values()) waiter.reject(new Error(`child exited (${code ?? signal})`));
      this.#pending.clear();
    });
  }

  get pid(): number {
    return this.#process.pid ?? -1;
  }

  request<T>(message: Readonly<Record<string, unknown>>): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#process.send({ ...message, id });
    });
  }

  async stop(): Promise<void> {
    if (this.#process.exitCode !== null || this.#process.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#process.once('exit', () => resolve()));
    // Closing the IPC channel makes a bench child exit normally (so --cpu-prof gets written);
    // a signal follows if it does not.
    if (this.#process.connected) this.#process.disconnect();
    else this.#process.kill('SIGTERM');
    const timer = setTimeout(() => this.#process.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** A server under test, listening on loopback. */
export class ServerChild extends Child {
  constructor(
    child: ChildProcess,
    readonly name: string,
    readonly url: string,
    readonly httpUrl: string,
  ) {
    super(child);
  }

  usage(): Promise<Usage> {
    return this.request({ kind: 'usage' });
  }

  eldStart(): Promise<void> {
    return this.request({ kind: 'eld-start' });
  }

  eldStop(): Promise<EventLoopDelay> {
    return this.request({ kind: 'eld-stop' });
  }

  call<T>(name: string, ...args: unknown[]): Promise<T> {
    return this.request({ kind: 'call', name, args });
  }
}

function start(script: string, args: readonly string[], stdoutToDevNull: boolean, execArgv: readonly string[] = []): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  // stdout goes to /dev/null (a request log still costs its JSON.stringify and write(2)); stderr is ours.
  const stdout = stdoutToDevNull ? openSync('/dev/null', 'w') : 'inherit';
  const child = fork(join(BUILD_DIR, script), [...args], { stdio: ['ignore', stdout, 'inherit', 'ipc'], execArgv: [...execArgv] });
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`${script} exited with ${String(code)} before it was ready`));
    child.once('exit', onExit);
    child.once('message', (message: Record<string, unknown>) => {
      child.off('exit', onExit);
      resolve({ child, ready: message });
    });
  });
}

/**
 * Pins a process and all its threads (and threads it starts later) to one CPU with `taskset`
 * (util-linux), so a server and the load generator never share a core or migrate between cores.
 * Returns false where that is not possible (no taskset, one CPU): the run goes on unpinned.
 */
export function pinToCpu(pid: number, cpu: number): boolean {
  if (cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Pins each of `threads` (thread ids) to a CPU of its own in turn: the first to CPU 0, the second to
 * CPU 1, and so on round the machine's CPUs. Two processes whose threads are pinned alike then meet
 * on every CPU with the same number of threads; with `anywhere`, each may run on any CPU again.
 * False where that is not possible.
 */
export function pinThreads(threads: readonly number[], anywhere = false): boolean {
  const n = cpus().length;
  if (n < 2) return false;
  try {
    // `anywhere`: back to every CPU (undoes an earlier pinning).
    for (const [i, tid] of threads.entries()) execFileSync('taskset', ['-p', '-c', anywhere ? `0-${n - 1}` : String(i % n), String(tid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a server script from bench/servers with its ServerArgs; resolves when it listens. */
export async function startServer(name: string, script: string, args: Readonly<Record<string, unknown>>, execArgv: readonly string[] = []): Promise<ServerChild> {
  const { child, ready } = await start(join('bench', 'servers', script), [JSON.stringify(args)], true, execArgv);
  const message = ready as unknown as ReadyMessage;
  return new ServerChild(child, name, message.url, message.httpUrl);
}

/** Starts the load generator. */
export async function startLoad(): Promise<Child> {
  const { child } = await start(join('bench', 'load.js'), [], false);
  return new Child(child);
}

/**
 * Runs a compiled bench script with stdout on /dev/null (a script that measures writing to it) and
 * resolves with the first message it sends over IPC, once it has exited.
 */
export async function runForMessage<T>(script: string, args: readonly string[], execArgv: readonly string[] = []): Promise<T> {
  const { child, ready } = await start(join('bench', script), args, true, execArgv);
  if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve));
  return ready as T;
}

/** Runs a compiled bench script to completion and parses the JSON it prints on stdout. */
export function runJson<T>(script: string, args: readonly string[], execArgv: readonly string[] = []): Promise<T> {
  const child = fork(join(BUILD_DIR, 'bench', script), [...args, '--json'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], execArgv: [...execArgv] });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${script} exited with ${String(code)}`));
      else {
        try {
          resolve(JSON.parse(out) as T);
        } catch (error) {
          reject(error as Error);
        }
      }
    });
  });
}
