// `npm run bench`: every benchmark of bench/README.md in one run, on this machine, then the ratio
// table (stdout) and the full results as JSON (bench/results/latest.json).
//
//   npm run bench [-- --quick] [--only http,tls,library,negotiation,xml,logshare,password,store,users] [--rounds N]
//                 [--seconds S] [--servers httpskit,fastify,…] [--scenarios h2,log,…] [--cpu-prof] [--unpinned]
//   npm run bench -- --only postgres   # the PostgreSQL store against the file store (not in the default run)
//   npm run bench -- --only logshare [--logshare-rate 800] [--logshare-aa] [--logshare-agent]   # the access log's share, log-on and log-off servers side by side
//   npm run bench -- --only soak [--soak-seconds 180] [--soak-node-flags=--max-semi-space-size=2]   # issue 23: RSS under 3 minutes of a mixed load, log on (bench/soak.ts)
//   npm run bench -- --only library [--rounds N] [--seconds S]   # issue 21: service.fetch ÷ socket, item GET ÷ something, item PUT ÷ GET (bench/library.ts)
//   npm run bench -- --against REF [--only "h1 json"] [--rounds N] [--seconds S] [--connections N] [--instructions]   # HEAD ÷ REF (bench/against.ts)
//
// Servers under test and the load generator each run in their own process, from JavaScript
// compiled here first (bench/results/build), so no loader sits in a measured process.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSelfSignedCertificate } from '../lib/tls/dev-cert.js';
import { BUILD_DIR, pinToCpu, runJson, startLoad, startServer, type ServerChild } from './children.js';
import { checkBodies, runRound, scenarios, summarizeScenario, type RoundFigure, type Scenario, type ScenarioResult } from './http.js';
import type { NegotiationRow } from './negotiation.js';
import { runPasswordBench, type PasswordResult } from './password.js';
import { runLogShareBench, type LogShareResult } from './logshare.js';
import { libraryLines, runLibraryBench, type LibraryResult } from './library.js';
import { runSoakBench, soakLines, type SoakResult } from './soak.js';
import { runPostgresBench, type PostgresResult } from './postgres.js';
import { summarizeProfile } from './profile.js';
import { markdownNegotiation, markdownServers, markdownTable, markdownXml, tableRows, type MemoryRow, type Results, type StoreRow } from './report.js';
import { sleep } from './stats.js';
import type { ServerArgs } from './servers/bodies.js';
import type { UsersResult } from './users.js';
import type { XmlRow } from './xml.js';

const SECTIONS = ['negotiation', 'xml', 'store', 'http', 'tls', 'library', 'logshare', 'password', 'users', 'postgres', 'soak'] as const;
type Section = (typeof SECTIONS)[number];
// postgres starts a PostgreSQL cluster (initdb, fsync on) and needs the `pg` package; soak runs for
// minutes: both are asked for by name only.
const DEFAULT_SECTIONS: readonly Section[] = SECTIONS.filter((s) => s !== 'postgres' && s !== 'soak');

const ROOT = join(import.meta.dirname, '..');
const RESULTS = join(import.meta.dirname, 'results');

/** Compiles lib/, bin/ and bench/ (type errors are reported, but what was emitted still runs). */
function compileBench(): void {
  console.log('building bench/results/build …');
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'bench', 'tsconfig.json')], { stdio: 'inherit' });
  } catch {
    console.log('warning: tsc reported errors; running what it emitted');
  }
  cpSync(join(ROOT, 'assets'), join(BUILD_DIR, 'assets'), { recursive: true });
}

// The usage is the lines of this file's own heading that show a command.
const USAGE = readFileSync(new URL(import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('//   npm run bench') || line.startsWith('//                 '))
  .map((line) => line.slice(3))
  .join('\n');
if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

// `--against REF`: the working tree against a git ref, its own run (bench/against.ts).
if (process.argv.slice(2).some((arg) => arg === '--against' || arg.startsWith('--against='))) {
  const { againstMain } = await import('./against.js');
  process.exit(await againstMain(process.argv.slice(2), compileBench));
}

const { values } = parseOrExit(() => parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    servers: { type: 'string' },
    // Only the HTTP scenarios whose name contains one of these (comma-separated, case-insensitive).
    scenarios: { type: 'string' },
    unpinned: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    // logshare: both servers log (an A/A check of the side-by-side method); requests/s to each server.
    'logshare-aa': { type: 'boolean', default: false },
    'logshare-rate': { type: 'string' },
    // logshare: drive the servers with node:https's Agent instead of the lean TLS client.
    'logshare-agent': { type: 'boolean', default: false },
    // soak: how long the mixed load runs; Node's flags for its server (as NODE_OPTIONS would give them).
    'soak-seconds': { type: 'string' },
    'soak-node-flags': { type: 'string' },
  },
}));

