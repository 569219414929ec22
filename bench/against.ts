// `npm run bench -- --against REF`: the working tree against the git ref REF (a commit, a tag,
// `main`), side by side in the same alternating rounds, as HEAD ÷ REF per scenario.
//
//   npm run bench -- --against 7e3f665 [--only "h1 json,h2"] [--rounds N] [--seconds S] [--slices N]
//                    [--connections N] [--rebuild] [--unpinned] [--cpu-prof]
//   npm run bench -- --against REF --instructions [--only …] [--requests N] [--warmup N] [--threaded]
//                    [--peers ceiling+headers,ceiling+modules,fastify] (callgrind: instructions per request)
//
// REF is built in a temporary git worktree (its own `npm ci`, its own `npm run build`), and its
// dist/ kept under bench/results/against/<commit>/ (a commit's build never changes; --rebuild
// builds it again); the worktree is removed after. Both versions are driven the same way, so old
// refs need no bench code of their own: log on is the CLI (`dist/bin/httpskit.js serve`, its
// request log on stdout, pointed at /dev/null), log off is the library's createService({ log: false })
// (servers/against-lib.ts; versions before --log-level have no CLI switch for it). Each server's CPU
// time is read from /proc/<pid>/stat, so nothing runs inside the servers but the servers.
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { parseArgs } from 'node:util';
import { BUILD_DIR, pinToCpu, startLoad } from './children.js';
import type { LoadStep } from './load.js';
import { CHROME_ACCEPT, checkBodies, fetchBody, H2_STREAMS, runRound, summarizeScenario, type Measured, type RoundFigure, type Scenario } from './http.js';
import { JSON_BODY, XML_BODY } from './servers/bodies.js';
import { median, range, sleep } from './stats.js';
import { Callgrind, countRequests, haveCallgrind, type Count } from './instructions.js';

const ROOT = join(import.meta.dirname, '..');
const CACHE = join(import.meta.dirname, 'results', 'against');
/** The CPU-per-request target of issue 23: HEAD at most 0.95 × the ref it is measured against. */
const TARGET = 0.95;
/** A low scrypt cost for the start-up dummy hash (U-3): 1 MiB to free instead of 128, so the rounds can start sooner. */
const SCRYPT_LN = 10;
const SETTLE_MS = 2_000;
/**
 * The file store's paths (issue 20: no figure of the file store gets worse): a user and an admin
 * written into each server's store before the round, their hashes at SCRYPT_LN like the servers'
 * own cost (so no rehash on verification), the same for both versions.
 */
const USER = 'alice';
const ADMIN = 'root';
const PASSWORDS = ['cobalt-initial-passphrase-12', 'amber-second-passphrase-34'] as const;
/** Set by the admin before a password-change run and changed at once to the first (a new password must differ from the current one). */
const STEPPING_STONE = 'violet-stepping-passphrase-78';
const ADMIN_PASSWORD = 'granite-admin-passphrase-56';
/** Below the hashing gate's queue, so a GET waits for scrypt rather than meeting a 503. */
const USER_GET_CONNECTIONS = 8;
const basic = (name: string, password: string): string => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
const changeTo = (by: string, password: string, to: string): LoadStep => ({
  method: 'PUT',
  path: `/user/${USER}/password`,
  headers: { authorization: basic(by, password), 'content-type': 'text/plain; charset=utf-8' },
  body: to,
});

export class AgainstUsageError extends Error {}

export interface AgainstOptions {
  readonly ref: string;
  /** Scenario filters: a scenario runs when every word of one filter is in its name. */
  readonly only: readonly string[];
  readonly rounds: number;
  readonly seconds: number;
  /** Runs per server and round, in alternating order (more: the machine's drift falls more evenly). */
  readonly slices: number;
  readonly connections: number;
  readonly rebuild: boolean;
  readonly pin: boolean;
  readonly cpuProf: boolean;
  /** Count instructions per request with callgrind instead of timing rounds (instructions.ts). */
  readonly instructions: boolean;
  /** Requests counted per server and scenario, and sent before the count (--instructions). */
  readonly requests: number;
  readonly warmup: number;
  /**
   * --instructions: V8 as it runs by default, its collector and compiler on threads of their own
   * (--threaded), instead of one thread with a fixed collection schedule (PREDICTABLE).
   */
  readonly threaded: boolean;
  /** --instructions: the named peers counted beside HEAD and REF (HTTP/1.1 only), by family (PEERS). */
  readonly peers: readonly PeerFamily[];
}

/**
 * Node's flags for a counted server unless --threaded: V8 on one thread, its collections on a fixed
 * schedule. Its background threads, the collector's timing heuristics (an allocation rate in bytes
 * a millisecond, under a valgrind 50 times slower) and when a compile job lands made the same build
 * count 100.5k to 102.0k a request from run to run; so, 107.53k and 107.61k. The collector's
 * work is then in the main thread's count, as it is in the CPU time; the optimizing compiler's,
 * also on the main thread, is counted apart (instructions.ts).
 */
export const PREDICTABLE = ['--predictable', '--predictable-gc-schedule'] as const;

const positive = (flag: string, text: string | undefined, fallback: number, whole: boolean): number => {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n))) throw new AgainstUsageError(`--${flag} must be a ${whole ? 'whole ' : ''}number above 0, got "${text}"`);
  return n;
};

