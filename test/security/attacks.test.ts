// Regressions for attacks found from outside the suite (SECURITY.md lists each): a Digest header
// replayed after a restart or on another process (P-10 amended), concurrency buying guesses
// beyond the address budget (P-8 amended), honest concurrent logins refused, and a raised scrypt
// cost making existing users answer faster than unknown ones (U-3 amended). Hashes are counted
// where they run (lib/users/scrypt-pool.ts), not inferred from statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { computeHA1, computeResponse } from '../../lib/auth/digest.js';
import { hashPassword } from '../../lib/users/password-hash.js';
import { snapshotText } from '../../lib/store/file/format.js';
import type { UserRecord } from '../../lib/store/open.js';
import { basic, FAST_SCRYPT, startService, type Started } from '../helpers/service.js';
import { PROTOCOLS } from '../helpers/https.js';
import { tempDir } from '../helpers/tmp.js';
import { createClient } from './helpers/client.js';
import { countScrypt } from './helpers/scrypt-counter.js';

const ROOT_PW = 'granite-admin-passphrase-1';
const BOB_PW = 'willow-initial-passphrase-1';
const scrypt = countScrypt();

/** The Digest challenge parameters of a fresh 401 (SHA-256 first, P-10), asked over HTTP/1.1: a nonce is not bound to a protocol. */
async function challenge(s: Started, path: string): Promise<{ realm: string; nonce: string; opaque: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(s.url + path, { method: 'PUT', ca: s.ca, agent: false, headers: { 'content-length': '0' } }, (res) => {
      res.resume();
      // Each challenge is its own field line (P-10); Node joins them in res.headers, so read the raw lines.
      const digest = res.rawHeaders.find((v, i) => i % 2 === 1 && res.rawHeaders[i - 1]?.toLowerCase() === 'www-authenticate' && v.startsWith('Digest ')) ?? '';
      const get = (k: string): string => new RegExp(`${k}="([^"]*)"`).exec(digest)?.[1] ?? '';
      res.on('end', () => resolve({ realm: get('realm'), nonce: get('nonce'), opaque: get('opaque') }));
    });
    req.on('error', reject);
    req.end();
  });
}

function digestHeader(user: string, password: string, uri: string, c: { realm: string; nonce: string; opaque: string }): string {
  const ha1 = computeHA1('SHA-256', user, c.realm, password);
  const response = computeResponse('SHA-256', ha1, { nonce: c.nonce, nc: '00000001', cnonce: 'c0ffee', qop: 'auth', method: 'PUT', uri });
  return `Digest username="${user}", realm="${c.realm}", nonce="${c.nonce}", uri="${uri}", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="c0ffee", response="${response}", opaque="${c.opaque}"`;
}

const putPassword = (s: Started, name: string, authorization: string, body: string) =>
  s.fetch(`/user/${name}/password`, { method: 'PUT', headers: { authorization, 'content-type': 'text/plain' }, body });

// H-1: every attack below is about the accounts and the store, whatever carries the requests.
for (const protocol of PROTOCOLS) test(`P-10 (amended): a captured Digest header is refused after a restart and by another process on the same store (${protocol})`, async (t) => {
  const first = await startService(t, { digest: true }, protocol);
  await first.service.users.add('root', ROOT_PW, { role: 'admin' });
  await first.service.users.add('bob', BOB_PW);
  // The admin sets bob's password with Digest: the admin's own secret does not change, so the
  // header stays cryptographically valid for the nonce's lifetime: only the ledger refuses it.
  const uri = '/user/bob/password';
  const captured = digestHeader('root', ROOT_PW, uri, await challenge(first, uri));
  assert.equal((await putPassword(first, 'bob', captured, 'the-admins-chosen-passphrase-1')).status, 204);
  assert.equal((await putPassword(first, 'bob', captured, 'a-replayers-chosen-passphrase-1')).status, 401, 'replay in the same process');

  // Another server process on the same store (a second service: its own memory, the same files).
  const other = await startService(t, { digest: true, store: first.store }, protocol);
  assert.equal((await putPassword(other, 'bob', captured, 'a-replayers-chosen-passphrase-2')).status, 401, 'replay on another process');

  // A restart: both stop, a new one starts on the store and its Digest key.
  await other.service.close();
  await first.service.close();
  const restarted = await startService(t, { digest: true, store: first.store }, protocol);
  const replay = await putPassword(restarted, 'bob', captured, 'a-replayers-chosen-passphrase-3');
  assert.equal(replay.status, 401, 'replay after a restart');
  assert.equal(await restarted.service.users.verify('bob', 'the-admins-chosen-passphrase-1'), true, 'bob keeps the password the admin set');
});

