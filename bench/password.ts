// Password work: one change at the default scrypt cost (N=2^17, r=8, p=1), then the service's
// responsiveness while 8 changes hash at once (event-loop delay inside the server, GET latency
// seen by a client) against the same figures with nothing hashing, and the server's peak RSS.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:https';
import type { Child, ServerChild } from './children.js';
import type { ProbeResult } from './load.js';
import type { EventLoopDelay } from './servers/control.js';
import { median, percentile, sleep } from './stats.js';

export interface PasswordResult {
  /** Wall time of one PUT /user/NAME/password (verify the old, hash the new, store write), ms. */
  readonly changeMs: readonly number[];
  readonly changeMedianMs: number;
  readonly concurrentChanges: number;
  /** Wall time until all concurrent changes were answered, ms. */
  readonly concurrentWallMs: number;
  readonly statuses: readonly number[];
  /** The round whose ratio is the median: its windows with nothing hashing and with the changes. */
  readonly idle: Responsiveness;
  readonly busy: Responsiveness;
  /** busy GET p99 / idle GET p99, median over the rounds (target at most 1.5); and each round's. */
  readonly getP99Ratio: number;
  readonly getP99Ratios: readonly number[];
  readonly rssBeforeMiB: number;
  readonly peakRssMiB: number;
  /** Hashes admitted at once (the service's hashConcurrency), and running at once (within the process-wide limit). */
  readonly hashConcurrency: number;
  readonly hashesAtOnce: number;
  /** The RSS before + 128 MiB per hash running at once (scrypt's part of the bound). */
  readonly boundMiB: number;
}

export interface Responsiveness {
  readonly eventLoop: EventLoopDelay;
  readonly getP50Ms: number;
  readonly getP99Ms: number;
  readonly gets: number;
}

const newPassword = (): string => `bench ${randomBytes(12).toString('base64url')} pass`;

/** GET once through `agent`: opens (and keeps) a TLS connection. */
function get(url: string, agent: Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    request(url, { agent, rejectUnauthorized: false }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    })
      .on('error', reject)
      .end();
  });
}

