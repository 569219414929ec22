// The load generator: its own process (so its CPU is not the servers'), driven over IPC by run.ts.
//   keepalive — autocannon, persistent connections, for a fixed time
//   newconn   — every request on a new TLS connection (full handshake, no session resumption)
//   probe     — a steady trickle of GETs on persistent connections, each timed, for latency under
//               other work (the password section)
//   paced     — open loop at a fixed rate on persistent connections (http or https), for CPU per
//               request at a load held equal between setups (the postgres section's proxy; with
//               `raw`, the lean HTTPS client of paced-tls.ts, for logshare.ts)
//   h2        — h2load (Debian's nghttp2-client): one HTTP/2 connection, up to N streams in flight
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { connect } from 'node:tls';
import { pacedTls, type KeptSocket } from './paced-tls.js';

/** One request of a keep-alive run's cycle (autocannon's `requests`), or of a run's preparation; `path` is on the run's URL's origin (`{n}` in it: a new number each time). */
export interface LoadStep {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export type LoadRequest =
  | {
      readonly id: number;
      readonly kind: 'keepalive';
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly connections: number;
      readonly seconds: number;
      /** GET unless given (the library section's PUT, with its body). */
      readonly method?: 'GET' | 'PUT';
      readonly body?: string;
      /** Each connection sends these in turn, again and again, instead of one request to `url`. */
      readonly requests?: readonly LoadStep[];
      /** Sent in order before the run (each on its own connection), each must answer 2xx: they put the server in the state the cycle starts from. */
      readonly prepare?: readonly LoadStep[];
    }
  | { readonly id: number; readonly kind: 'newconn'; readonly url: string; readonly concurrency: number; readonly seconds: number }
  | { readonly id: number; readonly kind: 'probe'; readonly url: string; readonly ratePerSecond: number; readonly seconds: number }
  | {
      readonly id: number;
      readonly kind: 'paced';
      readonly url: string;
      readonly ratePerSecond: number;
      readonly seconds: number;
      readonly sockets: number;
      /** Keep the connections open for the next paced run to the same URL (a warm-up, then a measured run without handshakes). */
      readonly keep?: boolean;
      /** HTTPS only: the lean client of paced-tls.ts (raw TLS sockets) instead of node:https's Agent. */
      readonly raw?: boolean;
    }
  | { readonly id: number; readonly kind: 'h2'; readonly url: string; readonly headers: Readonly<Record<string, string>>; readonly streams: number; readonly seconds: number };

export interface LoadResult {
  /** Responses with a 2xx status. */
  readonly ok: number;
  /** Non-2xx responses and connection errors. */
  readonly failed: number;
  readonly seconds: number;
  /** Latency of each 2xx response, ms, in completion order. */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface ProbeResult extends LoadResult {
  /** Completion time (epoch ms) and latency (ms) of each response, for windowing by the parent. */
  readonly samples: ReadonlyArray<readonly [at: number, latencyMs: number]>;
}

function percentile(values: Float64Array | number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** One request, answered 2xx, or an error that says what came back. */
function sendStep(origin: string, step: LoadStep): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${step.path}`, { method: step.method, headers: { ...step.headers }, rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      res.on('end', () => ((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`${step.method} ${step.path}: ${res.statusCode ?? 0}`))));
    });
    req.on('error', reject);
    req.end(step.body);
  });
}

async function keepalive(cmd: Extract<LoadRequest, { kind: 'keepalive' }>): Promise<LoadResult> {
  for (const step of cmd.prepare ?? []) await sendStep(new URL(cmd.url).origin, step);
  // `{n}` in a step's path: a number new on every request (distinct targets, for caches keyed by them).
  let counter = 0;
  const requests = cmd.requests?.map((step) => ({
    method: step.method,
    path: step.path,
    headers: { ...step.headers },
    ...(step.body === undefined ? {} : { body: step.body }),
    ...(step.path.includes('{n}') ? { setupRequest: (req: { path: string }) => ({ ...req, path: step.path.replace('{n}', (++counter).toString(36)) }) } : {}),
  }));
  return new Promise((resolve, reject) => {
    // autocannon's histogram keeps whole milliseconds; record each latency ourselves for µs.
    const latencies: number[] = [];
    let failed = 0;
    const instance = autocannon(
      {
        url: cmd.url,
        headers: { ...cmd.headers },
        connections: cmd.connections,
        pipelining: 1,
        duration: cmd.seconds,
        ...(cmd.method === undefined ? {} : { method: cmd.method }),
        ...(cmd.body === undefined ? {} : { body: cmd.body }),
        ...(requests === undefined ? {} : { requests }),
      } as autocannon.Options,
      (error, result) => {
        if (error !== null && error !== undefined) {
          reject(error);
          return;
        }
        resolve({ ok: latencies.length, failed: failed + result.errors, seconds: result.duration, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) });
      },
    );
    instance.on('response', (_client, status, _bytes, responseTime) => {
      if (status >= 200 && status < 300) latencies.push(responseTime);
      else failed++;
    });
  });
}

// Minimal HTTP/1.1 over a fresh TLS socket; "Connection: close" makes the server end it.
async function newconn(cmd: Extract<LoadRequest, { kind: 'newconn' }>): Promise<LoadResult> {
  const url = new URL(cmd.url);
  const port = Number(url.port);
  const head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`;
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now();
  const deadline = start + cmd.seconds * 1000;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      let response = '';
      const socket = connect({ host: url.hostname, port, rejectUnauthorized: false }, () => socket.write(head));
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (response += chunk));
      socket.on('error', () => {});
      socket.on('close', () => {
        if (response.startsWith('HTTP/1.1 2')) latencies.push(performance.now() - t0);
        else failed++;
        resolve();
      });
    });
  await Promise.all(
    Array.from({ length: cmd.concurrency }, async () => {
      while (performance.now() < deadline) await one();
    }),
  );
  return { ok: latencies.length, failed, seconds: (performance.now() - start) / 1000, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/** Keep-alive sockets of the probe: enough for 200 req/s at 40 ms; beyond, requests queue (and that counts). */
const PROBE_SOCKETS = 8;

// Fixed-rate GETs (open loop: a slow response does not delay the next one) on a keep-alive agent.
async function probe(cmd: Extract<LoadRequest, { kind: 'probe' }>): Promise<ProbeResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: PROBE_SOCKETS, rejectUnauthorized: false });
  const samples: Array<readonly [number, number]> = [];
  let failed = 0;
  const get = (): Promise<number> =>
    new Promise((resolve) => {
      const req = request(cmd.url, { agent, headers: { accept: 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });
  // Open the sockets first: TLS handshakes are not what this probe times.
  for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: PROBE_SOCKETS }, get));
  const interval = 1000 / cmd.ratePerSecond;
  const total = Math.round(cmd.seconds * cmd.ratePerSecond);
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const t0 = performance.now();
    pending.push(
      get().then((status) => {
        if (status === 200) samples.push([performance.timeOrigin + performance.now(), performance.now() - t0]);
        else failed++;
      }),
    );
  }
  await Promise.all(pending);
  agent.destroy();
  const latencies = samples.map(([, ms]) => ms);
  return { ok: samples.length, failed, seconds: (performance.now() - start) / 1000, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), samples };
}

