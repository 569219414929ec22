// Password-change throughput, file store against PostgreSQL store (the postgres section, part 1).
// Both servers are bound by scrypt (two hashes per change at N=2^17, about a second of CPU), so
// what the database adds is small and the machine's noise is not: other jobs on the 2 cores take
// our hashing threads' time (they run at nice +10) in bursts of seconds. Hence two measures:
// - **side by side** (together(), the target figure): both servers run at once, each with its own
//   changers in a closed loop, for a window that starts once both are busy and ends while both
//   still are; each one's changes per second over the window: the hashing CPU it got there, in
//   changes (÷ its CPU per change over the whole run), with the completions counted as a check. Whatever the other jobs on the
//   machine do falls on both at the same moments, and the two servers' hashing threads (same nice
//   value, same session) share the cores evenly, so a server whose hashing waits on its store (a
//   round trip, a lock, an fsync, a slot left idle) completes fewer changes than the other;
// - **alone, in turns** (slices ABAB…, the first server alternating from round to round, every
//   slice after one of the other server's): each server's changes per second when it has the
//   machine's spare CPU to itself; in even slices with its hashing threads pinned one per CPU,
//   in odd ones wherever the scheduler puts them. This ratio follows how much CPU the other jobs leave in each
//   slice: the hashing threads, at nice +10, spend 1–2 times their running time waiting in the
//   run queue behind them (recorded per slice from the kernel's schedstat), so it is reported
//   beside the target, not as it.
// Fresh server processes every round, each on its own users; the ratio is taken per round and
// the median over rounds quoted. Beside them, CPU per change split into the server's event loop
// (HTTP, TLS, the store's driver), its other threads (scrypt, GC) and the PostgreSQL server's
// processes (backends, WAL writer, autovacuum; /proc), which is what "the database must not show"
// means in CPU; and, in the turns, whether hash slots go idle: the hashing threads' time asleep
// (slots × wall time − running − waiting) and the hash gate's gauge sampled every 100 ms.
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { Agent } from 'node:https';
import { HASH_THREAD_NICE } from '../lib/users/scrypt-pool.js';
import { pinThreads, startServer, type ServerChild } from './children.js';
import { put } from './password.js';
import { mainThreadCpuMicros, postgresCpuMicros, threadTimes, threadTimesSince, type ThreadTimes } from './postgres-cpu.js';
import { median, range, sleep } from './stats.js';

export interface PasswordSectionOptions {
  readonly certFile: string;
  readonly keyFile: string;
  readonly work: string;
  readonly databaseUrl: string;
  /** The postmaster's pid, for the database's CPU. */
  readonly postmaster: number;
  readonly rounds: number;
  readonly changers: number;
  readonly changesEach: number;
  readonly slices: number;
  /** Length of the side-by-side window, s (after both servers have been busy for TOGETHER_RAMP_MS). */
  readonly togetherSeconds: number;
  readonly progress: (line: string) => void;
}

