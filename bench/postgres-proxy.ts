// GET /api/something through a proxy to three PostgreSQL-store instances against one (the postgres
// section, part 3): does being one of three instances on a database cost CPU per request?
//
// CPU per request depends on the load a process sees: a busy event loop answers several requests
// per wake-up (one epoll_wait, warm caches), an idle one pays a wake-up per request. So the
// comparison that answers the question holds the load per instance equal:
// - "paced": an open loop at R requests/s to one instance, and at 3R to three (R each), R well
//   below what the machine can serve; the same with file-store instances (one at R, three at 3R:
//   what being one of three costs without a database);
//   in slices whose order rotates, summed per setup over the round;
// - "rotating" (the target figure): the same proxies, one to one instance at R and one to three
//   at 3R, loaded at the same time on four instances that share CPU 0, the single instance
//   changing every slice so each of the four is it once a round. The instances then see the same
//   rate, the same number of connections from their proxy (UPSTREAM_SOCKETS each, opened before
//   the slice) and the same core and machine at the same moments; and a process's own
//   CPU-per-request offset (up to ±10% between processes of the same code) falls on both sides
//   alike. The paced rows above load one setup at a time, the single instance always instance 0:
//   its offset is the whole of one side. `coreShared` is the single instance's CPU per request
//   with only its own proxy loaded (a slice of its own, next to the shared one) ÷ the same process
//   at the same rate beside the three others: whether the core's other work changes it;
// - "equal total load" (the earlier method, kept as rows of their own): a closed loop of N
//   connections to one instance and to three (each of three then sees a third of the load), and
//   one instance on N/3 connections as the control that shows the rise is the lighter load.
import type { Child, ServerChild } from './children.js';
import { pinToCpu, startServer } from './children.js';
import type { LoadResult } from './load.js';
import { summarize, type Ratio } from './postgres-password.js';
import { median, rotate, sleep } from './stats.js';

export interface ProxySectionOptions {
  readonly certFile: string;
  readonly keyFile: string;
  readonly work: string;
  readonly databaseUrl: string;
  readonly rounds: number;
  readonly seconds: number;
  /** Closed-loop connections of the "equal total load" rows. */
  readonly connections: number;
  /** Requests per second per instance of the paced rows. */
  readonly ratePerInstance: number;
  readonly pin: boolean;
  readonly settleMs: number;
  readonly progress: (line: string) => void;
}

export type ProxySetup = 'one, paced' | 'three, paced' | 'one file store, paced' | 'three file store, paced' | 'one, N connections' | 'three, N connections' | 'one, N/3 connections';
const PACED: readonly ProxySetup[] = ['one, paced', 'three, paced', 'one file store, paced', 'three file store, paced'];
const CLOSED: readonly ProxySetup[] = ['one, N connections', 'three, N connections', 'one, N/3 connections'];
export const PROXY_SETUPS: readonly ProxySetup[] = [...PACED, ...CLOSED];
/** Slices of `seconds` per paced setup and round. */
const PACED_SLICES = 3;
/** Keep-alive connections per instance of the paced load (at R of a few hundred per second, one or two are busy). */
const PACED_SOCKETS_PER_INSTANCE = 4;
/** Connections from the rotating proxies to each instance, all opened before a slice. */
const UPSTREAM_SOCKETS = 2;
const PATH = '/api/something.json?param1=hello';

/** The rotating comparison for one kind of store, per round. */
export interface RotatingFigures {
  /** CPU per request, µs: of the single instance, of the three (summed CPU ÷ their requests). */
  readonly one: readonly number[];
  readonly three: readonly number[];
  /** three ÷ one, per round. */
  readonly ratio: Ratio;
}