/**
 * Open loop at `ratePerSecond`: every millisecond tick sends the requests that have fallen due,
 * whether or not earlier ones are answered, so the server sees the same arrival rate whatever its
 * speed (a closed loop would give a faster setup more requests). `sockets` bounds the connections;
 * beyond them requests queue in the agent, and their latency shows it.
 */
async function paced(cmd: Extract<LoadRequest, { kind: 'paced' }>, kept: Map<string, Agent | HttpAgent>): Promise<LoadResult> {
  const https = cmd.url.startsWith('https:');
  const agent =
    kept.get(cmd.url) ?? (https ? new Agent({ keepAlive: true, maxSockets: cmd.sockets, rejectUnauthorized: false }) : new HttpAgent({ keepAlive: true, maxSockets: cmd.sockets }));
  kept.delete(cmd.url);
  const send = https ? request : httpRequest;
  const latencies: number[] = [];
  let failed = 0;
  const get = (): Promise<void> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = send(cmd.url, { agent, headers: { accept: 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) latencies.push(performance.now() - t0);
          else failed++;
          resolve();
        });
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  // Open the connections first (these requests count: the server did answer them).
  await Promise.all(Array.from({ length: cmd.sockets }, get));
  const total = Math.round(cmd.seconds * cmd.ratePerSecond);
  const pending: Promise<void>[] = [];
  const start = performance.now();
  while (pending.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * cmd.ratePerSecond) + 1);
    while (pending.length < due) pending.push(get());
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(pending);
  const seconds = (performance.now() - start) / 1000;
  if (cmd.keep === true) kept.set(cmd.url, agent);
  else agent.destroy();
  return { ok: latencies.length, failed, seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/**
 * HTTP/2 load with h2load: one connection, `streams` requests in flight (h2load is C and
 * single-threaded, so it drives one connection harder than a node:http2 client on the same core).
 * Every run sends a fixed number of requests, all answered and counted: the first against a URL
 * (the harness's warm-up) WARM_UP_RATE × `seconds`, later ones the last measured rate × `seconds`.
 * (A timed run, -D, stops with up to `streams` requests sent and unanswered, work the server did
 * that no response counts.)
 */
const WARM_UP_RATE = 4_000;

function h2(cmd: Extract<LoadRequest, { kind: 'h2' }>, rates: Map<string, number>): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'h2load-'));
  const logFile = join(dir, 'requests.tsv');
  const rate = rates.get(cmd.url);
  // The warm-up guesses the rate: h2load's own timed mode (-D) once kept sending for minutes past its
  // 0.5 s on this loaded machine (its timer never fired), so every run sends a fixed number.
  const amount = ['-n', String(Math.max(cmd.streams * 10, Math.round((rate ?? WARM_UP_RATE) * cmd.seconds)))];
  const headers = Object.entries(cmd.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const args = ['-c', '1', '-m', String(cmd.streams), ...amount, ...headers, `--log-file=${logFile}`, cmd.url];
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn('h2load', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    // A run that hangs fails the benchmark with a message instead of stalling it.
    const watchdog = setTimeout(() => child.kill(), Math.max(60_000, cmd.seconds * 30_000));
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(watchdog);
      const seconds = (performance.now() - start) / 1000;
      try {
        if (code !== 0) throw new Error(`h2load exited with ${String(code)}: ${out.slice(-500)}`);
        if (!/Application protocol: h2/.test(out)) throw new Error(`h2load did not negotiate h2: ${out.slice(-500)}`);
        const latencies: number[] = [];
        let failed = 0;
        for (const line of readFileSync(logFile, 'latin1').split('\n')) {
          const [, status, micros] = line.split('\t');
          if (status === undefined || micros === undefined) continue;
          if (status.startsWith('2')) latencies.push(Number(micros) / 1000);
          else failed++;
        }
        const m = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
        if (m === null) throw new Error(`h2load printed no request line: ${out.slice(-500)}`);
        // Responses the log does not hold (errors, time-outs) are failures too.
        failed += Number(m[6]) + Number(m[7]);
        rates.set(cmd.url, latencies.length / seconds);
        resolve({ ok: latencies.length, failed, seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) });
      } catch (error) {
        reject(error as Error);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/** The last h2 rate per URL (see h2()); a URL is a server process, new every round. */
const h2Rates = new Map<string, number>();
/** Agents (and raw sockets) of paced runs asked to keep their connections, by URL, until the next paced run to it. */
const pacedAgents = new Map<string, Agent | HttpAgent>();
const pacedSockets = new Map<string, KeptSocket[]>();
process.on('message', (cmd: LoadRequest) => {
  const run = cmd.kind === 'keepalive' ? keepalive(cmd) : cmd.kind === 'newconn' ? newconn(cmd) : cmd.kind === 'h2' ? h2(cmd, h2Rates) : cmd.kind === 'paced' ? (cmd.raw === true ? pacedTls(cmd, pacedSockets) : paced(cmd, pacedAgents)) : probe(cmd);
  run.then(
    (result) => process.send?.({ id: cmd.id, result }),
    (error: unknown) => process.send?.({ id: cmd.id, error: String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send?.({ kind: 'ready' });