/** The options of an --against run; throws AgainstUsageError for anything it cannot take. */
export function parseAgainstArgs(argv: readonly string[]): AgainstOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        against: { type: 'string' },
        only: { type: 'string' },
        rounds: { type: 'string' },
        seconds: { type: 'string' },
        slices: { type: 'string' },
        connections: { type: 'string' },
        rebuild: { type: 'boolean', default: false },
        unpinned: { type: 'boolean', default: false },
        'cpu-prof': { type: 'boolean', default: false },
        instructions: { type: 'boolean', default: false },
        requests: { type: 'string' },
        warmup: { type: 'string' },
        threaded: { type: 'boolean', default: false },
        peers: { type: 'string' },
      },
    }));
  } catch (error) {
    throw new AgainstUsageError((error as Error).message);
  }
  const ref = values.against ?? '';
  if (ref.trim() === '') throw new AgainstUsageError('--against needs a git ref (a commit, a tag, a branch such as main)');
  const only = (values.only ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const options: AgainstOptions = {
    ref,
    only,
    rounds: positive('rounds', values.rounds, 4, true),
    seconds: positive('seconds', values.seconds, 2, false),
    slices: positive('slices', values.slices, 4, true),
    connections: positive('connections', values.connections, 50, true),
    rebuild: values.rebuild === true,
    pin: values.unpinned !== true,
    cpuProf: values['cpu-prof'] === true,
    instructions: values.instructions === true,
    requests: positive('requests', values.requests, 10_000, true),
    warmup: positive('warmup', values.warmup, 8_000, true),
    threaded: values.threaded === true,
    peers: peerFamilies(values.peers),
  };
  // A filter that matches nothing is said as such first (every() of no scenario would read as "only users").
  if (againstScenarios(options).length === 0) throw new AgainstUsageError(`--only "${values.only ?? ''}" matches no scenario; known: ${againstScenarios({ only: ['h', 'users'] /* every name: h1 …, h2 …, h1 users … */ }).map((s) => s.name).join('; ')}`);
  if (options.instructions && againstScenarios(options).every(isUsersScenario)) throw new AgainstUsageError("--instructions does not count the file store's scenarios (users): their password cycles need the load generator; choose others with --only");
  if (options.instructions && options.cpuProf) throw new AgainstUsageError('--instructions and --cpu-prof cannot be used together (callgrind runs the servers)');
  if (options.instructions && !haveCallgrind()) throw new AgainstUsageError('--instructions needs valgrind (Debian: apt-get install valgrind)');
  return options;
}

/** The commit REF names, or AgainstUsageError (never a ref read as an option: --end-of-options). */
export function resolveRef(ref: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    throw new AgainstUsageError(`"${ref}" is not a commit, tag or branch of this repository (git rev-parse found none)`);
  }
}

type Side = 'HEAD' | 'REF';
type LogMode = 'log-on' | 'log-off';
const serverName = (side: Side, log: LogMode): string => `${side} ${log}`;
/** A scenario's log mode: the last word of its name. */
const logModeOfName = (name: string): LogMode => (name.endsWith('log-on') ? 'log-on' : 'log-off');
const logModeOf = (scenario: Scenario): LogMode => logModeOfName(scenario.name);
/** The file store's scenarios: their bodies are compared HEAD against REF, not against a fixed text. */
const isUsersScenario = (scenario: Scenario): boolean => scenario.name.includes(' users ');

/**
 * h1 (HTTP/1.1 keep-alive, autocannon) and h2 (one connection, 100 streams, h2load) × JSON, XML × log on, off;
 * then, only when `--only` names them (`--only users`), the file store's paths over h1: `GET /user/alice.json` with Basic, and
 * `PUT /user/alice/password` on one connection, alternating two passwords (each run starts from
 * the first: an admin sets it before the run, two requests outside the count on both sides).
 */
export function againstScenarios(options: Pick<AgainstOptions, 'only'>): Scenario[] {
  const list: Scenario[] = [];
  for (const log of ['log-on', 'log-off'] as const) {
    for (const [proto, mode] of [
      ['h1', 'keepalive'],
      ['h2', 'h2'],
    ] as const) {
      for (const [kind, path, headers, body] of [
        ['json', '/api/something.json?param1=hello', {}, JSON_BODY],
        ['xml', '/api/something?param1=hello', { accept: CHROME_ACCEPT }, XML_BODY],
      ] as const) {
        const ours = serverName('HEAD', log);
        const peer = serverName('REF', log);
        list.push({ name: `${proto} ${kind} ${log}`, proto: 'https', path, headers, expectedBody: body, mode, servers: [ours, peer], comparisons: [[ours, peer, TARGET]] });
      }
    }
  }
  for (const log of ['log-on', 'log-off'] as const) {
    const ours = serverName('HEAD', log);
    const peer = serverName('REF', log);
    const common = { proto: 'https', expectedBody: '', mode: 'keepalive', servers: [ours, peer], comparisons: [[ours, peer, TARGET]] } as const;
    const [first, second] = PASSWORDS;
    list.push({ ...common, name: `h1 users get ${log}`, path: `/user/${USER}.json`, headers: { authorization: basic(USER, first) }, connections: USER_GET_CONNECTIONS });
    list.push({
      ...common,
      name: `h1 users put ${log}`,
      path: `/user/${USER}/password`,
      headers: {},
      connections: 1,
      requests: [changeTo(USER, first, second), changeTo(USER, second, first)],
      prepare: [changeTo(ADMIN, ADMIN_PASSWORD, STEPPING_STONE), changeTo(ADMIN, ADMIN_PASSWORD, first)],
    });
  }
  // The file store's scenarios only when --only names them ("users"; "h1" alone does not): a ref
  // from before the user resource (or an admin's password change) cannot run them, and the default
  // run keeps its length.
  return list.filter((s) =>
    options.only.length === 0
      ? !isUsersScenario(s)
      : options.only.some((filter) => {
          const words = filter.split(/\s+/);
          return (!isUsersScenario(s) || words.includes('users')) && words.every((word) => s.name.includes(word));
        }),
  );
}

/**
 * The file store's scenarios, checked once before the first round: GET answers the same bytes on
 * every server (the first one's are the reference); a password change's cycle has no body to
 * compare, its non-2xx answers are counted as failures in the table.
 */
