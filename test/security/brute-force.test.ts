// The security suite, brute force and spraying (docs/CONTRACT.md P-8, U-3): many guesses against one account, and one
// guess against each of many accounts from one address, are both throttled before scrypt runs, so
// the number of scrypt computations stays small (counted by wrapping node:crypto's scrypt). The
// throttle tables stay within their memory bound however many names an attacker invents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { snapshotText } from '../../lib/store/file/format.js';
import { hashPassword } from '../../lib/users/password-hash.js';
import type { UserRecord } from '../../lib/store/open.js';
import { basic, FAST_SCRYPT, startService } from '../helpers/service.js';
import { PROTOCOLS } from '../helpers/https.js';
import { tempDir } from '../helpers/tmp.js';
import { createClient, header, json } from './helpers/client.js';
import { countScrypt } from './helpers/scrypt-counter.js';

const PASSWORD = 'lemon-initial-passphrase-1';
const CONNECTIONS = 4;
const scrypt = countScrypt();

/**
 * How many guesses can reach scrypt against one account in `seconds` (P-8): the free failures,
 * then one per lock window (1 s, 2 s, 4 s … so log2(seconds + 1) + 1 windows end), each possibly
 * joined by the requests already in flight when it ended.
 */
function accountBound(seconds: number, free = 5): number {
  return free + (Math.floor(Math.log2(seconds + 1)) + 1) * CONNECTIONS;
}

const guessing: ReadonlyArray<readonly [label: string, account: string, exists: boolean]> = [
  ['an existing account', 'alice', true],
  ['an unknown account', 'ghost', false],
];

// H-1: the throttle sits above the protocol; over HTTP/2 the CONNECTIONS are streams of one connection.
for (const protocol of PROTOCOLS) for (const [label, account, exists] of guessing) {
  test(`P-8 brute force: 1,000 wrong guesses against ${label} are throttled and cost few scrypt computations (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);
    await s.service.users.add('alice', PASSWORD);
    const client = createClient(s.url, s.ca, CONNECTIONS, undefined, protocol);
    t.after(() => client.close());
    scrypt.reset();
    const started = performance.now();
    const statuses = new Map<number, number>();
    let retryAfterMissing = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < 1_000) {
          const i = next++;
          const r = await client.send('PUT', `/user/${account}/password`, { authorization: basic(account, `wrong-guess-number-${i}`), 'content-type': 'text/plain' }, 'x');
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 429 && (!/^\d+$/.test(header(r, 'retry-after') ?? '') || json(r)['type'] !== '/problems/too-many-requests')) retryAfterMissing++;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const hashes = scrypt.count;
    const summary = `${[...statuses].map(([k, n]) => `${n}×${k}`).join(', ')}; ${hashes} scrypt computations in ${seconds.toFixed(1)} s`;
    t.diagnostic(summary);
    assert.deepEqual([...statuses.keys()].sort(), [401, 429], 'every guess is refused, as 401 or 429');
    assert.equal(retryAfterMissing, 0, 'every 429 is a too-many-requests problem with Retry-After');
    // The unknown account's first verification also creates the dummy hash (U-3).
    const bound = accountBound(seconds) + (exists ? 0 : 1);
    assert.ok(hashes <= bound, `${hashes} scrypt computations for 1,000 guesses (bound ${bound})`);
    assert.ok((statuses.get(429) ?? 0) >= 1_000 - bound, 'nearly every guess is answered 429 without hashing');
    // The owner, who knows the password, waits like everyone else: that is the price of P-8.
    const owner = await client.send('PUT', `/user/${account}/password`, { authorization: basic(account, PASSWORD), 'content-type': 'text/plain' }, 'x');
    assert.equal(owner.status, 429);
  });
}

for (const protocol of PROTOCOLS) test(`P-8 password spraying: one guess against each of 1,000 accounts from one address is throttled; other addresses are not (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  // 1,000 accounts written straight into a snapshot: adding them one by one costs 1,000 fsyncs.
  const phc = await hashPassword(PASSWORD, FAST_SCRYPT);
  const records: UserRecord[] = Array.from({ length: 1_000 }, (_, i) => ({ name: `user${String(i).padStart(4, '0')}`, role: 'user', hash: phc, createdAt: 0, passwordChangedAt: 0 }));
  await writeFile(store, snapshotText(0, records), { mode: 0o600 });
  // The peer (127.0.0.1) is a trusted proxy, so X-Forwarded-For names the client (T-5).
  const s = await startService(t, { store, trustProxy: '127.0.0.1' }, protocol);
  const client = createClient(s.url, s.ca, CONNECTIONS, undefined, protocol);
  t.after(() => client.close());
  const attacker = '203.0.113.66';
  scrypt.reset();
  const started = performance.now();
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < records.length) {
        const name = (records[next++] as UserRecord).name;
        const r = await client.send('PUT', `/user/${name}/password`, { authorization: basic(name, 'Summer2025!Summer2025!'), 'content-type': 'text/plain', 'x-forwarded-for': attacker }, 'x');
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const hashes = scrypt.count;
  const summary = `${[...statuses].map(([k, n]) => `${n}×${k}`).join(', ')}; ${hashes} scrypt computations in ${seconds.toFixed(1)} s`;
  t.diagnostic(summary);
  assert.deepEqual([...statuses.keys()].sort(), [401, 429]);
  // 50 failures per address per 15 minutes (P-8), plus the requests in flight when the 50th failed.
  assert.ok(hashes <= 50 + CONNECTIONS, `${hashes} scrypt computations for 1,000 sprayed guesses`);
  assert.ok((statuses.get(429) ?? 0) >= 1_000 - 50 - CONNECTIONS);

  // The attacker's address is blocked, not the accounts: their owners still get in from elsewhere.
  const owner = await client.send('PUT', '/user/user0007/password', { authorization: basic('user0007', PASSWORD), 'content-type': 'text/plain', 'x-forwarded-for': '198.51.100.7' }, 'a-brand-new-passphrase-7');
  assert.equal(owner.status, 204);
  const blocked = await client.send('PUT', '/user/user0008/password', { authorization: basic('user0008', PASSWORD), 'content-type': 'text/plain', 'x-forwarded-for': attacker }, 'a-brand-new-passphrase-8');
  assert.equal(blocked.status, 429, 'even a right password from the spraying address waits');
});

for (const protocol of PROTOCOLS) test(`P-8 the account throttle is keyed by the NFC name: another Unicode form of the name gets no fresh guesses (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('jos\u00e9', PASSWORD);
  const client = createClient(s.url, s.ca, 1, undefined, protocol);
  t.after(() => client.close());
  const guess = async (name: string, i: number): Promise<number> =>
    (await client.send('PUT', '/user/jos%C3%A9/password', { authorization: basic(name, `wrong-guess-number-${i}`), 'content-type': 'text/plain' }, 'x')).status;
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push(await guess('jos\u00e9', i));
  scrypt.reset();
  // NFD, then the NFC name again: the same account, so the same window.
  for (const [i, name] of ['jose\u0301', 'jose\u0301', 'jos\u00e9'].entries()) statuses.push(await guess(name, 5 + i));
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
  assert.equal(scrypt.count, 0, 'no hashing once the account must wait');
});