export interface ProxySectionResult {
  /** Per setup, per round: the instances' CPU (user + system) per request, µs; requests per second. */
  readonly cpuMicrosPerRequest: Readonly<Record<ProxySetup, readonly number[]>>;
  readonly requestsPerSecond: Readonly<Record<ProxySetup, readonly number[]>>;
  /** Per setup, per round: connections the proxy opened to each instance during the measured slices (TLS handshakes the instance paid). */
  readonly newConnectionsPerInstance: Readonly<Record<ProxySetup, readonly number[]>>;
  readonly ratePerInstance: number;
  readonly connections: number;
  readonly fewerConnections: number;
  /** three ÷ one at R per instance (the target). */
  readonly ratioPaced: Ratio;
  /** one PostgreSQL-store instance ÷ one file-store instance, both at R. */
  readonly ratioPacedPostgresOverFile: Ratio;
  /** The same question without a database: three file-store instances at 3R ÷ one at R. */
  readonly ratioPacedFiles: Ratio;
  /** three ÷ one on N connections in total, and three ÷ one on N/3 (the earlier rows). */
  readonly ratioEqualTotal: Ratio;
  readonly ratioEqualTotalFewer: Ratio;
  /** The target: one and three at once, the single instance rotating (PostgreSQL), and the same with file-store instances. */
  readonly rotating: { readonly postgres: RotatingFigures; readonly file: RotatingFigures };
  /** The single instance at R with only its proxy loaded ÷ the same at R beside the three, per kind. */
  readonly coreShared: { readonly postgres: Ratio; readonly file: Ratio };
  readonly failed: number;
  /** Paced runs that fell more than 20% short of their rate (the machine could not keep up): their rounds' paced ratios are not counted. */
  readonly shortRuns: number;
}

interface Setup {
  readonly instances: readonly ServerChild[];
  /** The proxy in front of them (its new connections to them are TLS handshakes they pay for). */
  readonly proxy: ServerChild;
  readonly load: (seconds: number) => Readonly<Record<string, unknown>>;
  /** The paced rate, requests/s in total. */
  readonly rate?: number;
}

/** One round of the rotating comparison on four instances: CPU and requests of the single instance and of the three, and per instance. */
interface Rotation {
  oneCpu: number;
  oneOk: number;
  /** The single instance with only its own proxy loaded (the three idle): CPU µs and requests. */
  aloneCpu: number;
  aloneOk: number;
  threeCpu: number;
  threeOk: number;
  /** Per instance over the round's slices, whether single or one of three: CPU µs and requests. */
  readonly instanceCpu: number[];
  readonly instanceOk: number[];
  failed: number;
  short: boolean;
  /** Connections the two proxies opened during the measured slices (should be none). */
  handshakes: number;
}

async function rotation(instances: readonly ServerChild[], toOne: ServerChild, toThree: ServerChild, load: Child, rate: number, seconds: number): Promise<Rotation> {
  const paced = (proxy: ServerChild, n: number, s: number) => ({ kind: 'paced', url: `${proxy.url}${PATH}`, ratePerSecond: rate * n, seconds: s, sockets: PACED_SOCKETS_PER_INSTANCE * n });
  const r: Rotation = { oneCpu: 0, oneOk: 0, aloneCpu: 0, aloneOk: 0, threeCpu: 0, threeOk: 0, instanceCpu: instances.map(() => 0), instanceOk: instances.map(() => 0), failed: 0, short: false, handshakes: 0 };
  for (let single = 0; single < instances.length; single++) {
    const others = instances.filter((_, i) => i !== single);
    await Promise.all([
      toOne.call('retarget', [instances[single]!.url], UPSTREAM_SOCKETS, PATH),
      toThree.call('retarget', others.map((s) => s.url), UPSTREAM_SOCKETS, PATH),
    ]);
    await Promise.all([load.request<LoadResult>(paced(toOne, 1, 0.5)), load.request<LoadResult>(paced(toThree, 3, 0.5))]);
    const opened = async (): Promise<number> => (await Promise.all([toOne.call<number>('opened'), toThree.call<number>('opened')])).reduce((a, b) => a + b, 0);
    await opened();
    const both = async (): Promise<void> => {
      const before = await Promise.all(instances.map((s) => s.usage()));
      const [one, three] = await Promise.all([load.request<LoadResult>(paced(toOne, 1, seconds)), load.request<LoadResult>(paced(toThree, 3, seconds))]);
      const spent = (await Promise.all(instances.map((s) => s.usage()))).map((u, i) => u.cpuMicros - (before[i]?.cpuMicros ?? Number.NaN));
      r.failed += one.failed + three.failed;
      if (one.ok / one.seconds < 0.8 * rate || three.ok / three.seconds < 0.8 * 3 * rate) r.short = true;
      for (const [i, cpu] of spent.entries()) {
        r.instanceCpu[i]! += cpu;
        // The proxy to three sends its requests round robin: a third each.
        r.instanceOk[i]! += i === single ? one.ok : three.ok / 3;
        if (i === single) r.oneCpu += cpu;
        else r.threeCpu += cpu;
      }
      r.oneOk += one.ok;
      r.threeOk += three.ok;
    };
    // The same single instance at the same rate with the three idle: what the core's other work changes.
    const alone = async (): Promise<void> => {
      const before = await instances[single]!.usage();
      const one = await load.request<LoadResult>(paced(toOne, 1, seconds));
      r.aloneCpu += (await instances[single]!.usage()).cpuMicros - before.cpuMicros;
      r.aloneOk += one.ok;
      r.failed += one.failed;
    };
    for (const step of single % 2 === 0 ? [both, alone] : [alone, both]) await step();
    r.handshakes += await opened();
  }
  return r;
}