async function sameBodies(scenario: Scenario, servers: ReadonlyMap<string, Measured>): Promise<Map<string, boolean>> {
  const matches = new Map<string, boolean>();
  let reference: string | undefined;
  for (const name of scenario.servers) {
    const server = servers.get(name);
    if (server === undefined) continue;
    if (scenario.requests !== undefined) {
      matches.set(name, true);
      continue;
    }
    const body = await fetchBody(`${server.url}${scenario.path}`, scenario.headers);
    reference ??= body;
    matches.set(name, body === reference && body.includes(`"${USER}"`));
  }
  return matches;
}

/** A version's build: its CLI and its library entry point. */
interface Build {
  readonly bin: string;
  readonly index: string;
}

function run(command: string, args: readonly string[], cwd: string, what: string): void {
  try {
    execFileSync(command, [...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 2 ** 20 });
  } catch (error) {
    const e = error as { stdout?: Buffer; stderr?: Buffer };
    const tail = `${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}`.slice(-2_000);
    throw new Error(`${what} failed (${command} ${args.join(' ')} in ${cwd}):\n${tail}`);
  }
}

/**
 * The ref's build, from the cache or made now: `git worktree add --detach` under a temporary
 * directory, `npm ci` (its own lock file), `npm run build` (its own script), dist/ copied out,
 * the worktree removed whatever happened.
 */
function buildRef(commit: string, rebuild: boolean, progress: (line: string) => void): Build {
  const dir = join(CACHE, commit);
  const build: Build = { bin: join(dir, 'dist', 'bin', 'httpskit.js'), index: join(dir, 'dist', 'lib', 'index.js') };
  if (!rebuild && existsSync(join(dir, 'complete'))) {
    progress(`REF ${commit.slice(0, 10)}: built before (${dir}; --rebuild to build again)`);
    return build;
  }
  const temp = mkdtempSync(join(tmpdir(), 'httpskit-against-'));
  const tree = join(temp, 'tree');
  try {
    progress(`REF ${commit.slice(0, 10)}: git worktree add, npm ci, npm run build in ${tree} …`);
    run('git', ['worktree', 'add', '--detach', tree, commit], ROOT, 'git worktree add');
    run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], tree, 'npm ci');
    run('npm', ['run', 'build'], tree, 'npm run build');
    if (!existsSync(join(tree, 'dist', 'bin', 'httpskit.js'))) throw new Error(`the build of ${commit} has no dist/bin/httpskit.js`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    cpSync(join(tree, 'dist'), join(dir, 'dist'), { recursive: true });
    // The CLI reads its version from the package.json above dist/.
    cpSync(join(tree, 'package.json'), join(dir, 'package.json'));
    writeFileSync(join(dir, 'complete'), `${new Date().toISOString()}\n`);
    return build;
  } finally {
    try {
      execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT, stdio: 'ignore' });
    } catch {
      // not added, or already gone
    }
    rmSync(temp, { recursive: true, force: true });
    try {
      execFileSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' });
    } catch {
      // nothing to prune
    }
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User and system CPU of a whole process (every thread, the ended ones too), µs, from /proc/<pid>/stat. */
export function procCpu(pid: number): { cpuMicros: number; systemMicros: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  // Fields after the command name (which may hold spaces), from field 3 on: utime is the 14th field, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const user = Number(fields[11]);
  const system = Number(fields[12]);
  const micros = (ticks: number): number => (ticks * 1e6) / CLOCK_TICKS;
  return { cpuMicros: micros(user + system), systemMicros: micros(system) };
}

/** A server process of either version, measured from outside. */
class ProcServer implements Measured {
  readonly httpUrl = '';
  #stderr = '';
  constructor(
    readonly name: string,
    readonly url: string,
    readonly child: ChildProcess,
    readonly callgrind?: Callgrind,
  ) {
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr = (this.#stderr + chunk).slice(-4_000)));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get stderr(): string {
    return this.#stderr;
  }

  usage(): Promise<{ cpuMicros: number; systemMicros: number }> {
    return Promise.resolve(procCpu(this.pid));
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

/** A port free on loopback now (the servers are told it: stdout, where the CLI states it, is /dev/null). */
async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The protocol a TLS connection to the port settles on when offered h2 first (ALPN). */
function alpnOf(port: number): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      const protocol = socket.alpnProtocol ?? false;
      socket.destroy();
      resolve(protocol);
    });
    socket.once('error', reject);
  });
}