/** A figure per round, the median and spread. */
export interface Ratio {
  readonly rounds: readonly number[];
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export const summarize = (values: readonly number[]): Ratio => {
  const [min, max] = range(values);
  return { rounds: values, median: median(values), min, max };
};

/** One server's totals over a round's counted slices. */
interface Tally {
  changes: number;
  ms: number;
  /** Whole process, µs (process.cpuUsage in the server). */
  cpu: number;
  /** The main thread (event loop), µs. */
  eventLoop: number;
  /** The PostgreSQL processes while this server's slices ran, µs. */
  database: number;
  /** The hashing threads (schedstat), ms: on a CPU, runnable but waiting for one. */
  hashRunMs: number;
  hashWaitMs: number;
  /** Hash slots (hashes the process runs at once) × wall time, ms. */
  slotMs: number;
  /** Gate gauge samples, and those with fewer hashes admitted than there are slots. */
  gateSamples: number;
  gateBelowSlots: number;
}

/** Per server, medians over rounds, ms per change (the turns). */
export interface HashThreadTimes {
  /** On a CPU. */
  readonly running: number;
  /** Runnable, waiting for a CPU (other jobs, the event loop, the other hashing thread). */
  readonly waiting: number;
  /** Asleep: hash slots with no hash to run (slots × wall time − running − waiting). */
  readonly idleSlots: number;
  /** Share of the gate gauge's samples with fewer hashes admitted than slots, over all rounds. */
  readonly gateBelowSlots: number;
}

export interface PasswordSectionResult {
  /** Side by side (the target): changes/s of each server while both run (hashing work done ÷ CPU per change), per round. */
  readonly togetherFileChangesPerSecond: readonly number[];
  readonly togetherPostgresChangesPerSecond: readonly number[];
  readonly togetherSeconds: number;
  /** changes/s PostgreSQL ÷ file, both at once, per round. */
  readonly together: Ratio;
  /** changes/s PostgreSQL ÷ file, both at once, counted (completions in whole cycles), per round. */
  readonly togetherCounted: Ratio;
  /** Both at once: share of the hash slots' time with no hash to run (asleep), per round. */
  readonly togetherIdleSlots: { readonly file: Ratio; readonly postgres: Ratio };
  /** Alone in turns: changes/s of each server, per round. */
  readonly fileChangesPerSecond: readonly number[];
  readonly postgresChangesPerSecond: readonly number[];
  readonly changesPerRound: number;
  /** changes/s PostgreSQL ÷ file, alone in turns, per round. */
  readonly ratio: Ratio;
  /** The same over the turns with the hashing threads pinned one per CPU (even slices), and unpinned (odd). */
  readonly ratioPinnedTurns: Ratio;
  readonly ratioUnpinnedTurns: Ratio;
  /** CPU per change including the database's processes, PostgreSQL ÷ file, per round. */
  readonly cpuRatio: Ratio;
  /** Both servers at once: the CPU their hashing threads got, PostgreSQL ÷ file, per round. */
  readonly sideBySide: Ratio;
  /** (event-loop CPU difference + the database's CPU) ÷ the file server's whole CPU, per change, per round. */
  readonly databaseShare: Ratio;
  /** The hashing threads in the turns: where their wall time went. */
  readonly hashThreads: { readonly file: HashThreadTimes; readonly postgres: HashThreadTimes };
  /** Medians over rounds, ms of CPU per change. */
  readonly perChangeMs: {
    readonly file: { readonly eventLoop: number; readonly otherThreads: number };
    readonly postgres: { readonly eventLoop: number; readonly otherThreads: number; readonly database: number };
    /** The database's CPU during the file server's slices (its after-work), per PostgreSQL change. */
    readonly databaseDuringFile: number;
  };
}

type User = { name: string; password: string };
const newPassword = (): string => `bench ${randomBytes(12).toString('base64url')} pass`;
/** Side by side, the window starts this long after both servers' changers start (TLS, first hashes). */
const TOGETHER_RAMP_MS = 3_000;
/** In a turn, the hashing threads are pinned this long after the slice starts. */
const PIN_AFTER_MS = 300;
/** The hashing threads of a server, oldest first. */
const hashThreadIds = (server: ServerChild): number[] => [...threadTimes(server.pid, HASH_THREAD_NICE).keys()].sort((a, b) => a - b);
/** The hash gate's gauge (H-5) is read this often during a turn. */
const GATE_SAMPLE_MS = 100;

/**
 * Every user changes its password `each` times, all users at once, on connections of the slice's
 * own (a connection kept from the last slice may be closed by the server's keep-alive time-out
 * just as it is reused: "socket hang up").
 */
async function slice(server: ServerChild, users: readonly User[], each: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: users.length, rejectUnauthorized: false });
  try {
    const start = performance.now();
    await Promise.all(users.map((user) => changes(server, user, agent, (i) => i < each)));
    return performance.now() - start;
  } finally {
    agent.destroy();
  }
}

/** One user's changes, one after the other, while `more(count so far)`; `done` gets each completion's time. */
async function changes(server: ServerChild, user: User, agent: Agent, more: (count: number) => boolean, done?: number[]): Promise<void> {
  for (let i = 0; more(i); i++) {
    const next = newPassword();
    const status = await put(server.url, user.name, user.password, next, agent);
    if (status !== 204) throw new Error(`${server.name}: password change answered ${status}`);
    user.password = next;
    done?.push(performance.now());
  }
}