for (const protocol of PROTOCOLS) test(`P-8 (amended): 130 accounts sprayed over 30 connections (HTTP/2: streams) from one address cost at most 50 hashes (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const phc = await hashPassword('lemon-initial-passphrase-1', FAST_SCRYPT);
  const records: UserRecord[] = Array.from({ length: 65 }, (_, i) => ({ name: `user${i}`, role: 'user', hash: phc, createdAt: 0, passwordChangedAt: 0 }));
  await writeFile(store, snapshotText(0, records), { mode: 0o600 });
  const s = await startService(t, { store }, protocol);
  await s.service.users.verify('nobody', 'warm-up-the-dummy-hash');
  const client = createClient(s.url, s.ca, 30, undefined, protocol);
  t.after(() => client.close());
  // Half the names exist, half do not: both cost a hash (U-3).
  const names = Array.from({ length: 130 }, (_, i) => (i % 2 === 0 ? `user${i / 2}` : `ghost${i}`));
  scrypt.reset();
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 30 }, async () => {
      while (next < names.length) {
        const name = names[next++] as string;
        // An honest retry on 503 (Retry-After) until an answer.
        for (;;) {
          const r = await client.send('PUT', `/user/${name}/password`, { authorization: basic(name, 'Autumn2025!Autumn2025!'), 'content-type': 'text/plain' }, 'x');
          if (r.status === 503) continue;
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          break;
        }
      }
    }),
  );
  const summary = `${[...statuses].map(([k, n]) => `${n}×${k}`).join(', ')}; ${scrypt.count} hashes`;
  t.diagnostic(summary);
  assert.deepEqual([...statuses.keys()].sort(), [401, 429], summary);
  assert.equal(statuses.get(401), 50, summary);
  assert.ok(scrypt.count <= 50, `at most 50 wrong-password hashes from one address: ${summary}`);
});

for (const protocol of PROTOCOLS) test(`P-8 (amended): six concurrent correct logins of one account all succeed; none is told it failed (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('root', ROOT_PW, { role: 'admin' });
  for (let i = 0; i < 6; i++) await s.service.users.add(`member${i}`, BOB_PW);
  const client = createClient(s.url, s.ca, 6, undefined, protocol);
  t.after(() => client.close());
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      client.send('PUT', `/user/member${i}/password`, { authorization: basic('root', ROOT_PW), 'content-type': 'text/plain' }, `a-fresh-member-passphrase-${i}`),
    ),
  );
  assert.deepEqual(
    results.map((r) => r.status),
    [204, 204, 204, 204, 204, 204],
  );
});

for (const protocol of PROTOCOLS) test(`U-3 (amended): after the cost is raised, a wrong password of an old-cost user costs what an unknown user costs (${protocol})`, async (t) => {
  const low = { ln: 8, r: 8, p: 1 } as const;
  const high = { ln: 12, r: 8, p: 1 } as const;
  const first = await startService(t, { scrypt: low }, protocol);
  await first.service.users.add('alice', 'maple-initial-passphrase-1');
  await first.service.close();
  const s = await startService(t, { store: first.store, scrypt: high }, protocol);
  await s.service.users.verify('warm-up', 'the dummy hash is made once');
  const workOf = async (name: string): Promise<{ work: number; ms: number }> => {
    scrypt.reset();
    const started = performance.now();
    const r = await putPassword(s, name, basic(name, 'definitely-not-the-password'), 'x');
    assert.equal(r.status, 401);
    return { work: scrypt.work, ms: performance.now() - started };
  };
  const existing = await workOf('alice');
  const unknown = await workOf('nobody-here');
  t.diagnostic(`wrong password ${existing.ms.toFixed(1)} ms, unknown user ${unknown.ms.toFixed(1)} ms`);
  const full = 2 ** high.ln * high.r * high.p;
  assert.equal(unknown.work, full);
  assert.equal(existing.work, full, 'the old hash plus the difference: exactly the configured cost');
});