async function waitUntilListening(server: ProcServer, port: number): Promise<void> {
  // Under callgrind a start takes some 50 times as long.
  const deadline = Date.now() + (server.callgrind === undefined ? 60_000 : 300_000);
  for (;;) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) throw new Error(`${server.name} exited before listening:\n${server.stderr}`);
    try {
      await alpnOf(port);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${server.name} is not listening on ${port} after ${server.callgrind === undefined ? 60 : 300} s:\n${server.stderr}`);
      await sleep(100);
    }
  }
}

interface StartArgs {
  readonly certFile: string;
  readonly keyFile: string;
  readonly work: string;
  readonly round: number;
  readonly profileDir: string | undefined;
  /** servers/against-lib.js, from the snapshot of the working tree's build. */
  readonly libServer: string;
  /** PHC strings of the store's two users (writeStore). */
  readonly hashes: { readonly user: string; readonly admin: string; readonly at: number };
  /** Run under callgrind (--instructions), its counts in files named after this and the server. */
  readonly callgrindOut?: string;
  /** Node's flags before the script (PREDICTABLE under callgrind unless --threaded). */
  readonly nodeFlags?: readonly string[];
}

/** The file store's snapshot (format 1, read by every version since the format was set) with alice and an admin, and an empty journal. */
function writeStore(path: string, hashes: StartArgs['hashes']): void {
  const at = hashes.at;
  const users = [
    { name: ADMIN, role: 'admin', hash: hashes.admin, createdAt: at, passwordChangedAt: at },
    { name: USER, role: 'user', hash: hashes.user, createdAt: at, passwordChangedAt: at },
  ];
  writeFileSync(path, `{"format":"httpskit-users","version":1,"generation":0,"users":[\n${users.map((u) => JSON.stringify(u)).join(',\n')}\n]}\n`, { mode: 0o600 });
  writeFileSync(`${path}.journal`, '{"format":"httpskit-users-journal","version":1,"generation":0}\n', { mode: 0o600 });
}

/** `cliFlags`: more arguments for the CLI (log on), named into the server's name (`HEAD log-on --log-level off`). */
async function startServer(side: Side, log: LogMode, build: Build, args: StartArgs, cliFlags: readonly string[] = []): Promise<ProcServer> {
  const name = [serverName(side, log), ...cliFlags].join(' ');
  const port = await freePort();
  const store = join(args.work, `${side}-${log}-${args.round}.json`);
  writeStore(store, args.hashes);
  const script =
    log === 'log-on'
      ? [build.bin, 'serve', '--host', '127.0.0.1', '--port', String(port), '--cert', args.certFile, '--key', args.keyFile, '--store', store, '--scrypt-ln', String(SCRYPT_LN), ...cliFlags]
      : [args.libServer, build.index, JSON.stringify({ port, certFile: args.certFile, keyFile: args.keyFile, store, scryptLn: SCRYPT_LN })];
  const profile = args.profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(args.profileDir, name.replace(' ', '-'))}`];
  // No HTTPSKIT_* setting of the caller's environment reaches either version.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('HTTPSKIT_')));
  const devNull = openSync('/dev/null', 'w');
  const spawnOptions: SpawnOptions = { cwd: args.work, env, stdio: ['ignore', devNull, 'pipe'] };
  const callgrind = args.callgrindOut === undefined ? undefined : new Callgrind([process.execPath, ...(args.nodeFlags ?? []), ...script], `${args.callgrindOut}-${name.replaceAll(' ', '-')}`, spawnOptions);
  const child = callgrind?.child ?? spawn(process.execPath, [...profile, ...script], spawnOptions);
  closeSync(devNull);
  const server = new ProcServer(name, `https://127.0.0.1:${port}`, child, callgrind);
  try {
    await waitUntilListening(server, port);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return server;
}

interface Ratio {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly perRound: readonly number[];
}

export interface AgainstRow {
  readonly scenario: string;
  /** HEAD ÷ REF, round by round: CPU per request, req/s, p99 latency, peak RSS. */
  readonly cpu: Ratio;
  readonly rps: Ratio;
  readonly p99: Ratio;
  readonly rss: Ratio;
  readonly headCpuMicros: number;
  readonly refCpuMicros: number;
  readonly headRps: number;
  readonly refRps: number;
  readonly bodiesMatch: boolean;
  readonly failed: number;
  readonly met: boolean;
}

function ratioOf(rounds: readonly RoundFigure[], ours: string, peer: string, figure: (f: RoundFigure) => number): Ratio {
  const perRound: number[] = [];
  for (const round of [...new Set(rounds.map((r) => r.round))].sort((a, b) => a - b)) {
    const a = rounds.find((r) => r.round === round && r.server === ours);
    const b = rounds.find((r) => r.round === round && r.server === peer);
    if (a !== undefined && b !== undefined) perRound.push(figure(a) / figure(b));
  }
  const [min, max] = range(perRound);
  return { median: median(perRound), min, max, perRound };
}

/** Whether every round had a figure on both sides (a side with no 2xx answer has none). */
const comparable = (r: Ratio): boolean => r.perRound.length > 0 && r.perRound.every((x) => Number.isFinite(x) && x > 0);

const fmt = (r: Ratio): string => `${r.median.toFixed(3)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`;