/** Reads `httpskit_password_hashes_running` (the gate's admitted hashes) from the H-5 scrape address until stopped. */
function sampleGate(metricsUrl: string, slots: number): { stop(): Promise<{ samples: number; below: number }> } {
  let on = true;
  let samples = 0;
  let below = 0;
  const read = (): Promise<number> =>
    new Promise((resolve) => {
      get(metricsUrl, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(Number(/^httpskit_password_hashes_running (\S+)/m.exec(body)?.[1] ?? Number.NaN)));
      }).on('error', () => resolve(Number.NaN));
    });
  const running = (async () => {
    while (on) {
      const value = await read();
      if (Number.isFinite(value)) {
        samples++;
        if (value < slots) below++;
      }
      await sleep(GATE_SAMPLE_MS);
    }
  })();
  return {
    async stop() {
      on = false;
      await running;
      return { samples, below };
    },
  };
}

/** CPU of every thread but the event loop (the hashing threads, GC), µs. */
const hashingCpu = async (server: ServerChild): Promise<number> => (await server.usage()).cpuMicros - mainThreadCpuMicros(server.pid);

/** A server's side-by-side window: changes/s, hashing CPU (µs), and its hashing threads' schedule (ms). */
interface TogetherFigures {
  /** Changes' worth of hashing done per second in the window: its hashing CPU ÷ the CPU per change over the whole run. */
  readonly rate: number;
  /** Changes completed per second in the window, counted (whole cycles of the changers). */
  readonly counted: number;
  /** Hashing CPU per change over the whole run (ramp and drain included: every change counted), ms. */
  readonly cpuPerChangeMs: number;
  readonly hashingCpu: number;
  readonly threads: ThreadTimes;
  /** Hash slots × window, ms. */
  readonly slotMs: number;
}

/**
 * Both servers change passwords at once, each with its own users in a closed loop, for
 * `seconds` after TOGETHER_RAMP_MS: each one's changes per second over the window, the CPU its
 * hashing threads got (all but the event loop) and where their time went. Other jobs on the
 * machine weigh on both at the same moments; the database's own CPU is shared by both. At the
 * window's start each server's hashing threads are pinned one to a CPU (CPU 0, CPU 1): every CPU
 * then runs one of each server's, at the same nice value, so neither server can get more of the
 * machine by where the scheduler happened to place its threads (unpinned, a 12 s window once gave
 * one server's hashing 14% more CPU than the other's). A hash slot that waits on the store leaves
 * its CPU to the other server's thread, and its server completes fewer changes.
 */
async function together(servers: readonly ServerChild[], users: ReadonlyArray<readonly User[]>, slots: readonly number[], seconds: number): Promise<TogetherFigures[]> {
  const agents = servers.map((_, k) => new Agent({ keepAlive: true, maxSockets: users[k]?.length ?? 1, rejectUnauthorized: false }));
  const done: number[][] = servers.map(() => []);
  const from = performance.now() + TOGETHER_RAMP_MS;
  const to = from + seconds * 1000;
  const snapshot = (server: ServerChild) => hashingCpu(server).then((cpu) => ({ cpu, threads: threadTimes(server.pid, HASH_THREAD_NICE) }));
  try {
    const start = await Promise.all(servers.map(hashingCpu));
    const marks = (async () => {
      await sleep(from - performance.now());
      for (const server of servers) pinThreads(hashThreadIds(server));
      const before = await Promise.all(servers.map(snapshot));
      await sleep(to - performance.now());
      const after = await Promise.all(servers.map(snapshot));
      return after.map((a, k) => ({ cpu: a.cpu - (before[k]?.cpu ?? Number.NaN), threads: threadTimesSince(before[k]?.threads ?? new Map(), a.threads) }));
    })();
    await Promise.all(servers.flatMap((server, k) => (users[k] ?? []).map((user) => changes(server, user, agents[k]!, () => performance.now() < to, done[k]))));
    const spent = await marks;
    const end = await Promise.all(servers.map(hashingCpu));
    return done.map((times, k) => {
      // Completions are few at this cost (under 1/s on the loaded machine) and come in bursts, so
      // a count over the window moves by a burst's width from round to round. The work done does
      // not: the hashing CPU the server got in the window, in changes (its CPU per change over the
      // whole run, where every change is counted, ramp and drain included), is its throughput in
      // the window; a slot left idle or a costlier change both lower it.
      const cpuPerChange = ((end[k] ?? Number.NaN) - (start[k] ?? Number.NaN)) / times.length;
      const cpu = spent[k]?.cpu ?? Number.NaN;
      // The count, as a cross-check: changers move in step (the hashing threads take them in FIFO
      // order), so from the first completion in the window to the last one a whole number of
      // cycles later (one completion per changer each) the bursts cancel.
      const inside = times.filter((t) => t >= from && t <= to);
      const cycle = users[k]?.length ?? 1;
      const span = Math.floor((inside.length - 1) / cycle) * cycle;
      const first = inside[0];
      const last = inside[span];
      return {
        rate: cpu / cpuPerChange / seconds,
        counted: span <= 0 || first === undefined || last === undefined ? Number.NaN : (span / (last - first)) * 1000,
        cpuPerChangeMs: cpuPerChange / 1000,
        hashingCpu: cpu,
        threads: spent[k]?.threads ?? { runMs: Number.NaN, waitMs: Number.NaN },
        slotMs: (slots[k] ?? Number.NaN) * seconds * 1000,
      };
    });
  } finally {
    for (const agent of agents) agent.destroy();
  }
}

