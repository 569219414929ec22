// P-12: POST /user/{name}/resettoken, end to end over real TLS with Node's client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ResetTokenEvent } from '../../lib/index.js';
import { PROTOCOLS, type Protocol, type Response } from '../helpers/https.js';
import { seeded } from '../helpers/seeded.js';
import { startService, type Started } from '../helpers/service.js';
import { createClient } from '../security/helpers/client.js';

const PW = 'quartz-initial-passphrase-1';

async function started(t: import('node:test').TestContext, protocol: Protocol, events: ResetTokenEvent[], options: Parameters<typeof startService>[1] = {}): Promise<Started> {
  const s = await startService(t, { onResetToken: (e) => void events.push(e), ...options }, protocol);
  await s.service.users.add('gina', PW);
  return s;
}

const ask = (s: Started, name: string, init: { body?: string; headers?: Record<string, string>; method?: string } = {}): Promise<Response> =>
  s.fetch(`/user/${encodeURIComponent(name)}/resettoken`, { method: init.method ?? 'POST', ...(init.headers === undefined ? {} : { headers: init.headers }), ...(init.body === undefined ? {} : { body: init.body }) });

/** Status, headers (less the per-response ones) and body: everything an observer can compare. */
function observable(r: Response): unknown {
  const { 'x-request-id': _id, date: _date, ...headers } = r.headers;
  return { status: r.status, headers, body: r.body };
}

/** Until the detached issuance has run (it follows the answer). */
async function settled(events: readonly unknown[], count: number): Promise<void> {
  for (let i = 0; i < 200 && events.length < count; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 50));
}

for (const protocol of PROTOCOLS) test(`P-12 a forgotten password: 202, no-store, the token delivered through onResetToken, and it works once (P-9) (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events);
  const r = await ask(s, 'gina');
  assert.equal(r.status, 202);
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.body, '');
  await settled(events, 1);
  assert.equal(events.length, 1);
  const [event] = events as [ResetTokenEvent];
  assert.equal(event.name, 'gina');
  assert.match(event.token, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(event.expiresAt.getTime() > Date.now());
  assert.ok(!r.body.includes(event.token) && !JSON.stringify(r.headers).includes(event.token), 'never shown to the caller');
  assert.ok(!s.logs.some((l) => l.includes(event.token)), 'never logged');
  const put = (password: string) =>
    s.fetch('/user/gina/password', { method: 'PUT', headers: { authorization: `Bearer ${event.token}`, 'content-type': 'text/plain' }, body: password });
  assert.equal((await put('quartz-reset-passphrase-2')).status, 204);
  assert.equal((await put('quartz-reset-passphrase-3')).status, 401);
  assert.equal(await s.service.users.verify('gina', 'quartz-reset-passphrase-2'), true);
});

for (const protocol of PROTOCOLS) test(`P-12 enumeration: an unknown user gets the same status, headers and body; nothing is delivered (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events);
  const known = await ask(s, 'gina', { body: 'ignored', headers: { 'content-type': 'text/plain' } });
  const unknown = await ask(s, 'nobody', { body: 'ignored', headers: { 'content-type': 'text/plain' } });
  const invalid = await ask(s, 'a\u0000b');
  assert.equal(known.status, 202);
  assert.deepEqual(observable(unknown), observable(known));
  assert.deepEqual(observable(invalid), observable(known));
  await settled(events, 1);
  assert.deepEqual(events.map((e) => e.name), ['gina']);
});

for (const protocol of PROTOCOLS) test(`P-12 at most 3 tokens per account per hour: the first 3; later requests still get 202; earlier tokens stay valid (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events);
  const answers: Response[] = [];
  for (let i = 0; i < 5; i++) answers.push(await ask(s, 'gina'));
  await settled(events, 3);
  assert.deepEqual(answers.map((a) => a.status), [202, 202, 202, 202, 202]);
  assert.equal(events.length, 3);
  assert.equal(new Set(events.map((e) => e.token)).size, 3);
  // Issuing never invalidates earlier tokens or the password.
  assert.equal(await s.service.users.verify('gina', PW), true);
  const first = (events[0] as ResetTokenEvent).token;
  const put = await s.fetch('/user/gina/password', { method: 'PUT', headers: { authorization: `Bearer ${first}`, 'content-type': 'text/plain' }, body: 'quartz-reset-passphrase-2' });
  assert.equal(put.status, 204);
});

for (const protocol of PROTOCOLS) test(`P-12 without a delivery channel the route does not exist (404) (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('gina', PW);
  assert.equal((await ask(s, 'gina')).status, 404);
});