export function markdownAgainst(rows: readonly AgainstRow[], head: string, ref: string): string {
  const lines = [
    `| scenario (HEAD ${head} ÷ REF ${ref}) | CPU/request (min–max) | req/s | p99 | peak RSS | HEAD µs/req | REF µs/req | ≤ ${TARGET} |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const flags = `${r.bodiesMatch ? '' : ' (body differs!)'}${r.failed > 0 ? ` (${r.failed} failed)` : ''}`;
    // A side that answered nothing (a ref from before the route) has no CPU per request to compare.
    const verdict = !comparable(r.cpu) ? 'not compared' : r.met ? 'met' : 'missed';
    lines.push(`| ${r.scenario}${flags} | ${fmt(r.cpu)} | ${fmt(r.rps)} | ${fmt(r.p99)} | ${fmt(r.rss)} | ${r.headCpuMicros.toFixed(1)} | ${r.refCpuMicros.toFixed(1)} | ${verdict} |`);
  }
  return lines.join('\n');
}

/** The whole --against run; resolves with the exit code (2: usage, 1: failure). */
export async function againstMain(argv: readonly string[], compile: () => void): Promise<number> {
  let options: AgainstOptions;
  let commit: string;
  try {
    options = parseAgainstArgs(argv);
    commit = resolveRef(options.ref);
  } catch (error) {
    if (!(error instanceof AgainstUsageError)) throw error;
    console.error(`bench --against: ${error.message}`);
    return 2;
  }
  const progress = (line: string): void => console.log(line);
  const started = Date.now();
  const headCommit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
  const headLabel = `${headCommit.slice(0, 10)}${dirty ? '+changes' : ''}`;
  const refLabel = commit.startsWith(options.ref) ? commit.slice(0, 10) : `${options.ref} (${commit.slice(0, 10)})`;
  // Stopped with SIGINT or SIGTERM: no server left running, no temporary directory left behind (a
  // signal during the ref's build is handled once git, npm or tsc returns: the worktree is removed first).
  const live = new Set<ProcServer>();
  const temporary: string[] = [];
  const abort = (signal: NodeJS.Signals): void => {
    for (const server of live) server.child.kill('SIGKILL');
    for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
    console.error(`bench --against: stopped by ${signal}`);
    process.exit(130);
  };
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  compile();
  // The working tree's build as it is now: a later `npm run bench` rebuilds BUILD_DIR while this run
  // still starts servers from it.
  const snapshot = mkdtempSync(join(tmpdir(), 'httpskit-against-head-'));
  temporary.push(snapshot);
  for (const part of ['lib', 'bin', 'assets', join('bench', 'servers', 'against-lib.js')]) cpSync(join(BUILD_DIR, part), join(snapshot, part), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(snapshot, 'package.json'));
  const head: Build = { bin: join(snapshot, 'bin', 'httpskit.js'), index: join(snapshot, 'lib', 'index.js') };
  const ref = buildRef(commit, options.rebuild, progress);
  const chosen = againstScenarios(options);
  const logModes = [...new Set(chosen.map(logModeOf))];
  progress(`HEAD ${headLabel} against REF ${refLabel}: ${chosen.map((s) => s.name).join(', ')}; ${options.rounds} rounds of ${options.seconds} s, ${options.connections} connections; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const { createSelfSignedCertificate } = await import('../lib/tls/dev-cert.js');
  const work = mkdtempSync(join(tmpdir(), 'httpskit-against-run-'));
  temporary.push(work);
  const { cert, key } = createSelfSignedCertificate();
  const { hashPassword } = await import('../lib/users/password-hash.js');
  const { preparePassword } = await import('../lib/users/prepare.js');
  const cost = { ln: SCRYPT_LN, r: 8, p: 1 };
  // One creation time for every store, so both versions' user bodies can be compared byte for byte.
  const hashes = { user: await hashPassword(preparePassword(PASSWORDS[0]), cost), admin: await hashPassword(preparePassword(ADMIN_PASSWORD), cost), at: Date.now() };
  const certFile = join(work, 'cert.pem');
  const keyFile = join(work, 'key.pem');
  writeFileSync(certFile, cert);
  writeFileSync(keyFile, key, { mode: 0o600 });
  const profileDir = options.cpuProf ? join(import.meta.dirname, 'results', 'profiles', 'against') : undefined;
  if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true });
  const startArgs = { certFile, keyFile, work, round: 0, profileDir, libServer: join(snapshot, 'bench', 'servers', 'against-lib.js'), hashes };
  if (options.instructions) {
    try {
      return await countAgainst({ options, chosen, head, ref, startArgs, live, progress, headLabel, refLabel, commit, started });
    } finally {
      rmSync(work, { recursive: true, force: true });
      rmSync(snapshot, { recursive: true, force: true });
    }
  }

  const load = await startLoad();
  const pinned = options.pin && pinToCpu(load.pid, 1);
  const figures = new Map<Scenario, RoundFigure[]>(chosen.map((s) => [s, []]));
  const bodies = new Map<Scenario, Map<string, boolean>>();
  const skipped = new Map<Scenario, string>();
  const runOptions = { rounds: options.rounds, seconds: options.seconds, slices: options.slices, warmupSeconds: 0.5, connections: options.connections, progress };
  try {
    for (let round = 0; round < options.rounds; round++) {
      const servers = new Map<string, ProcServer>();
      try {
        for (const log of logModes) {
          for (const side of ['HEAD', 'REF'] as const) {
            const server = await startServer(side, log, side === 'HEAD' ? head : ref, { ...startArgs, round });
            live.add(server);
            if (pinned) pinToCpu(server.pid, 0);
            servers.set(server.name, server);
          }
        }
        await sleep(SETTLE_MS);
        for (const scenario of chosen) {
          if (skipped.has(scenario)) continue;
          if (round === 0 && scenario.mode === 'h2') {
            // A version before H-1 speaks HTTP/1.1 only: its h2 scenarios cannot be compared.
            for (const name of scenario.servers) {
              const server = servers.get(name);
              if (server !== undefined && (await alpnOf(Number(new URL(server.url).port))) !== 'h2') skipped.set(scenario, `${name} does not speak HTTP/2 (ALPN)`);
            }
            if (skipped.has(scenario)) {
              progress(`  ${scenario.name}: skipped, ${skipped.get(scenario) ?? ''}`);
              continue;
            }
          }
          if (round === 0) bodies.set(scenario, isUsersScenario(scenario) ? await sameBodies(scenario, servers) : await checkBodies(scenario, servers));
          figures.get(scenario)?.push(...(await runRound(scenario, servers, load, runOptions, round)));
        }
      } finally {
        for (const server of servers.values()) {
          await server.stop();
          live.delete(server);
        }
      }
    }
  } finally {
    await load.stop();
    rmSync(work, { recursive: true, force: true });
    rmSync(snapshot, { recursive: true, force: true });
  }

  const rows: AgainstRow[] = [];
  for (const scenario of chosen) {
    if (skipped.has(scenario)) continue;
    const rounds = figures.get(scenario) ?? [];
    const [ours, peer] = scenario.servers as [string, string];
    const summary = summarizeScenario(scenario, new Set(scenario.servers), rounds, bodies.get(scenario) ?? new Map());
    const cpu = ratioOf(rounds, ours, peer, (f) => f.cpuPerRequestMicros);
    rows.push({
      scenario: scenario.name,
      cpu,
      rps: ratioOf(rounds, ours, peer, (f) => f.rps),
      p99: ratioOf(rounds, ours, peer, (f) => f.p99Ms),
      rss: ratioOf(rounds, ours, peer, (f) => f.peakRssKiB),
      headCpuMicros: summary.servers[ours]?.cpuPerRequestMicros ?? Number.NaN,
      refCpuMicros: summary.servers[peer]?.cpuPerRequestMicros ?? Number.NaN,
      headRps: summary.servers[ours]?.rps ?? Number.NaN,
      refRps: summary.servers[peer]?.rps ?? Number.NaN,
      bodiesMatch: Object.values(summary.servers).every((s) => s.bodyMatches),
      failed: Object.values(summary.servers).reduce((sum, s) => sum + s.failed, 0),
      met: comparable(cpu) && cpu.median <= TARGET,
    });
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  const markdown = [
    `HEAD ${headLabel} ÷ REF ${refLabel}, ${new Date(started).toISOString()}: ${options.rounds} rounds of ${options.seconds} s per server and scenario ` +
      `(${options.slices} slices in alternating order, fresh processes every round), ${options.connections} connections (h2: one, 100 streams)` +
      `${pinned ? ', servers on CPU 0 and the load generator on CPU 1' : ''}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}; took ${seconds} s. ` +
      'Median of the per-round ratios, min–max beside it. log-on: the CLI, its log to /dev/null; log-off: createService({ log: false }).',
    '',
    markdownAgainst(rows, headLabel, refLabel),
    ...[...skipped].map(([scenario, why]) => `\n${scenario.name}: not compared, ${why}.`),
  ].join('\n');
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  const json = `${JSON.stringify({ head: headLabel, ref: options.ref, refCommit: commit, options, pinned, rows, rounds: Object.fromEntries([...figures].map(([s, f]) => [s.name, f])) }, null, 2)}\n`;
  writeFileSync(join(import.meta.dirname, 'results', 'against-latest.json'), json);
  writeFileSync(join(import.meta.dirname, 'results', 'against-latest.md'), `${markdown}\n`);
  console.log(`\n${markdown}\n\nResults: bench/results/against-latest.json, bench/results/against-latest.md${profileDir === undefined ? '' : `; profiles in ${profileDir}`}`);
  return 0;
}