export async function passwordSection(options: PasswordSectionOptions): Promise<PasswordSectionResult> {
  const perRound: Array<{ file: Tally; postgres: Tally; databaseDuringFile: number; both: TogetherFigures[]; pinnedTurns: number; unpinnedTurns: number }> = [];
  // See ServerArgs.keepAliveTimeoutMs: a change must not lose its connection while it waits for scrypt.
  // Metrics on for both (the gate's gauge is read in the turns; the same listener costs both alike).
  const common = { certFile: options.certFile, keyFile: options.keyFile, log: false, keepAliveTimeoutMs: 120_000, metrics: true };
  for (let round = 0; round < options.rounds; round++) {
    const servers: ServerChild[] = [];
    try {
      servers.push(await startServer('file store', 'httpskit.js', { ...common, store: `${options.work}/password-${round}.json` }));
      servers.push(await startServer('postgres store', 'httpskit.js', { ...common, store: options.databaseUrl }));
      const metricsUrls = await Promise.all(servers.map((server) => server.call<string>('metricsUrl')));
      const slots = await Promise.all(servers.map((server) => server.call<number>('hashesAtOnce')));
      const users = servers.map(() => Array.from({ length: options.changers }, (_, i) => ({ name: `r${round}-user-${i}`, password: newPassword() })));
      for (const [k, server] of servers.entries()) {
        for (const user of users[k] ?? []) await server.call('addUser', user.name, user.password);
      }
      // Even rounds start with the file server, odd ones with PostgreSQL; the warm-ups run in the
      // same order, so the first counted slice too follows the other server's work.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      // Warm-up, not counted: connections (TLS, the database pool), JIT, the hashing threads.
      for (const k of order) await slice(servers[k]!, users[k] ?? [], 1);
      await sleep(500);
      const pinnedTurns = servers.map(() => ({ ms: 0, changes: 0 }));
      const unpinnedTurns = servers.map(() => ({ ms: 0, changes: 0 }));
      const tallies: Tally[] = servers.map(() => ({ changes: 0, ms: 0, cpu: 0, eventLoop: 0, database: 0, hashRunMs: 0, hashWaitMs: 0, slotMs: 0, gateSamples: 0, gateBelowSlots: 0 }));
      for (let s = 0; s < options.slices; s++) {
        for (const k of order) {
          const server = servers[k]!;
          const tally = tallies[k]!;
          const cpu0 = (await server.usage()).cpuMicros;
          const loop0 = mainThreadCpuMicros(server.pid);
          const db0 = postgresCpuMicros(options.postmaster);
          const threads0 = threadTimes(server.pid, HASH_THREAD_NICE);
          const gate = sampleGate(metricsUrls[k]!, slots[k]!);
          // Even slices: the hashing threads one to a CPU, as side by side, once the slice's first
          // hashes have started them (an idle worker ends after 10 s, and the other server's turn
          // may be longer); odd slices: wherever the scheduler puts them (runs C–E's method).
          const pin = s % 2 === 0;
          const pinned = sleep(PIN_AFTER_MS).then(() => pinThreads(hashThreadIds(server), !pin));
          const ms = await slice(server, users[k] ?? [], options.changesEach);
          await pinned;
          const mode = pin ? pinnedTurns[k]! : unpinnedTurns[k]!;
          mode.ms += ms;
          mode.changes += options.changers * options.changesEach;
          const { samples, below } = await gate.stop();
          const hashThreads = threadTimesSince(threads0, threadTimes(server.pid, HASH_THREAD_NICE));
          tally.ms += ms;
          tally.database += postgresCpuMicros(options.postmaster) - db0;
          tally.eventLoop += mainThreadCpuMicros(server.pid) - loop0;
          tally.cpu += (await server.usage()).cpuMicros - cpu0;
          tally.changes += options.changers * options.changesEach;
          tally.hashRunMs += hashThreads.runMs;
          tally.hashWaitMs += hashThreads.waitMs;
          tally.slotMs += slots[k]! * ms;
          tally.gateSamples += samples;
          tally.gateBelowSlots += below;
        }
      }
      const [file, postgres] = tallies as [Tally, Tally];
      const both = await together(servers, users, slots, options.togetherSeconds);
      const turnRatio = (turns: ReadonlyArray<{ ms: number; changes: number }>): number =>
        (turns[1]?.changes ?? Number.NaN) / (turns[1]?.ms ?? Number.NaN) / ((turns[0]?.changes ?? Number.NaN) / (turns[0]?.ms ?? Number.NaN));
      perRound.push({ file, postgres, databaseDuringFile: file.database, both, pinnedTurns: turnRatio(pinnedTurns), unpinnedTurns: turnRatio(unpinnedTurns) });
      const rate = (t: Tally): number => (t.changes / t.ms) * 1000;
      const ms = (t: Tally, micros: number): string => (micros / t.changes / 1000).toFixed(1);
      const threads = (t: Tally): string =>
        `hashing threads ${(t.hashRunMs / t.changes).toFixed(0)} running + ${(t.hashWaitMs / t.changes).toFixed(0)} waiting + ${((t.slotMs - t.hashRunMs - t.hashWaitMs) / t.changes).toFixed(0)} idle ms/change, gate below ${t.gateBelowSlots}/${t.gateSamples}`;
      const idle = (t: TogetherFigures): string => `${(((t.slotMs - t.threads.runMs - t.threads.waitMs) / t.slotMs) * 100).toFixed(1)}%`;
      const [withFile, withPostgres] = both as [TogetherFigures, TogetherFigures];
      options.progress(
        `  password round ${round + 1}/${options.rounds}: side by side file ${withFile.rate.toFixed(3)}/s, postgres ${withPostgres.rate.toFixed(3)}/s (ratio ${(withPostgres.rate / withFile.rate).toFixed(3)}; ` +
          `counted ${(withPostgres.counted / withFile.counted).toFixed(3)}; hashing CPU ${(withPostgres.hashingCpu / withFile.hashingCpu).toFixed(3)}, per change ${withFile.cpuPerChangeMs.toFixed(0)} / ${withPostgres.cpuPerChangeMs.toFixed(0)} ms; ` +
          `hash slots idle ${idle(withFile)} / ${idle(withPostgres)}); ` +
          `in turns file ${rate(file).toFixed(3)}/s, postgres ${rate(postgres).toFixed(3)}/s (ratio ${(rate(postgres) / rate(file)).toFixed(3)}; pinned ${perRound.at(-1)?.pinnedTurns.toFixed(3)}, unpinned ${perRound.at(-1)?.unpinnedTurns.toFixed(3)}); ` +
          `CPU ms/change: file loop ${ms(file, file.eventLoop)} + other ${ms(file, file.cpu - file.eventLoop)}, ` +
          `postgres loop ${ms(postgres, postgres.eventLoop)} + other ${ms(postgres, postgres.cpu - postgres.eventLoop)} + database ${ms(postgres, postgres.database + file.database)}; ` +
          `file ${threads(file)}; postgres ${threads(postgres)}`,
      );
    } finally {
      for (const server of servers) await server.stop();
    }
  }
  const each = (pick: (r: (typeof perRound)[number]) => number): number[] => perRound.map(pick);
  const per = (t: Tally, micros: number): number => micros / t.changes / 1000;
  // The database's CPU in the file server's slices is its after-work of the PostgreSQL slices
  // before them (autovacuum, WAL writer): charged to PostgreSQL.
  const databaseMs = (r: (typeof perRound)[number]): number => per(r.postgres, r.postgres.database + r.databaseDuringFile);
  const pair = (r: (typeof perRound)[number]): [TogetherFigures, TogetherFigures] => r.both as [TogetherFigures, TogetherFigures];
  const idleShare = (t: TogetherFigures): number => (t.slotMs - t.threads.runMs - t.threads.waitMs) / t.slotMs;
  const threadFigures = (pick: (r: (typeof perRound)[number]) => Tally): HashThreadTimes => {
    const tallies = perRound.map(pick);
    const samples = tallies.reduce((sum, t) => sum + t.gateSamples, 0);
    return {
      running: median(tallies.map((t) => t.hashRunMs / t.changes)),
      waiting: median(tallies.map((t) => t.hashWaitMs / t.changes)),
      idleSlots: median(tallies.map((t) => (t.slotMs - t.hashRunMs - t.hashWaitMs) / t.changes)),
      gateBelowSlots: samples === 0 ? Number.NaN : tallies.reduce((sum, t) => sum + t.gateBelowSlots, 0) / samples,
    };
  };
  return {
    togetherFileChangesPerSecond: each((r) => pair(r)[0].rate),
    togetherPostgresChangesPerSecond: each((r) => pair(r)[1].rate),
    togetherSeconds: options.togetherSeconds,
    together: summarize(each((r) => pair(r)[1].rate / pair(r)[0].rate)),
    togetherCounted: summarize(each((r) => pair(r)[1].counted / pair(r)[0].counted)),
    togetherIdleSlots: { file: summarize(each((r) => idleShare(pair(r)[0]))), postgres: summarize(each((r) => idleShare(pair(r)[1]))) },
    fileChangesPerSecond: each((r) => (r.file.changes / r.file.ms) * 1000),
    postgresChangesPerSecond: each((r) => (r.postgres.changes / r.postgres.ms) * 1000),
    changesPerRound: options.changers * options.changesEach * options.slices,
    ratio: summarize(each((r) => r.postgres.changes / r.postgres.ms / (r.file.changes / r.file.ms))),
    ratioPinnedTurns: summarize(each((r) => r.pinnedTurns)),
    ratioUnpinnedTurns: summarize(each((r) => r.unpinnedTurns)),
    cpuRatio: summarize(each((r) => (per(r.postgres, r.postgres.cpu) + databaseMs(r)) / per(r.file, r.file.cpu))),
    sideBySide: summarize(each((r) => pair(r)[1].hashingCpu / pair(r)[0].hashingCpu)),
    databaseShare: summarize(each((r) => (per(r.postgres, r.postgres.eventLoop) - per(r.file, r.file.eventLoop) + databaseMs(r)) / per(r.file, r.file.cpu))),
    hashThreads: { file: threadFigures((r) => r.file), postgres: threadFigures((r) => r.postgres) },
    perChangeMs: {
      file: { eventLoop: median(each((r) => per(r.file, r.file.eventLoop))), otherThreads: median(each((r) => per(r.file, r.file.cpu - r.file.eventLoop))) },
      postgres: {
        eventLoop: median(each((r) => per(r.postgres, r.postgres.eventLoop))),
        otherThreads: median(each((r) => per(r.postgres, r.postgres.cpu - r.postgres.eventLoop))),
        database: median(each(databaseMs)),
      },
      databaseDuringFile: median(each((r) => per(r.postgres, r.databaseDuringFile))),
    },
  };
}