export async function proxySection(options: ProxySectionOptions, load: Child): Promise<ProxySectionResult> {
  const cpu = new Map<ProxySetup, number[]>(PROXY_SETUPS.map((s) => [s, []]));
  const rate = new Map<ProxySetup, number[]>(PROXY_SETUPS.map((s) => [s, []]));
  const handshakes = new Map<ProxySetup, number[]>(PROXY_SETUPS.map((s) => [s, []]));
  const fewer = Math.ceil(options.connections / 3);
  const r = options.ratePerInstance;
  let failed = 0;
  let shortRuns = 0;
  const shortRounds = new Set<number>();
  const rotating = { postgres: { one: [] as number[], three: [] as number[], ratio: [] as number[] }, file: { one: [] as number[], three: [] as number[], ratio: [] as number[] } };
  const coreShared = { postgres: [] as number[], file: [] as number[] };
  for (let round = 0; round < options.rounds; round++) {
    // Fresh processes every round (see bench/README.md: a process keeps its CPU-per-request offset for life).
    const children: Child[] = [];
    try {
      const common = { certFile: options.certFile, keyFile: options.keyFile, log: false };
      const instances: ServerChild[] = [];
      for (let i = 0; i < 4; i++) instances.push(await startServer(`instance ${i}`, 'httpskit.js', { ...common, store: options.databaseUrl }));
      const fileInstances: ServerChild[] = [];
      for (let i = 0; i < 4; i++) fileInstances.push(await startServer(`file instance ${i}`, 'httpskit.js', { ...common, store: `${options.work}/proxy-${round}-${i}.json` }));
      children.push(...instances, ...fileInstances);
      const proxies: ServerChild[] = [];
      const proxied = async (targets: readonly ServerChild[]): Promise<ServerChild> => {
        const proxy = await startServer('proxy', 'proxy.js', { targets: targets.map((s) => s.url) });
        children.push(proxy);
        proxies.push(proxy);
        return proxy;
      };
      const one = instances.slice(0, 1);
      const three = instances.slice(1);
      const toOne = await proxied(one);
      const toThree = await proxied(three);
      const toFile = await proxied(fileInstances.slice(0, 1));
      const toThreeFiles = await proxied(fileInstances.slice(1));
      // The rotating comparison's pair, pointed at other instances every slice.
      const rotatingOne = await proxied(one);
      const rotatingThree = await proxied(three);
      const url = (proxy: ServerChild): string => `${proxy.url}/api/something.json?param1=hello`;
      const paced = (proxy: ServerChild, n: number) => (seconds: number) => ({ kind: 'paced', url: url(proxy), ratePerSecond: r * n, seconds, sockets: PACED_SOCKETS_PER_INSTANCE * n });
      const closed = (proxy: ServerChild, connections: number) => (seconds: number) => ({ kind: 'keepalive', url: url(proxy), headers: {}, connections, seconds });
      const setups: Record<ProxySetup, Setup> = {
        'one, paced': { instances: one, proxy: toOne, load: paced(toOne, 1), rate: r },
        'three, paced': { instances: three, proxy: toThree, load: paced(toThree, 3), rate: 3 * r },
        'one file store, paced': { instances: fileInstances.slice(0, 1), proxy: toFile, load: paced(toFile, 1), rate: r },
        'three file store, paced': { instances: fileInstances.slice(1), proxy: toThreeFiles, load: paced(toThreeFiles, 3), rate: 3 * r },
        'one, N connections': { instances: one, proxy: toOne, load: closed(toOne, options.connections) },
        'three, N connections': { instances: three, proxy: toThree, load: closed(toThree, options.connections) },
        'one, N/3 connections': { instances: one, proxy: toOne, load: closed(toOne, fewer) },
      };
      // Instances on CPU 0; the proxies beside the load generator on CPU 1 (they are its side).
      if (options.pin) {
        for (const instance of [...instances, ...fileInstances]) pinToCpu(instance.pid, 0);
        for (const proxy of proxies) pinToCpu(proxy.pid, 1);
      }
      await sleep(options.settleMs);
      const totals = new Map<ProxySetup, { cpu: number; ok: number; seconds: number; p50: number[]; handshakes: number }>();
      const measure = async (label: ProxySetup): Promise<void> => {
        const setup = setups[label];
        const used = async (): Promise<number> => (await Promise.all(setup.instances.map((s) => s.usage()))).reduce((sum, u) => sum + u.cpuMicros, 0);
        await setup.proxy.call('opened');
        const before = await used();
        const result = await load.request<LoadResult>(setup.load(options.seconds));
        const spent = (await used()) - before;
        const handshakes = await setup.proxy.call<number>('opened');
        failed += result.failed;
        if (setup.rate !== undefined && result.ok / result.seconds < 0.8 * setup.rate) {
          shortRuns++;
          shortRounds.add(round);
          options.progress(`  proxy round ${round + 1}, ${label}: ${(result.ok / result.seconds).toFixed(0)} req/s, short of ${setup.rate}/s: round not counted`);
        }
        const total = totals.get(label) ?? { cpu: 0, ok: 0, seconds: 0, p50: [], handshakes: 0 };
        totals.set(label, { cpu: total.cpu + spent, ok: total.ok + result.ok, seconds: total.seconds + result.seconds, p50: [...total.p50, result.p50Ms], handshakes: total.handshakes + handshakes });
      };
      // Every instance gets the same warm-up, straight to it at full speed: a process that has served
      // more requests has more of its code optimised (JIT), and a light load shows that most. (The
      // first version warmed instance 0 with the closed-loop runs too; alone it then cost 0.67x of a
      // file-store instance per request, and three instances 1.45x of it.)
      for (const instance of [...instances, ...fileInstances]) {
        await load.request<LoadResult>({ kind: 'keepalive', url: `${instance.url}/api/something.json?param1=hello`, headers: {}, connections: options.connections, seconds: 1 });
      }
      for (const label of PACED) await load.request<LoadResult>(setups[label].load(0.5));
      // The paced setups in short slices, their order rotating (ABC BCA CAB …): other jobs on the
      // machine weigh on a light load's CPU per request most, and so fall on the three alike.
      for (let slice = 0; slice < PACED_SLICES; slice++) {
        for (const label of rotate(PACED, slice + round)) await measure(label);
      }
      // The rotating comparison, PostgreSQL-store instances and file-store ones in turn.
      for (const [kind, group] of rotate([['postgres', instances], ['file', fileInstances]] as const, round)) {
        const r = await rotation(group, rotatingOne, rotatingThree, load, options.ratePerInstance, options.seconds);
        failed += r.failed;
        const oneCpu = r.oneCpu / r.oneOk;
        const threeCpu = r.threeCpu / r.threeOk;
        options.progress(
          `  proxy round ${round + 1}/${options.rounds}, rotating ${kind}: one ${oneCpu.toFixed(1)} µs/request, three ${threeCpu.toFixed(1)} µs/request (ratio ${(threeCpu / oneCpu).toFixed(3)}); ` +
            `the single alone ${(r.aloneCpu / r.aloneOk).toFixed(1)} µs/request; new connections ${r.handshakes}; ` +
            `per instance ${r.instanceCpu.map((c, i) => (c / (r.instanceOk[i] ?? Number.NaN)).toFixed(1)).join(' / ')} µs${r.short ? '; a slice fell short of its rate: not counted' : ''}`,
        );
        if (r.short) continue;
        rotating[kind].one.push(oneCpu);
        rotating[kind].three.push(threeCpu);
        rotating[kind].ratio.push(threeCpu / oneCpu);
        coreShared[kind].push(r.aloneCpu / r.aloneOk / oneCpu);
      }
      for (const label of rotate(CLOSED, round)) {
        await load.request<LoadResult>(setups[label].load(0.5));
        await measure(label);
      }
      for (const label of PROXY_SETUPS) {
        const t = totals.get(label);
        if (t === undefined) continue;
        cpu.get(label)?.push(t.cpu / t.ok);
        rate.get(label)?.push(t.ok / t.seconds);
        handshakes.get(label)?.push(t.handshakes / setups[label].instances.length);
        options.progress(
          `  proxy round ${round + 1}/${options.rounds}, ${label}: ${(t.ok / t.seconds).toFixed(0)} req/s, ${(t.cpu / t.ok).toFixed(1)} µs CPU/request in the instances, p50 ${median(t.p50).toFixed(2)} ms, ` +
            `${(t.handshakes / setups[label].instances.length).toFixed(1)} new connections per instance`,
        );
      }
    } finally {
      for (const child of children) await child.stop();
    }
  }
  const figures = (label: ProxySetup): number[] => cpu.get(label) ?? [];
  const ratio = (ours: ProxySetup, peer: ProxySetup, skip: ReadonlySet<number> = new Set()): Ratio =>
    summarize(figures(ours).flatMap((v, i) => (skip.has(i) ? [] : [v / (figures(peer)[i] ?? Number.NaN)])));
  const record = (map: Map<ProxySetup, number[]>): Record<ProxySetup, number[]> => Object.fromEntries(PROXY_SETUPS.map((s) => [s, map.get(s) ?? []])) as Record<ProxySetup, number[]>;
  return {
    cpuMicrosPerRequest: record(cpu),
    requestsPerSecond: record(rate),
    newConnectionsPerInstance: record(handshakes),
    ratePerInstance: r,
    connections: options.connections,
    fewerConnections: fewer,
    ratioPaced: ratio('three, paced', 'one, paced', shortRounds),
    ratioPacedPostgresOverFile: ratio('one, paced', 'one file store, paced', shortRounds),
    ratioPacedFiles: ratio('three file store, paced', 'one file store, paced', shortRounds),
    ratioEqualTotal: ratio('three, N connections', 'one, N connections'),
    ratioEqualTotalFewer: ratio('three, N connections', 'one, N/3 connections'),
    rotating: {
      postgres: { one: rotating.postgres.one, three: rotating.postgres.three, ratio: summarize(rotating.postgres.ratio) },
      file: { one: rotating.file.one, three: rotating.file.three, ratio: summarize(rotating.file.ratio) },
    },
    coreShared: { postgres: summarize(coreShared.postgres), file: summarize(coreShared.file) },
    failed,
    shortRuns,
  };
}