/**
 * The named peers of an --instructions run, counted over HTTP/1.1 beside HEAD and REF, each against
 * the scenarios of one log mode with issue 23's target for HEAD ÷ peer: a bare node:https handler
 * sending httpskit's headers (bench/servers/ceiling-headers.ts) against the log-off library, and
 * Fastify doing the same job (bench/servers/fastify.ts: same routes, headers and bodies) without a
 * logger against the log-off library and with its default pino logger against the CLI's log.
 * ceiling+modules, without a target of its own: the same bare handler after loading a dozen ES
 * modules, as any application does (bench/servers/ceiling-modules.ts says what that costs it).
 */
export const PEERS = [
  { family: 'ceiling+headers', name: 'ceiling+headers', script: 'ceiling-headers.js', log: false, logMode: 'log-off', target: 1.1 },
  { family: 'ceiling+modules', name: 'ceiling+modules', script: 'ceiling-modules.js', log: false, logMode: 'log-off', target: undefined },
  { family: 'fastify', name: 'fastify', script: 'fastify.js', log: false, logMode: 'log-off', target: 0.75 },
  { family: 'fastify', name: 'fastify+log', script: 'fastify.js', log: true, logMode: 'log-on', target: 0.75 },
] as const satisfies readonly Peer[];
export type PeerFamily = (typeof PEERS)[number]['family'];

interface Peer {
  readonly family: string;
  readonly name: string;
  /** In bench/servers/ (built). */
  readonly script: string;
  readonly log: boolean;
  readonly logMode: LogMode;
  /** Issue 23's target for HEAD ÷ peer; undefined: the ratio is given for comparison only. */
  readonly target: number | undefined;
}
const FAMILIES: readonly PeerFamily[] = [...new Set(PEERS.map((p) => p.family))];

/** `--peers`: the families named (all when not given); '' names none. */
function peerFamilies(text: string | undefined): readonly PeerFamily[] {
  if (text === undefined) return FAMILIES;
  const names = text.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  for (const name of names) if (!(FAMILIES as readonly string[]).includes(name)) throw new AgainstUsageError(`--peers: "${name}" is not a peer; known: ${FAMILIES.join(', ')}`);
  return FAMILIES.filter((f) => names.includes(f));
}

/** The CLI's switch for its log (C-6), given to HEAD's CLI for the log's share of a logged request. */
const LOG_SWITCHED_OFF = ['--log-level', 'off'] as const;
/** Issue 23's target for that share. */
const LOG_SHARE_TARGET = 0.05;

/** How long after its start a server is first counted: the start-up's dummy hash (U-3) ends on a worker 10 s in. */
const COUNT_AFTER_MS = 12_000;

export interface CountRow {
  readonly scenario: string;
  /** Instructions of the main thread per request, by server (HEAD …, REF …, ceiling+headers). */
  readonly main: Readonly<Record<string, number>>;
  /** V8's optimizing compiles in the counted requests, per request, by server: left out of `main` (instructions.ts). */
  readonly compiles: Readonly<Record<string, number>>;
  readonly others: Readonly<Record<string, number>>;
  readonly failed: number;
  readonly headRef: number;
  /** Log-on scenarios: 1 − HEAD's CLI with `--log-level off` ÷ HEAD's CLI, the log's share of a logged request. */
  readonly logShare: number | undefined;
  /** HEAD ÷ each peer counted for the scenario, by peer name (PEERS: HTTP/1.1, the peer's log mode). */
  readonly headPeers: Readonly<Record<string, number>>;
}

