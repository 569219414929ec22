// Instructions per request, counted by valgrind's callgrind in the server's main thread: the
// figure of `npm run bench -- --against REF --instructions`.
//
// CPU time per request moves by up to 2x between runs minutes apart on a shared machine (see
// README.md, "How it measures"), so a change of a few per cent cannot be seen in it. callgrind
// counts the instructions a process executes instead: the same code under the same load gives the
// same count to within a few tenths of a per cent, however busy the machine is. What it does not
// see: the kernel's work (system calls, the same here for every version: one read and one write
// per keep-alive request, counted with strace), cache misses, and how long an instruction takes.
// V8's background threads (concurrent marking and compiling) are counted apart: their work moves
// from run to run.
//
// The server runs under valgrind (some 50 times slower); a closed-loop client in this process keeps
// `connections` keep-alive connections busy (HTTP/1.1), or one HTTP/2 connection with 100 streams,
// warms the server up, then the counters are zeroed (`callgrind_control -z`), a fixed number of
// requests is sent on the same connections (no TLS handshake in the count) and the counters are
// dumped (`callgrind_control -d`).
//
// V8's optimizing compiles are left out of the figure and given beside it (`compiles`): a compile
// is a warm-up cost, paid once per function, but under valgrind functions that only timers call
// reach their budgets late, and one can still land among the counted requests after 50,000 of
// warm-up (up to 5k instructions a request, bench/HISTORY.md), moving one build's figure by up to 6%.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect as http2Connect, constants as h2 } from 'node:http2';
import { basename, dirname, join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';

/** What one measured run asks of a server. */
export interface CountedLoad {
  readonly url: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** HTTP/1.1 keep-alive connections, or h2: one HTTP/2 connection with `streams` in flight. */
  readonly mode: 'h1' | 'h2';
  readonly connections: number;
  readonly streams: number;
  readonly warmup: number;
  readonly requests: number;
}

export interface Count {
  /** Instructions of the server's main thread per 2xx response, V8's optimizing compiles left out. */
  readonly main: number;
  /** Instructions of those compiles per 2xx response (left out of `main`). */
  readonly compiles: number;
  /** Instructions of its other threads (V8's helpers, libuv's pool) per 2xx response. */
  readonly others: number;
  readonly ok: number;
  readonly failed: number;
}

/** Whether valgrind (with callgrind_control) is on this machine. */
export function haveCallgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    // callgrind_annotate prints its version and exits 255: only that it runs is asked.
    return spawnSync('callgrind_annotate', ['--version'], { stdio: 'ignore' }).error === undefined;
  } catch {
    return false;
  }
}

/**
 * A process under callgrind: `argv` (its executable first) run by valgrind, each thread's counts in
 * a file of its own beside `outFile` (`outFile.<part>-<thread>` for each dump).
 */
export class Callgrind {
  readonly child: ChildProcess;
  readonly #outFile: string;
  #parts = 0;