export function put(url: string, name: string, current: string, next: string, agent: Agent | false = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/user/${encodeURIComponent(name)}/password`,
      {
        method: 'PUT',
        rejectUnauthorized: false,
        agent,
        headers: {
          authorization: `Basic ${Buffer.from(`${name}:${current}`).toString('base64')}`,
          'content-type': 'text/plain; charset=utf-8',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(next);
  });
}

export async function runPasswordBench(
  server: ServerChild,
  load: Child,
  options: { concurrent: number; singleChanges: number; probeRate: number; idleSeconds: number; rounds: number; progress: (line: string) => void },
): Promise<PasswordResult> {
  const hashConcurrency = await server.call<number>('hashConcurrency');
  const hashesAtOnce = await server.call<number>('hashesAtOnce');
  const users = Array.from({ length: options.concurrent + 1 }, (_, i) => ({ name: `bench-user-${i}`, password: newPassword() }));
  for (const user of users) await server.call('addUser', user.name, user.password);
  const change = async (user: { name: string; password: string }, agent: Agent | false = false): Promise<number> => {
    const next = newPassword();
    const status = await put(server.url, user.name, user.password, next, agent);
    if (status === 204) user.password = next;
    return status;
  };

  // One change at a time.
  const changeMs: number[] = [];
  const solo = users[0]!;
  for (let i = 0; i < options.singleChanges; i++) {
    const start = performance.now();
    const status = await change(solo);
    if (status !== 204) throw new Error(`password change answered ${status}`);
    changeMs.push(performance.now() - start);
  }
  options.progress(`  one change: ${changeMs.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  const rssBefore = (await server.usage()).rssKiB;

  // Rounds, each a window with nothing hashing and a window with `concurrent` changes at once; the
  // ratio is taken within each round and the median quoted (as for the HTTP figures): one window's
  // p99 rests on its few slowest GETs, which other jobs on the machine can decide alone.
  const probeUrl = `${server.url}/api/something.json?param1=hello`;
  const soloMs = median(changeMs);
  const rounds: Array<{ idle: Responsiveness; busy: Responsiveness; ratio: number; wallMs: number; statuses: number[] }> = [];
  for (let round = 0; round < options.rounds; round++) {
    // Nothing hashing: GETs at a steady rate, event-loop delay sampled in the server.
    await server.eldStart();
    const idleProbe = await load.request<ProbeResult>({ kind: 'probe', url: probeUrl, ratePerSecond: options.probeRate, seconds: options.idleSeconds });
    const idleLoop = await server.eldStop();

    // The same, with `concurrent` changes started together once the probe runs.
    const probeSeconds = Math.ceil(1 + (soloMs * options.concurrent * 2) / 1000 + 2);
    const busyProbe = load.request<ProbeResult>({ kind: 'probe', url: probeUrl, ratePerSecond: options.probeRate, seconds: probeSeconds });
    await sleep(1000);
    // The changes' TLS connections are opened before the window: what it measures is hashing, not
    // 8 handshakes at one instant (about 1 ms of event-loop CPU each).
    const agent = new Agent({ keepAlive: true, maxSockets: options.concurrent });
    await Promise.all(users.slice(1).map(() => get(probeUrl, agent)));
    await server.eldStart();
    const windowStart = performance.timeOrigin + performance.now();
    const statuses = await Promise.all(users.slice(1).map((user) => change(user, agent)));
    const windowEnd = performance.timeOrigin + performance.now();
    agent.destroy();
    const busyLoop = await server.eldStop();
    const probe = await busyProbe;
    const inWindow = probe.samples.filter(([at]) => at >= windowStart && at <= windowEnd).map(([, ms]) => ms);
    if (probe.samples.at(-1)?.[0] !== undefined && (probe.samples.at(-1)?.[0] as number) < windowEnd) {
      options.progress('  warning: the GET probe ended before the changes did');
    }
    const idleLatencies = idleProbe.samples.map(([, ms]) => ms);
    const idle: Responsiveness = { eventLoop: idleLoop, getP50Ms: percentile(idleLatencies, 50), getP99Ms: percentile(idleLatencies, 99), gets: idleLatencies.length };
    const busy: Responsiveness = { eventLoop: busyLoop, getP50Ms: percentile(inWindow, 50), getP99Ms: percentile(inWindow, 99), gets: inWindow.length };
    rounds.push({ idle, busy, ratio: busy.getP99Ms / idle.getP99Ms, wallMs: windowEnd - windowStart, statuses });
    options.progress(
      `  round ${round + 1}/${options.rounds}: ${options.concurrent} changes at once in ${(windowEnd - windowStart).toFixed(0)} ms, ` +
        `statuses ${[...new Set(statuses)].join(',')}; GET p99 idle ${idle.getP99Ms.toFixed(2)} ms, busy ${busy.getP99Ms.toFixed(2)} ms`,
    );
  }
  const peak = (await server.usage()).maxRssKiB;
  // The figures shown beside the ratio are those of the round whose ratio is the median.
  const ratios = rounds.map((r) => r.ratio);
  const ratio = median(ratios);
  const shown = rounds.reduce((best, r) => (Math.abs(r.ratio - ratio) < Math.abs(best.ratio - ratio) ? r : best));
  const { idle, busy } = shown;
  return {
    changeMs,
    changeMedianMs: soloMs,
    concurrentChanges: options.concurrent,
    concurrentWallMs: shown.wallMs,
    statuses: rounds.flatMap((r) => r.statuses),
    idle,
    busy,
    getP99Ratio: ratio,
    getP99Ratios: ratios,
    rssBeforeMiB: rssBefore / 1024,
    peakRssMiB: peak / 1024,
    hashConcurrency,
    hashesAtOnce,
    boundMiB: rssBefore / 1024 + hashesAtOnce * 128,
  };
}