interface CountContext {
  readonly options: AgainstOptions;
  readonly chosen: readonly Scenario[];
  readonly head: Build;
  readonly ref: Build;
  readonly startArgs: StartArgs;
  readonly live: Set<ProcServer>;
  readonly progress: (line: string) => void;
  readonly headLabel: string;
  readonly refLabel: string;
  readonly commit: string;
  readonly started: number;
}

/**
 * `--instructions`: each version's server (and, for HTTP/1.1, the named peer) under callgrind, one
 * process per version and log mode for all its scenarios, each scenario warmed up and then counted
 * (instructions.ts). The file store's scenarios are not counted (their password cycles need the
 * load generator's preparation).
 */
async function countAgainst(c: CountContext): Promise<number> {
  const { options, progress } = c;
  const scenarios = c.chosen.filter((s) => !isUsersScenario(s));
  const out = mkdtempSync(join(tmpdir(), 'httpskit-callgrind-'));
  const counts = new Map<string, Map<string, Count>>(scenarios.map((s) => [s.name, new Map()]));
  const skipped = new Map<string, string>();
  const load = (scenario: Scenario, url: string) => ({
    url,
    path: scenario.path,
    headers: scenario.headers,
    mode: scenario.mode === 'h2' ? ('h2' as const) : ('h1' as const),
    connections: options.connections,
    streams: H2_STREAMS,
    warmup: options.warmup,
    requests: options.requests,
  });
  const count = async (name: string, callgrind: Callgrind, scenario: Scenario, url: string, since: number): Promise<void> => {
    await sleep(Math.max(0, since + COUNT_AFTER_MS - Date.now()));
    const figure = await countRequests(callgrind, load(scenario, url));
    counts.get(scenario.name)?.set(name, figure);
    progress(`  ${scenario.name}: ${name} ${Math.round(figure.main).toLocaleString('en')} instructions a request (compiles left out ${Math.round(figure.compiles).toLocaleString('en')}, other threads ${Math.round(figure.others).toLocaleString('en')})${figure.failed > 0 ? `, ${figure.failed} failed` : ''}`);
  };
  /** One process of `peer` for `h1`, counted once per path (a peer's answer depends on nothing else). */
  const countPeer = async (peer: Peer, h1: readonly Scenario[]): Promise<void> => {
    const since = Date.now();
    const args = { certFile: c.startArgs.certFile, keyFile: c.startArgs.keyFile, log: peer.log };
    const callgrind = new Callgrind([process.execPath, ...(options.threaded ? [] : PREDICTABLE), join(BUILD_DIR, 'bench', 'servers', peer.script), JSON.stringify(args)], join(out, 'peer'), {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    try {
      if (options.pin) pinToCpu(callgrind.pid, 0);
      const url = await new Promise<string>((resolve, reject) => {
        callgrind.child.once('message', (message: { url?: string }) => resolve(message.url ?? ''));
        callgrind.child.once('exit', () => reject(new Error(`${peer.name} exited before it was ready`)));
      });
      const byPath = new Map<string, Count>();
      for (const scenario of h1) {
        const known = byPath.get(scenario.path);
        if (known !== undefined) {
          counts.get(scenario.name)?.set(peer.name, known);
          continue;
        }
        await count(peer.name, callgrind, scenario, url, since);
        const figure = counts.get(scenario.name)?.get(peer.name);
        if (figure !== undefined) byPath.set(scenario.path, figure);
      }
    } finally {
      await callgrind.stop();
    }
  };
  progress(`HEAD ${c.headLabel} against REF ${c.refLabel} and ${options.peers.length === 0 ? 'no peer' : options.peers.join(', ')}, instructions counted by callgrind: ${scenarios.map((s) => s.name).join(', ')}; ${options.warmup} requests to warm up, ${options.requests} counted, ${options.connections} connections (h2: one, ${H2_STREAMS} streams)${options.threaded ? '' : `; node ${PREDICTABLE.join(' ')}`}`);
  try {
    // Each version in each log mode; then HEAD's CLI with its log switched off, for the log's share
    // of a logged request (the same process and sink, only the switch apart).
    const runs = [...new Set(scenarios.map(logModeOf))].flatMap((log) => (['HEAD', 'REF'] as const).map((side) => ({ side, log, flags: [] as readonly string[] })));
    if (scenarios.some((s) => logModeOf(s) === 'log-on')) runs.push({ side: 'HEAD', log: 'log-on', flags: LOG_SWITCHED_OFF });
    for (const { side, log, flags } of runs) {
      const since = Date.now();
      const server = await startServer(side, log, side === 'HEAD' ? c.head : c.ref, { ...c.startArgs, callgrindOut: join(out, 'server'), nodeFlags: options.threaded ? [] : PREDICTABLE }, flags);
      c.live.add(server);
      if (options.pin) pinToCpu(server.pid, 0);
      try {
        for (const scenario of scenarios) {
          if (logModeOf(scenario) !== log) continue;
          if (scenario.mode === 'h2' && (await alpnOf(Number(new URL(server.url).port))) !== 'h2') {
            skipped.set(scenario.name, `${server.name} does not speak HTTP/2 (ALPN)`);
            continue;
          }
          await count(server.name, server.callgrind as Callgrind, scenario, server.url, since);
        }
      } finally {
        await server.stop();
        c.live.delete(server);
      }
    }
    for (const peer of PEERS.filter((p) => options.peers.includes(p.family))) {
      const h1 = scenarios.filter((s) => s.mode !== 'h2' && logModeOf(s) === peer.logMode);
      if (h1.length > 0) await countPeer(peer, h1);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  const rows: CountRow[] = [];
  for (const scenario of scenarios) {
    const figures = counts.get(scenario.name) ?? new Map<string, Count>();
    const [ours, theirs] = scenario.servers as [string, string];
    const headCount = figures.get(ours);
    const refCount = figures.get(theirs);
    if (headCount === undefined || refCount === undefined) continue;
    const switchedOff = figures.get([ours, ...LOG_SWITCHED_OFF].join(' '));
    const headPeers = Object.fromEntries(
      PEERS.flatMap((p) => {
        const peerCount = figures.get(p.name);
        return peerCount === undefined ? [] : [[p.name, headCount.main / peerCount.main]];
      }),
    );
    rows.push({
      scenario: scenario.name,
      main: Object.fromEntries([...figures].map(([name, f]) => [name, f.main])),
      compiles: Object.fromEntries([...figures].map(([name, f]) => [name, f.compiles])),
      others: Object.fromEntries([...figures].map(([name, f]) => [name, f.others])),
      failed: [...figures.values()].reduce((sum, f) => sum + f.failed, 0),
      headRef: headCount.main / refCount.main,
      headPeers,
      logShare: switchedOff === undefined ? undefined : 1 - switchedOff.main / headCount.main,
    });
  }
  const seconds = Math.round((Date.now() - c.started) / 1000);
  const table = markdownCounts(rows, c.headLabel, c.refLabel, options.peers);
  const markdown = [
    `HEAD ${c.headLabel} ÷ REF ${c.refLabel}, ${new Date(c.started).toISOString()}: instructions of each server's main thread per request, counted by callgrind ` +
      `(${options.warmup} requests to warm up, then ${options.requests} counted on the same ${options.connections} keep-alive connections; h2: one connection, ${H2_STREAMS} streams). ` +
      `log-on: the CLI, its log to /dev/null; log-off: createService({ log: false }). ${options.threaded ? "V8's own threads as by default (--threaded): their work is apart, in the last column" : `Node run with ${PREDICTABLE.join(' ')}: V8 on one thread, its collections in the count; its optimizing compiles (a warm-up cost, which under valgrind can still fall among the counted requests) left out, and given in a column of their own`}. Took ${seconds} s.`,
    '',
    table,
    ...[...skipped].map(([name, why]) => `\n${name}: not counted, ${why}.`),
  ].join('\n');
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  writeFileSync(join(import.meta.dirname, 'results', 'against-instructions.json'), `${JSON.stringify({ head: c.headLabel, ref: options.ref, refCommit: c.commit, options, rows }, null, 2)}\n`);
  writeFileSync(join(import.meta.dirname, 'results', 'against-instructions.md'), `${markdown}\n`);
  console.log(`\n${markdown}\n\nResults: bench/results/against-instructions.json, bench/results/against-instructions.md`);
  return 0;
}

const thousands = (n: number | undefined): string => (n === undefined ? '–' : `${(n / 1000).toFixed(1)}k`);

/**
 * The table of an --instructions run: per scenario the two versions' counts and HEAD ÷ REF, then
 * the log's share of a logged request (HEAD's CLI with its log switched off against it), then
 * each peer family asked for: its count for the scenario's log mode (fastify for log off,
 * fastify+log for log on) and HEAD ÷ peer against its target.
 */
export function markdownCounts(rows: readonly CountRow[], headLabel: string, refLabel: string, peers: readonly PeerFamily[]): string {
  const families = FAMILIES.filter((f) => peers.includes(f));
  // A family's cell: its peer for the row's log mode, counted and compared with its target.
  const peerCells = (r: CountRow, family: PeerFamily): string[] => {
    const peer = PEERS.find((p) => p.family === family && r.headPeers[p.name] !== undefined);
    if (peer === undefined) return ['–', '–'];
    const ratio = r.headPeers[peer.name] as number;
    const verdict = peer.target === undefined ? '' : ` ${ratio <= peer.target ? 'met' : 'missed'}`;
    return [`${thousands(r.main[peer.name])}${peer.name === family ? '' : ` (${peer.name})`}`, `${ratio.toFixed(3)}${verdict}`];
  };
  // "≤ 1.1, log-off" for a family counted in one log mode; "≤ 0.75" for one counted in both; "no target, log-off".
  const targets = (family: PeerFamily): string => {
    const members = PEERS.filter((p) => p.family === family);
    const target = members[0]?.target;
    return `${target === undefined ? 'no target' : `≤ ${target}`}${members.length === 1 ? `, ${members[0]?.logMode}` : ''}`;
  };
  return [
    `| scenario | HEAD ${headLabel} | REF ${refLabel} | HEAD ÷ REF (≤ ${TARGET}) | the log's share (≤ ${LOG_SHARE_TARGET * 100}%) | ${families.map((f) => `${f} | HEAD ÷ ${f} (${targets(f)})`).join(' | ')}${families.length > 0 ? ' | ' : ''}compiles left out HEAD / REF | other threads HEAD / REF |`,
    `|---|---|---|---|---|${families.map(() => '---|---|').join('')}---|---|`,
    ...rows.map((r) => {
      const [ours, theirs] = [`HEAD ${logModeOfName(r.scenario)}`, `REF ${logModeOfName(r.scenario)}`];
      const share = r.logShare === undefined ? '–' : `${(r.logShare * 100).toFixed(1)}% ${r.logShare <= LOG_SHARE_TARGET ? 'met' : 'missed'}`;
      const cells = [share, ...families.flatMap((f) => peerCells(r, f))];
      return `| ${r.scenario}${r.failed > 0 ? ` (${r.failed} failed)` : ''} | ${thousands(r.main[ours])} | ${thousands(r.main[theirs])} | ${r.headRef.toFixed(3)} ${r.headRef <= TARGET ? 'met' : 'missed'} | ${cells.map((cell) => `${cell} | `).join('')}${thousands(r.compiles[ours])} / ${thousands(r.compiles[theirs])} | ${thousands(r.others[ours])} / ${thousands(r.others[theirs])} |`;
    }),
  ].join('\n');
}
