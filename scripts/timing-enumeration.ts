// "No enumeration by timing" (docs/CONTRACT.md U-3, P-2): compares how long the password PUT takes
// to refuse an unknown user and a wrong password for a real one, over many interleaved trials on
// one kept-alive TLS connection, and prints the medians and their ratio. A script, not a test:
// timing is noisy, and the figure is recorded in SECURITY.md.
//
//   node --import tsx scripts/timing-enumeration.ts [--trials 300] [--ln 14] [--seed 1]
//
// --ln is the scrypt cost (log2 N; the service's default is 17, slower but the same shape).
// Throttling (P-8) is kept out of the measurement: every attempt comes from its own address (a
// trusted proxy's X-Forwarded-For), unknown names are never reused, and each real account is
// reset by a correct login (answered 415, so nothing changes) before it reaches 5 failures.
import { Agent, request } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createService } from '../lib/index.js';
import { createSelfSignedCertificate } from '../lib/tls/dev-cert.js';
import { seeded } from '../test/helpers/seeded.js';

const { values } = parseArgs({
  options: { trials: { type: 'string', default: '300' }, ln: { type: 'string', default: '14' }, seed: { type: 'string', default: '1' }, warmup: { type: 'string', default: '20' } },
});
const trials = Number(values.trials);
const ln = Number(values.ln);
const warmup = Number(values.warmup);
const PASSWORD = 'timing-real-passphrase-1';
const ACCOUNTS = 8;


const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const basic = (name: string, password: string): string => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

const dir = await mkdtemp(join(tmpdir(), 'httpskit-timing-'));
const { cert, key } = createSelfSignedCertificate();
const service = createService({ port: 0, store: join(dir, 'users.json'), cert, key, scrypt: { ln, r: 8, p: 1 }, log: false, trustProxy: '127.0.0.1' });
try {
  const { url } = await service.listen();
  const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `victim${i}`);
  for (const name of accounts) await service.users.add(name, PASSWORD);
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: cert });
  let address = 0;

  /** One PUT; resolves with the status and the milliseconds from sending to the last byte. */
  const put = (name: string, password: string, contentType = 'text/plain'): Promise<{ status: number; ms: number; body: string }> =>
    new Promise((resolve, reject) => {
      address++;
      const forwardedFor = `10.${(address >> 16) & 255}.${(address >> 8) & 255}.${address & 255}`;
      const started = performance.now();
      const req = request(`${url}/user/${encodeURIComponent(name)}/password`, {
        method: 'PUT',
        agent,
        headers: { authorization: basic(name, password), 'content-type': contentType, 'x-forwarded-for': forwardedFor },
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body }));
      });
      req.on('error', reject);
      req.end('candidate-new-passphrase');
    });

  const failures = new Map<string, number>();
  let unknown = 0;
  const wrongPassword = async (i: number) => {
    const name = accounts[i % ACCOUNTS] as string;
    if ((failures.get(name) ?? 0) >= 4) {
      const reset = await put(name, PASSWORD, 'application/x-not-a-password');
      if (reset.status !== 415) throw new Error(`resetting ${name}'s failure count gave ${reset.status}`);
      failures.set(name, 0);
    }
    failures.set(name, (failures.get(name) ?? 0) + 1);
    return put(name, `wrong-guess-${i}`);
  };
  const unknownUser = () => put(`nobody-${unknown++}`, 'wrong-guess');

  const random = seeded(Number(values.seed));
  const times = { unknown: [] as number[], wrong: [] as number[] };
  const bodies = new Set<string>();
  for (let i = 0; i < warmup + trials; i++) {
    // Each pair in a random order, so drift (JIT, caches, other load) hits both sides alike.
    const order = random() < 0.5 ? (['unknown', 'wrong'] as const) : (['wrong', 'unknown'] as const);
    for (const kind of order) {
      const r = kind === 'unknown' ? await unknownUser() : await wrongPassword(i);
      if (r.status !== 401) throw new Error(`expected 401, got ${r.status}: ${r.body}`);
      bodies.add(r.body);
      if (i >= warmup) times[kind].push(r.ms);
    }
  }
  agent.destroy();

  const u = [...times.unknown].sort((a, b) => a - b);
  const w = [...times.wrong].sort((a, b) => a - b);
  // Mann-Whitney: the chance that a random unknown-user attempt took longer than a random
  // wrong-password one. 0.5 means the two cannot be told apart by their order.
  let greater = 0;
  for (const a of u) for (const b of w) greater += a > b ? 1 : a === b ? 0.5 : 0;
  const auc = greater / (u.length * w.length);
  const fmt = (x: number): string => x.toFixed(2);
  console.log(`scrypt ln=${ln} r=8 p=1; ${trials} trials each after ${warmup} warm-up pairs; node ${process.version}`);
  console.log(`unknown user:   median ${fmt(quantile(u, 0.5))} ms (p10 ${fmt(quantile(u, 0.1))}, p90 ${fmt(quantile(u, 0.9))})`);
  console.log(`wrong password: median ${fmt(quantile(w, 0.5))} ms (p10 ${fmt(quantile(w, 0.1))}, p90 ${fmt(quantile(w, 0.9))})`);
  console.log(`ratio of medians (unknown / wrong): ${(quantile(u, 0.5) / quantile(w, 0.5)).toFixed(3)}`);
  console.log(`P(unknown slower than wrong): ${auc.toFixed(3)} (0.5 = indistinguishable)`);
  console.log(`distinct 401 bodies: ${bodies.size} (expected 1: an unknown user and a wrong password get the same answer)`);
} finally {
  await service.close(1_000);
  await rm(dir, { recursive: true, force: true });
}
