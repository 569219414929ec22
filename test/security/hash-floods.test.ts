// P-8, an outside attack of 2026-12-05: one address floods the server with wrong Basic credentials
// on many connections. Every guess costs a hash until the address's budget (50 failures) turns it
// away, so for a while it holds every slot and queue place of the hash gate; a password change from
// another address then got 503 (retried: 20 s in the review), since the places were first come,
// first served. They are shared out by address now: the other address's hashes take their turns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basic, startService } from '../helpers/service.js';
import { PROTOCOLS } from '../helpers/https.js';
import { createClient } from './helpers/client.js';

const PASSWORD = 'lemon-initial-passphrase-1';
const FLOOD_CONNECTIONS = 16;

for (const protocol of PROTOCOLS) test(`P-8 one address's flood of wrong passwords does not keep another address's password change out of the hash queue (${protocol})`, async (t) => {
  // One hash at a time, 4 places to wait in; a hash costly enough (ln 13, some 25 ms here) that the
  // flood's 50 failures take over a second, and the peer (127.0.0.1) a trusted proxy, so
  // X-Forwarded-For names each side's address (T-5).
  const s = await startService(t, { trustProxy: '127.0.0.1', hashConcurrency: 1, hashQueueLimit: 4, scrypt: { ln: 13, r: 8, p: 1 } }, protocol);
  await s.service.users.add('alice', PASSWORD);
  const flood = createClient(s.url, s.ca, FLOOD_CONNECTIONS, undefined, protocol);
  const owner = createClient(s.url, s.ca, 1, undefined, protocol);
  t.after(() => {
    flood.close();
    owner.close();
  });
  const statuses = new Map<number, number>();
  let flooding = true;
  let guesses = 0;
  const flooders = Array.from({ length: FLOOD_CONNECTIONS }, async () => {
    while (flooding) {
      const i = guesses++;
      // A name of its own each time: no account's lock stops the flood, only the address's budget.
      const r = await flood.send('PUT', `/user/ghost${i}/password`, { authorization: basic(`ghost${i}`, 'wrong'), 'content-type': 'text/plain', 'x-forwarded-for': '203.0.113.66' }, 'x');
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  });
  // Once the flood fills the queue (its first 503), the owner changes her password from elsewhere.
  while ((statuses.get(503) ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const started = performance.now();
  const change = await owner.send('PUT', '/user/alice/password', { authorization: basic('alice', PASSWORD), 'content-type': 'text/plain', 'x-forwarded-for': '198.51.100.7' }, 'a-brand-new-passphrase-1');
  const ms = performance.now() - started;
  const during = statuses.get(401) ?? 0;
  flooding = false;
  await Promise.all(flooders);
  t.diagnostic(`the change: ${change.status} in ${ms.toFixed(0)} ms; the flood: ${[...statuses].map(([k, n]) => `${n}×${k}`).join(', ')}`);
  // Before: 503 (every place the flood's, first come, first served).
  assert.equal(change.status, 204, 'the change got its two hashes (the verification and the new hash)');
  // It waited for its turns, not for the flood: two hashes, each behind at most one of the flood's
  // running and one of its waiting (round robin), while the flood was still being hashed.
  assert.ok(during < 50, `the flood was not yet turned away by its budget (${during} failures)`);
  assert.ok((statuses.get(503) ?? 0) > 0, 'the flood was refused places meanwhile');
  assert.equal((await owner.send('GET', '/user/alice.json', { authorization: basic('alice', 'a-brand-new-passphrase-1'), 'x-forwarded-for': '198.51.100.7' })).status, 200);
});