/** parseArgs, or one line saying what is wrong and the usage (exit 2) instead of a stack trace. */
function parseOrExit<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
}
const quick = values.quick === true;
const only = new Set((values.only ?? DEFAULT_SECTIONS.join(',')).split(',').map((s) => s.trim()));
for (const s of only) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`unknown section "${s}"; known: ${SECTIONS.join(', ')}`);
const wants = (s: Section): boolean => only.has(s);
const SERVER_SCRIPTS: ReadonlyArray<readonly [name: string, script: string, log: boolean, extra?: Partial<ServerArgs>]> = [
  ['ceiling', 'ceiling.js', false],
  ['ceiling+headers', 'ceiling-headers.js', false],
  ['pipeline', 'dispatch.js', false],
  ['httpskit', 'httpskit.js', false],
  ['fastify', 'fastify.js', false],
  ['httpskit+log', 'httpskit.js', true],
  ['fastify+log', 'fastify.js', true],
  // The operator's switches (C-6, H-5): the default sink with --log-level off, and metrics on.
  ['httpskit+log-off', 'httpskit.js', true, { logLevel: 'off' }],
  ['httpskit+metrics', 'httpskit.js', false, { metrics: true }],
  // The HTTP/2 and access-log scenarios get processes of their own (see scenarios() in http.ts): a process that
  // already served other scenarios this round is better warmed (JIT) than a peer started for one.
  ['httpskit+log-on', 'httpskit.js', true],
  // H-1: httpskit over HTTP/2 (the default listener), the same listener's HTTP/1.1, the
  // node:https-only listener (http2: false), and Fastify's own HTTP/2 server.
  ['httpskit+h2', 'httpskit.js', false],
  ['httpskit+h2port', 'httpskit.js', false],
  ['httpskit+h1only', 'httpskit.js', false, { http2: false }],
  ['fastify+h2', 'fastify.js', false, { http2: true }],
];
/** New server processes are left alone this long after the last is ready (see the round loop). */
const START_UP_SETTLE_MS = 11_000;
const SERVER_NAMES: readonly string[] = SERVER_SCRIPTS.map(([name]) => name);
const chosenServers = new Set((values.servers ?? SERVER_NAMES.join(',')).split(',').map((s) => s.trim()));
for (const s of chosenServers) if (!SERVER_NAMES.includes(s)) throw new Error(`unknown server "${s}"; known: ${SERVER_NAMES.join(', ')}`);
const positiveInteger = (flag: string, value: number): number => {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${flag} must be a whole number of at least 1`);
  return value;
};
const settings = {
  quick,
  sections: [...only],
  rounds: positiveInteger('rounds', Number(values.rounds ?? (quick ? 3 : 8))),
  seconds: Number(values.seconds ?? (quick ? 1 : 2)),
  slices: 2,
  warmupSeconds: 0.5,
  connections: 10,
  negotiationRounds: quick ? 5 : 15,
  negotiationCalls: quick ? 5_000 : 20_000,
  xmlRounds: quick ? 5 : 15,
  storeUpdates: quick ? 50 : 200,
  passwordSingleChanges: quick ? 1 : 3,
  passwordConcurrent: 8,
  probeRate: 200,
  idleSeconds: quick ? 3 : 5,
  passwordRounds: quick ? 1 : 5,
  usersRounds: quick ? 2 : 6,
  usersSeconds: quick ? 1 : 3,
  usersCount: quick ? 20_000 : 100_000,
  postgresRounds: quick ? 2 : 6,
  postgresChangers: 4,
  postgresChangesEach: 2,
  postgresSlices: quick ? 1 : 2,
  librarySlices: quick ? 2 : 4,
  soakSeconds: positiveInteger('soak-seconds', Number(values['soak-seconds'] ?? (quick ? 30 : 180))),
  soakConnections: 20,
  postgresTogetherSeconds: quick ? 12 : 24,
  postgresProxyRate: 120,
  postgresLedgerOps: quick ? 200 : 1_000,
  postgresAuthGets: quick ? 100 : 300,
  logshareRounds: quick ? 3 : 8,
  logshareSeconds: quick ? 2 : 5,
  logshareWarmupSeconds: 2,
  logshareRate: positiveInteger('logshare-rate', Number(values['logshare-rate'] ?? 800)),
  log: 'httpskit / fastify: no request log; httpskit+log / fastify+log: each one\'s default JSON request log on stdout, pointed at /dev/null; httpskit+log-off: that sink with --log-level off; httpskit+metrics: no log, --metrics-port on',
};
const progress = (line: string): void => console.log(line);
const started = Date.now();

compileBench();

const machine = {
  cores: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  openssl: process.versions.openssl,
  v8: process.versions.v8,
  kernel: release(),
  loadAverageAtStart: loadavg().map((l) => Number(l.toFixed(2))),
  date: new Date(started).toISOString(),
};
progress(`machine: ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, OpenSSL ${machine.openssl}, load ${machine.loadAverageAtStart.join(' ')}`);

const work = mkdtempSync(join(tmpdir(), 'httpskit-bench-'));
const { cert, key } = createSelfSignedCertificate();
const certFile = join(work, 'cert.pem');
const keyFile = join(work, 'key.pem');
writeFileSync(certFile, cert);
writeFileSync(keyFile, key, { mode: 0o600 });
const profileDir = join(RESULTS, 'profiles');
if (values['cpu-prof'] === true) rmSync(profileDir, { recursive: true, force: true });

let pinned = false;
let negotiation: NegotiationRow[] | undefined;
let xml: XmlRow[] | undefined;
let store: StoreRow[] | undefined;
const http: ScenarioResult[] = [];
const memory: MemoryRow[] = [];
const password: { label: string; result: PasswordResult }[] = [];
let postgres: PostgresResult | undefined;
let users: UsersResult | undefined;
let logshare: LogShareResult | undefined;
let library: LibraryResult | undefined;
let soak: SoakResult | undefined;

try {
  if (wants('negotiation')) {
    progress('negotiation: httpskit createNegotiator vs negotiator …');
    negotiation = await runJson<NegotiationRow[]>('negotiation.js', ['--rounds', String(settings.negotiationRounds), '--calls', String(settings.negotiationCalls)], ['--expose-gc']);
  }
  if (wants('xml')) {
    progress('xml: toXml vs JSON.stringify, xmlbuilder2, fast-xml-parser …');
    xml = await runJson<XmlRow[]>('xml.js', ['--rounds', String(settings.xmlRounds)], ['--expose-gc']);
  }
  if (wants('store')) {
    progress('store: one change with 10, 10,000 and 100,000 users; load time …');
    store = await runJson<StoreRow[]>('store-bench.js', ['--updates', String(settings.storeUpdates), '--dir', work]);
  }
  if (wants('http') || wants('tls')) {
    const load = await startLoad();
    // Every server on CPU 0, the load generator on CPU 1: they never compete for a core, and a
    // server's caches are its own (the ratios then vary far less from round to round).
    const pin = values.unpinned !== true;
    pinned = pin && pinToCpu(load.pid, 1);
    const named = values.scenarios?.split(',').map((s) => s.trim().toLowerCase()) ?? [];
    const chosen = scenarios()
      .filter((scenario) => wants(scenario.mode === 'newconn' ? 'tls' : 'http'))
      .filter((scenario) => named.length === 0 || named.some((part) => scenario.name.toLowerCase().includes(part)))
      // A scenario none of whose servers --servers names has nothing to run.
      .filter((scenario) => scenario.servers.some((name) => chosenServers.has(name)));
    if (chosen.length === 0) throw new Error(`no scenario matches --scenarios ${values.scenarios ?? ''}; known: ${scenarios().map((s) => s.name).join('; ')}`);
    // Only the servers some chosen scenario uses (`--only tls` needs four of the seven).
    const needed = new Set(chosen.flatMap((scenario) => scenario.servers).filter((name) => chosenServers.has(name)));
    const figures = new Map<Scenario, RoundFigure[]>(chosen.map((scenario) => [scenario, []]));
    const bodies = new Map<Scenario, Map<string, boolean>>();
    const lifetimePeakKiB = new Map<string, number>();
    const options = { rounds: settings.rounds, seconds: settings.seconds, slices: settings.slices, warmupSeconds: settings.warmupSeconds, connections: settings.connections, progress };
    try {
      // A fresh process of every server each round (see runRound in http.ts).
      for (let round = 0; round < settings.rounds; round++) {
        const servers = new Map<string, ServerChild>();
        try {
          for (const [name, script, log, extra] of SERVER_SCRIPTS) {
            if (!needed.has(name)) continue;
            const profile = values['cpu-prof'] === true ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`] : [];
            const server = await startServer(name, script, { certFile, keyFile, log, store: join(work, `${name}-${round}.json`), ...extra }, profile);
            if (pinned) pinToCpu(server.pid, 0);
            servers.set(name, server);
          }
          // httpskit hashes its dummy password at start-up (U-3) on a worker thread, which ends
          // 10 s after the server is ready (about 85 ms of CPU to tear down 128 MiB): start-up
          // work, kept out of the per-request figures by starting the runs after it.
          await sleep(START_UP_SETTLE_MS);
          for (const scenario of chosen) {
            if (round === 0) bodies.set(scenario, await checkBodies(scenario, servers));
            figures.get(scenario)?.push(...(await runRound(scenario, servers, load, options, round)));
          }
          // The lifetime peak (getrusage) includes start-up: httpskit computes its dummy scrypt hash then (U-3).
          for (const [name, server] of servers) lifetimePeakKiB.set(name, Math.max(lifetimePeakKiB.get(name) ?? 0, (await server.usage()).maxRssKiB));
        } finally {
          for (const server of servers.values()) await server.stop();
        }
      }
      for (const scenario of chosen) http.push(summarizeScenario(scenario, needed, figures.get(scenario) ?? [], bodies.get(scenario) ?? new Map()));
      // Memory: each server's highest RSS during the keep-alive runs, and its lifetime peak.
      for (const name of needed) {
        // HTTP/1.1 keep-alive only: the < 100 MiB target is about those; an HTTP/2 connection with
        // 100 streams in flight holds more (about 100 MiB for httpskit and for Fastify alike).
        // A server that served no keep-alive scenario (the HTTP/2 ones) gets no row, not a 0 MiB one.
        const during = http.filter((s) => s.mode === 'keepalive').flatMap((s) => (s.servers[name] === undefined ? [] : [s.servers[name].peakRssMiB]));
        if (during.length > 0) memory.push({ server: name, peakRssMiB: Math.max(...during), lifetimePeakRssMiB: (lifetimePeakKiB.get(name) ?? 0) / 1024 });
      }
    } finally {
      await load.stop();
    }
  }
  if (wants('library')) {
    progress('library: service.fetch and an embedder\'s item GET and PUT against GET /api/something.json, one server …');
    const load = await startLoad();
    const pin = values.unpinned !== true && pinToCpu(load.pid, 1);
    pinned ||= pin;
    try {
      library = await runLibraryBench(load, {
        rounds: settings.rounds,
        seconds: settings.seconds,
        slices: settings.librarySlices,
        warmupSeconds: settings.warmupSeconds,
        connections: settings.connections,
        certFile,
        keyFile,
        pin,
        cpuProf: values['cpu-prof'] === true ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, 'library')}`] : [],
        progress,
      });
      for (const line of libraryLines(library)) progress(line);
    } finally {
      await load.stop();
    }
  }
  if (wants('soak')) {
    progress(`soak: ${settings.soakConnections} connections, ${settings.soakSeconds} s of a mixed load, request log on …`);
    const load = await startLoad();
    const pin = values.unpinned !== true && pinToCpu(load.pid, 1);
    pinned ||= pin;
    try {
      const nodeFlags = (values['soak-node-flags'] ?? '').split(' ').filter((flag) => flag !== '');
      soak = await runSoakBench(load, { seconds: settings.soakSeconds, connections: settings.soakConnections, sampleSeconds: 5, certFile, keyFile, pin, nodeFlags, progress });
      for (const line of soakLines(soak)) progress(line);
    } finally {
      await load.stop();
    }
  }
  if (wants('logshare')) {
    progress(`logshare: log-on and log-off servers side by side, ${settings.logshareRate} req/s each …`);
    const load = await startLoad();
    const pin = values.unpinned !== true && pinToCpu(load.pid, 1);
    pinned ||= pin;
    try {
      logshare = await runLogShareBench(
        {
          certFile,
          keyFile,
          work,
          rounds: values.rounds === undefined ? settings.logshareRounds : settings.rounds,
          seconds: settings.logshareSeconds,
          warmupSeconds: settings.logshareWarmupSeconds,
          rate: settings.logshareRate,
          connections: settings.connections,
          client: values['logshare-agent'] === true ? 'agent' : 'tls',
          pin,
          settleMs: 1_000,
          aa: values['logshare-aa'] === true,
          profileDir: values['cpu-prof'] === true ? profileDir : undefined,
          progress,
        },
        load,
      );
    } finally {
      await load.stop();
    }
  }
  if (wants('password')) {
    for (const [label, extra] of [
      ['defaults', {}],
      // One hash at a time leaves a core to the event loop on this 2-core machine.
      ['hashConcurrency 1', { hashConcurrency: 1, hashQueueLimit: 32 }],
    ] as const) {
      progress(`password work (${label}) …`);
      const load = await startLoad();
      const server = await startServer('httpskit', 'httpskit.js', { certFile, keyFile, log: false, store: join(work, `password-${password.length}.json`), ...extra });
      try {
        password.push({
          label,
          result: await runPasswordBench(server, load, {
            concurrent: settings.passwordConcurrent,
            singleChanges: settings.passwordSingleChanges,
            probeRate: settings.probeRate,
            idleSeconds: settings.idleSeconds,
            rounds: settings.passwordRounds,
            progress,
          }),
        });
      } finally {
        await server.stop();
        await load.stop();
      }
    }
  }
  if (wants('users')) {
    progress(`users: GET /user/{name} against GET /api/something at scrypt ln=1; pages of 1,000 of ${settings.usersCount.toLocaleString('en')} users …`);
    const args = ['--rounds', String(settings.usersRounds), '--seconds', String(settings.usersSeconds), '--users', String(settings.usersCount)];
    users = await runJson<UsersResult>('users.js', values.unpinned === true ? [...args, '--unpinned'] : args);
  }
  if (wants('postgres')) {
    const load = await startLoad();
    const pin = values.unpinned !== true && pinToCpu(load.pid, 1);
    try {
      postgres = await runPostgresBench(
        {
          certFile,
          keyFile,
          work,
          rounds: settings.postgresRounds,
          changers: settings.postgresChangers,
          changesEach: settings.postgresChangesEach,
          slices: settings.postgresSlices,
          togetherSeconds: settings.postgresTogetherSeconds,
          proxyRate: settings.postgresProxyRate,
          ledgerOps: settings.postgresLedgerOps,
          authGets: settings.postgresAuthGets,
          seconds: settings.seconds,
          connections: settings.connections,
          pin,
          settleMs: START_UP_SETTLE_MS,
          progress,
        },
        load,
      );
    } finally {
      await load.stop();
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const results: Results = { machine, settings: { ...settings, pinned, durationSeconds: Math.round((Date.now() - started) / 1000) }, http, memory, negotiation, xml, password, store, users, postgres, logshare, library, soak };
const rows = tableRows(results);
const markdown = [
  `Run of ${machine.date}: ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, OpenSSL ${machine.openssl}, ` +
    `${settings.rounds} rounds of ${settings.seconds} s per server and scenario (${settings.slices} slices in alternating order, a fresh process of each server every round), ` +
    `${settings.connections} connections${quick ? ' (--quick)' : ''}` +
    `${pinned ? ', servers on CPU 0 and the load generator on CPU 1' : ''}; ` +
    `took ${Math.round((Date.now() - started) / 1000)} s.`,
  '',
  markdownTable(rows),
  ...(http.length > 0 ? ['', markdownServers(http)] : []),
  ...(negotiation === undefined ? [] : ['', markdownNegotiation(negotiation)]),
  ...(xml === undefined ? [] : ['', markdownXml(xml)]),
].join('\n');
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'latest.json'), `${JSON.stringify({ ...results, table: rows }, null, 2)}\n`);
writeFileSync(join(RESULTS, `${machine.date.replace(/[:.]/g, '-')}.json`), `${JSON.stringify({ ...results, table: rows }, null, 2)}\n`);
writeFileSync(join(RESULTS, 'latest.md'), `${markdown}\n`);
console.log(`\n${markdown}\n`);

if (values['cpu-prof'] === true) {
  for (const name of [...chosenServers, 'library']) {
    const dir = join(profileDir, name);
    if (!existsSync(dir)) continue;
    // One process per round: the last round's profile (file names sort by time).
    const file = readdirSync(dir).sort().at(-1);
    if (file === undefined) continue;
    console.log(`profile ${name} (${file}, last round): self time, heaviest first`);
    for (const line of summarizeProfile(readFileSync(join(dir, file), 'utf8'), 25)) console.log(`  ${line.selfPercent.toFixed(1).padStart(5)}%  ${line.name.padEnd(36)} ${line.where}`);
  }
}
const missed = rows.filter((r) => r.met === false).length;
console.log(`${rows.filter((r) => r.met === true).length} targets met, ${missed} missed. Results: bench/results/latest.json, bench/results/latest.md`);