for (const protocol of PROTOCOLS) test(`P-12 / P-1: HTTPS only, no query string, POST only (405 Allow: POST), a body over the limit is 413 (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events, { httpPort: 0 });
  const plain = await s.fetchPlain('/user/gina/resettoken', { method: 'POST' });
  assert.equal(plain.status, 403);
  assert.equal(JSON.parse(plain.body).type, '/problems/https-required');
  assert.equal((await s.fetch('/user/gina/resettoken?x=1', { method: 'POST' })).status, 400);
  const get = await ask(s, 'gina', { method: 'GET' });
  assert.equal(get.status, 405);
  assert.equal(get.headers['allow'], 'POST, OPTIONS');
  assert.equal((await ask(s, 'gina', { body: 'x'.repeat(5000) })).status, 413);
  await settled(events, 0);
  assert.equal(events.length, 0, 'no refused request issued a token');
});

for (const protocol of PROTOCOLS) test(`P-12 / P-8 the requests count against the address budget: 429 beyond it (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events);
  let last: Response | undefined;
  let accepted = 0;
  for (let i = 0; i < 60; i++) {
    last = await ask(s, `nobody-${i}`);
    if (last.status !== 202) break;
    accepted++;
  }
  assert.equal(accepted, 50);
  assert.equal(last?.status, 429);
  assert.ok(Number(last?.headers['retry-after']) >= 1);
});

for (const protocol of PROTOCOLS) test(`P-12 the same time within noise for an existing and an unknown user (interleaved trials, as scripts/timing-enumeration.ts) (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  // Every trial from its own address (a trusted proxy's X-Forwarded-For), so P-8 stays out of it.
  const s = await started(t, protocol, events, { trustProxy: '127.0.0.1', log: false });
  for (let i = 0; i < 4; i++) await s.service.users.add(`victim${i}`, PW);
  // One kept-alive connection (over h2, one stream at a time on it): no handshake in the times.
  const client = createClient(s.url, s.ca, 1, undefined, protocol);
  t.after(() => client.close());
  let address = 0;
  const timed = async (name: string): Promise<{ status: number; ms: number }> => {
    address++;
    const started = performance.now();
    const r = await client.send('POST', `/user/${name}/resettoken`, { 'x-forwarded-for': `10.1.${address >> 8}.${address & 255}` });
    return { status: r.status, ms: performance.now() - started };
  };
  const random = seeded(12);
  const times = { known: [] as number[], unknown: [] as number[] };
  const warmup = 10;
  const trials = 60;
  for (let i = 0; i < warmup + trials; i++) {
    const order = random() < 0.5 ? (['known', 'unknown'] as const) : (['unknown', 'known'] as const);
    for (const kind of order) {
      const r = await timed(kind === 'known' ? `victim${i % 4}` : `nobody-${i}`);
      assert.equal(r.status, 202);
      if (i >= warmup) times[kind].push(r.ms);
    }
  }
  // Mann-Whitney: the chance that a random existing-user request took longer than a random
  // unknown-user one; 0.5 means the two cannot be told apart. The bound is wide (timing is
  // noisy on a shared machine): a store write on the existing user's path moves it to ~1.
  let greater = 0;
  for (const a of times.known) for (const b of times.unknown) greater += a > b ? 1 : a === b ? 0.5 : 0;
  const auc = greater / (times.known.length * times.unknown.length);
  assert.ok(auc > 0.2 && auc < 0.8, `P(existing slower than unknown) = ${auc.toFixed(3)}`);
  await settled(events, 12);
  assert.equal(events.length, 12, '3 tokens for each of the 4 real accounts, none for the others');
});

test('P-12 / C-5 a server closed right after the 202 still issues and delivers the token it answered for, then closes its store', async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, 'h1', events);
  const r = await ask(s, 'gina');
  assert.equal(r.status, 202);
  await s.service.close(1_000); // at once: the issuance runs after the answer
  assert.deepEqual(events.map((e) => e.name), ['gina'], 'the token was delivered before close returned');
  const errors = s.logs.filter((l) => (JSON.parse(l) as { level: string }).level === 'error');
  assert.deepEqual(errors, [], 'nothing failed on a closed store');
});

test('P-12 / C-5 a delivery still running when close() is called (an asynchronous onResetToken) is waited for within the grace', async (t) => {
  const delivered: string[] = [];
  const s = await startService(t, {
    onResetToken: async (e) => {
      await new Promise((resolve) => setTimeout(resolve, 300)); // a mail server's round trip
      delivered.push(e.name);
    },
  });
  await s.service.users.add('gina', PW);
  assert.equal((await ask(s, 'gina')).status, 202);
  await s.service.close(5_000);
  assert.deepEqual(delivered, ['gina'], 'the delivery had finished when close() returned');
});

for (const protocol of PROTOCOLS) test(`P-12 a user who holds the most live tokens (5) is issued none over HTTP: still 202, the log says so, and every earlier token still works (${protocol})`, async (t) => {
  const events: ResetTokenEvent[] = [];
  const s = await started(t, protocol, events);
  for (let i = 0; i < 5; i++) await s.service.users.issueResetToken('gina');
  await settled(events, 5);
  const r = await ask(s, 'gina');
  assert.equal(r.status, 202);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(events.length, 5, 'nothing more delivered');
  assert.ok(s.logs.some((l) => l.includes('reset token not issued: the user holds the most live tokens allowed') && l.includes('"level":"warn"')), s.logs.join('\n'));
  assert.ok(!s.logs.some((l) => l.includes('"level":"error"')), 'not an error');
  // Issuing never cancelled one: the first still sets the password.
  const put = await s.fetch('/user/gina/password', { method: 'PUT', headers: { authorization: `Bearer ${events[0]?.token ?? ''}`, 'content-type': 'text/plain' }, body: 'quartz-reset-passphrase-9' });
  assert.equal(put.status, 204);
});
