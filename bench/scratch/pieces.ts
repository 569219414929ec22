import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBasic } from '../../lib/auth/basic.js';
import { createAuthenticator } from '../../lib/auth/authenticate.js';
import { hashPassword, verifyPassword } from '../../lib/users/password-hash.js';
import { preparePassword } from '../../lib/users/prepare.js';
import { openStore } from '../../lib/users/store.js';
import { createUsers } from '../../lib/users/users.js';
import { createHashGate } from '../../lib/users/hash-gate.js';
import { scryptSync } from 'node:crypto';

const dir = await mkdtemp(join(tmpdir(), 'pieces-'));
const path = join(dir, 'users.json');
const cost = { ln: 1, r: 8, p: 1 };
const hash = await hashPassword('bench-initial-passphrase-1', cost);
const now = Date.now();
await writeFile(path, '{"format":"httpskit-users","version":1,"generation":0,"users":[\n' + JSON.stringify({ name: 'u1', role: 'user', hash, createdAt: now, passwordChangedAt: now }) + '\n]}\n', { mode: 0o600 });
await writeFile(path + '.journal', '{"format":"httpskit-users-journal","version":1,"generation":0}\n', { mode: 0o600 });
const store = await openStore(path);
const users = createUsers({ store, gate: createHashGate(), cost, minPasswordLength: 15, resetTokenTtlMs: 900000, digest: undefined, now: Date.now, changed() {}, issued() {} });
const auth = createAuthenticator({ realm: 'r', users, throttle: store.throttle, nonces: store.nonces, digest: undefined });
const header = `Basic ${Buffer.from('u1:bench-initial-passphrase-1').toString('base64')}`;
const ctx = { headers: { authorization: header }, address: '127.0.0.1', method: 'GET', path: '/user/u1.json', secure: true } as never;
const prepared = preparePassword('bench-initial-passphrase-1');
const salt = Buffer.alloc(16, 1);
async function time(name: string, n: number, f: () => unknown) {
  for (let i = 0; i < 2000; i++) await f();
  const b = process.cpuUsage();
  for (let i = 0; i < n; i++) await f();
  const u = process.cpuUsage(b);
  console.log(name.padEnd(34), ((u.user + u.system) / n).toFixed(2), 'µs');
}
for (let r = 0; r < 2; r++) {
  await time('parseBasic', 50000, () => parseBasic(header));
  await time('preparePassword', 50000, () => preparePassword('bench-initial-passphrase-1'));
  await time('scryptSync N=2', 20000, () => scryptSync(prepared, salt, 32, { N: 2, r: 8, p: 1 }));
  await time('verifyPassword', 20000, () => verifyPassword(prepared, hash, cost));
  await time('store.get', 50000, () => store.get('u1'));
  await time('reserve+settle', 50000, async () => { const x = await store.throttle.reserve('u1', '127.0.0.1'); if (x.ok) await store.throttle.settle(x.id, 'u1', '127.0.0.1', 'success'); });
  await time('users.verify', 20000, () => users.verify('u1', 'bench-initial-passphrase-1'));
  await time('auth.authenticate', 20000, () => auth.authenticate(ctx));
}
await store.close();
