// Password-change throughput, file store against PostgreSQL store (the postgres section, part 1).
// Both servers are bound by scrypt (two hashes per change at N=2^17, about a second of CPU), so
// what the database adds is small and the machine's noise is not: other jobs on the 2 cores take
// our hashing threads' time (they run at nice +10) in bursts of seconds. Hence:
// - fresh server processes every round, each on its own users;
// - within a round, short slices (every changer changes its password `changesEach` times, all
//   at once) alternating ABAB…, the first server alternating from round to round, so a drift of
//   the machine's speed falls on both alike and every slice follows one of the other server (in
//   ABBA order the server in the middle ran about 1.5x faster in its two slices back to back:
//   PostgreSQL ÷ file 0.53–0.69 in BAAB rounds, 1.11–1.19 in ABBA rounds of the same run);
// - the ratio is taken per round (all slices summed per server), and the median over rounds quoted;
// - beside it, CPU per change split into the server's event loop (HTTP, TLS, the store's driver),
//   its other threads (scrypt, GC) and the PostgreSQL server's processes (backends, WAL writer,
//   autovacuum; /proc), which is what "the database must not show" means in CPU: the event-loop
//   difference plus the database's own CPU, as a share of a change's whole CPU;
// - and, last in each round, both servers at once (side()): which one's hashing gets the CPU.
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:https';
import { startServer, type ServerChild } from './children.js';
import { put } from './password.js';
import { mainThreadCpuMicros, postgresCpuMicros } from './postgres-cpu.js';
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
}

export interface PasswordSectionResult {
  readonly fileChangesPerSecond: readonly number[];
  readonly postgresChangesPerSecond: readonly number[];
  readonly changesPerRound: number;
  /** changes/s PostgreSQL ÷ file, per round. */
  readonly ratio: Ratio;
  /** CPU per change including the database's processes, PostgreSQL ÷ file, per round. */
  readonly cpuRatio: Ratio;
  /** Both servers at once: the CPU their hashing threads got, PostgreSQL ÷ file, per round. */
  readonly sideBySide: Ratio;
  /** (event-loop CPU difference + the database's CPU) ÷ the file server's whole CPU, per change, per round. */
  readonly databaseShare: Ratio;
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

/**
 * Every user changes its password `each` times, all users at once, on connections of the slice's
 * own (a connection kept from the last slice may be closed by the server's keep-alive time-out
 * just as it is reused: "socket hang up").
 */
async function slice(server: ServerChild, users: readonly User[], each: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: users.length, rejectUnauthorized: false });
  try {
    return await changeAll(server, users, each, agent);
  } finally {
    agent.destroy();
  }
}

async function changeAll(server: ServerChild, users: readonly User[], each: number, agent: Agent): Promise<number> {
  const start = performance.now();
  await Promise.all(
    users.map(async (user) => {
      for (let i = 0; i < each; i++) {
        const next = newPassword();
        const status = await put(server.url, user.name, user.password, next, agent);
        if (status !== 204) throw new Error(`${server.name}: password change answered ${status}`);
        user.password = next;
      }
    }),
  );
  return performance.now() - start;
}

/**
 * Both servers change passwords at the same time (one change per user), each with its own users: the CPU their hashing
 * threads got (all but the event loop) until the first is done, PostgreSQL ÷ file. Under the same
 * load from other jobs at the same moment, a server whose hashing waits on its store (a lock, a
 * round trip, an fsync) gets less of the CPU than the other; the database's own CPU is shared by both.
 */
async function side(servers: readonly ServerChild[], users: ReadonlyArray<readonly User[]>, each: number): Promise<number> {
  const hashing = async (server: ServerChild): Promise<number> => (await server.usage()).cpuMicros - mainThreadCpuMicros(server.pid);
  const before = await Promise.all(servers.map(hashing));
  const runs = servers.map((server, k) => slice(server, users[k] ?? [], each));
  const all = Promise.all(runs);
  await Promise.race(runs.map((run) => run.catch(() => undefined)));
  const after = await Promise.all(servers.map(hashing));
  await all;
  const [file = Number.NaN, postgres = Number.NaN] = after.map((v, k) => v - (before[k] ?? Number.NaN));
  return postgres / file;
}

export async function passwordSection(options: PasswordSectionOptions): Promise<PasswordSectionResult> {
  const perRound: Array<{ file: Tally; postgres: Tally; databaseDuringFile: number; together: number }> = [];
  // See ServerArgs.keepAliveTimeoutMs: a change must not lose its connection while it waits for scrypt.
  const common = { certFile: options.certFile, keyFile: options.keyFile, log: false, keepAliveTimeoutMs: 120_000 };
  for (let round = 0; round < options.rounds; round++) {
    const servers: ServerChild[] = [];
    try {
      servers.push(await startServer('file store', 'httpskit.js', { ...common, store: `${options.work}/password-${round}.json` }));
      servers.push(await startServer('postgres store', 'httpskit.js', { ...common, store: options.databaseUrl }));
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
      const tallies: Tally[] = servers.map(() => ({ changes: 0, ms: 0, cpu: 0, eventLoop: 0, database: 0 }));
      for (let s = 0; s < options.slices; s++) {
        for (const k of order) {
          const server = servers[k]!;
          const tally = tallies[k]!;
          const cpu0 = (await server.usage()).cpuMicros;
          const loop0 = mainThreadCpuMicros(server.pid);
          const db0 = postgresCpuMicros(options.postmaster);
          tally.ms += await slice(server, users[k] ?? [], options.changesEach);
          tally.database += postgresCpuMicros(options.postmaster) - db0;
          tally.eventLoop += mainThreadCpuMicros(server.pid) - loop0;
          tally.cpu += (await server.usage()).cpuMicros - cpu0;
          tally.changes += options.changers * options.changesEach;
        }
      }
      const [file, postgres] = tallies as [Tally, Tally];
      const together = await side(servers, users, 1);
      perRound.push({ file, postgres, databaseDuringFile: file.database, together });
      const rate = (t: Tally): number => (t.changes / t.ms) * 1000;
      const ms = (t: Tally, micros: number): string => (micros / t.changes / 1000).toFixed(1);
      options.progress(
        `  password round ${round + 1}/${options.rounds}: file ${rate(file).toFixed(3)}/s, postgres ${rate(postgres).toFixed(3)}/s (ratio ${(rate(postgres) / rate(file)).toFixed(3)}); ` +
          `CPU ms/change: file loop ${ms(file, file.eventLoop)} + other ${ms(file, file.cpu - file.eventLoop)}, ` +
          `postgres loop ${ms(postgres, postgres.eventLoop)} + other ${ms(postgres, postgres.cpu - postgres.eventLoop)} + database ${ms(postgres, postgres.database + file.database)}; ` +
          `side by side, hashing CPU postgres ÷ file ${together.toFixed(3)}`,
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
  return {
    fileChangesPerSecond: each((r) => (r.file.changes / r.file.ms) * 1000),
    postgresChangesPerSecond: each((r) => (r.postgres.changes / r.postgres.ms) * 1000),
    changesPerRound: options.changers * options.changesEach * options.slices,
    ratio: summarize(each((r) => r.postgres.changes / r.postgres.ms / (r.file.changes / r.file.ms))),
    cpuRatio: summarize(each((r) => (per(r.postgres, r.postgres.cpu) + databaseMs(r)) / per(r.file, r.file.cpu))),
    sideBySide: summarize(each((r) => r.together)),
    databaseShare: summarize(each((r) => (per(r.postgres, r.postgres.eventLoop) - per(r.file, r.file.eventLoop) + databaseMs(r)) / per(r.file, r.file.cpu))),
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