  constructor(argv: readonly string[], outFile: string, spawnOptions: Parameters<typeof spawn>[2]) {
    this.#outFile = outFile;
    const valgrind = ['valgrind', '--tool=callgrind', '--separate-threads=yes', `--callgrind-out-file=${outFile}`, ...argv];
    this.child = spawn(valgrind[0] as string, valgrind.slice(1), spawnOptions);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Counters to zero: what runs from here is what the next dump holds. */
  zero(): void {
    execFileSync('callgrind_control', ['-z', String(this.pid)], { stdio: 'ignore' });
  }

  /**
   * Writes the counters since the last zero; resolves with the main thread's total less its
   * optimizing compiles, those compiles, and the other threads' totals.
   */
  dump(): { main: number; compiles: number; others: number } {
    execFileSync('callgrind_control', ['-d', String(this.pid)], { stdio: 'ignore' });
    const part = ++this.#parts;
    const dir = dirname(this.#outFile);
    const prefix = `${basename(this.#outFile)}.${part}-`;
    const files = readdirSync(dir).filter((name) => name.startsWith(prefix));
    let main = Number.NaN;
    let compiles = 0;
    let others = 0;
    for (const name of files) {
      const total = totalOf(readFileSync(join(dir, name), 'latin1'));
      if (name !== `${prefix}01`) {
        others += total;
        continue;
      }
      const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', join(dir, name)], { encoding: 'latin1', maxBuffer: 256 * 1024 * 1024 });
      compiles = compilesIn(annotated);
      main = total - compiles;
    }
    if (Number.isNaN(main)) throw new Error(`callgrind wrote no main-thread file ${join(dir, `${prefix}01`)} (files: ${files.join(', ') || 'none'})`);
    return { main, compiles, others };
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}

/** The `summary:` (or `totals:`) line of a callgrind dump: instructions executed. */
export function totalOf(text: string): number {
  const line = /^(?:summary|totals):\s*(\d+)/m.exec(text);
  if (line === null) throw new Error('a callgrind dump without a summary line');
  return Number(line[1]);
}

/**
 * The instructions of V8's optimizing compiles in `callgrind_annotate --inclusive=yes` output: the
 * inclusive counts of the runtime functions that compile a function with TurboFan (on the main
 * thread: under --predictable every compile is), which call one another never.
 */
export function compilesIn(annotated: string): number {
  let sum = 0;
  for (const line of annotated.split('\n')) {
    const entry = COMPILE_ENTRY.exec(line);
    if (entry !== null) sum += Number((entry[1] as string).replaceAll(',', ''));
  }
  return sum;
}

const COMPILE_ENTRY = /^\s*([\d,]+) \([^)]*\)\s+\S*:v8::internal::Runtime_CompileOptimized(?:OSR(?:FromMaglev)?)?\(/;

/**
 * Runs `load` against `server` (warm-up, zero, measured requests, dump) and gives the count per
 * 2xx response. The client is a closed loop: every connection (or stream) sends its next request
 * when the last is answered, so the server is never idle and never holds more than the
 * connections' worth.
 */
export async function countRequests(server: Callgrind, load: CountedLoad): Promise<Count> {
  const client = load.mode === 'h1' ? await h1Client(load) : await h2Client(load);
  try {
    const warm = await client.run(load.warmup);
    if (warm.ok === 0) throw new Error(`no 2xx answer to ${load.path} during the warm-up`);
    server.zero();
    const measured = await client.run(load.requests);
    const { main, compiles, others } = server.dump();
    return { main: main / measured.ok, compiles: compiles / measured.ok, others: others / measured.ok, ok: measured.ok, failed: measured.failed };
  } finally {
    client.close();
  }
}

interface Client {
  run(requests: number): Promise<{ ok: number; failed: number }>;
  close(): void;
}

/** HTTP/1.1 on raw TLS sockets: fixed request bytes, responses framed by Content-Length. */
async function h1Client(load: CountedLoad): Promise<Client> {
  const url = new URL(load.url);
  const extra = Object.entries(load.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const request = `GET ${load.path} HTTP/1.1\r\nHost: ${url.host}\r\n${extra}\r\n`;
  const sockets = await Promise.all(
    Array.from(
      { length: load.connections },
      () =>
        new Promise<TLSSocket>((resolve, reject) => {
          const socket = connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => resolve(socket));
          socket.once('error', reject);
        }),
    ),
  );
  let onResponse: (ok: boolean, socket: TLSSocket) => void = () => {};
  let onLost: () => void = () => {};
  let onUnframed: (head: string) => void = () => {};
  for (const socket of sockets) {
    socket.setEncoding('latin1');
    let buffer = '';
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(buffer.slice(0, end));
        if (length === null) {
          // Chunked or close-delimited: not what a server measured here sends (this client reads no other framing).
          onUnframed(buffer.slice(0, end));
          return;
        }
        const size = end + 4 + Number(length[1]);
        if (buffer.length < size) return;
        const ok = buffer.startsWith('HTTP/1.1 2');
        buffer = buffer.slice(size);
        onResponse(ok, socket);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => onLost());
  }
  return {
    run(requests) {
      return new Promise((resolve, reject) => {
        const tally = new Tally(requests, resolve);
        onLost = () => reject(new Error(`a connection to ${load.url} closed during the run (${tally.ok} answered)`));
        onUnframed = (head) => reject(new Error(`a response without Content-Length from ${load.url}${load.path}:\n${head}`));
        onResponse = (good, socket) => {
          if (tally.answered(good)) socket.write(request);
        };
        for (const socket of sockets) if (tally.take()) socket.write(request);
      });
    },
    close() {
      onLost = () => {};
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** The answers of a closed-loop run: each answer lets the next request go, until `requests` are answered. */
class Tally {
  ok = 0;
  failed = 0;
  #sent = 0;
  constructor(
    readonly requests: number,
    readonly done: (result: { ok: number; failed: number }) => void,
  ) {}

  /** Whether one more request may be sent (it is counted as sent). */
  take(): boolean {
    if (this.#sent === this.requests) return false;
    this.#sent++;
    return true;
  }

  /** Counts an answer; whether the next request may be sent. */
  answered(good: boolean): boolean {
    if (good) this.ok++;
    else this.failed++;
    if (this.ok + this.failed === this.requests) this.done({ ok: this.ok, failed: this.failed });
    return this.take();
  }
}

/** One HTTP/2 connection, `streams` requests in flight. */
async function h2Client(load: CountedLoad): Promise<Client> {
  const session = http2Connect(load.url, { rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  const headers = { [h2.HTTP2_HEADER_PATH]: load.path, ...load.headers };
  let onLost: () => void = () => {};
  session.on('close', () => onLost());
  session.on('error', () => {});
  return {
    run(requests) {
      return new Promise((resolve, reject) => {
        const tally = new Tally(requests, resolve);
        const one = (): void => {
          const stream = session.request(headers, { endStream: true });
          let status = 0;
          stream.on('response', (h) => (status = Number(h[h2.HTTP2_HEADER_STATUS])));
          stream.on('data', () => {});
          stream.on('error', () => {});
          stream.on('close', () => {
            if (tally.answered(status >= 200 && status < 300)) one();
          });
        };
        onLost = () => reject(new Error(`the HTTP/2 connection to ${load.url} closed during the run (${tally.ok} answered)`));
        for (let i = 0; i < load.streams && tally.take(); i++) one();
      });
    },
    close() {
      onLost = () => {};
      session.destroy();
    },
  };
}
