// Issue 20, "fewer reads per request": the statements one request sends to PostgreSQL, counted at
// the driver (every pg client's query()). The record the authenticator read is handed on, so a
// password change reads its user once, plus its atomic update and the throttle's own statements.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createService } from '../../../lib/index.js';
import { request } from '../../helpers/https.js';
import { testPostgres } from '../../helpers/postgres.js';
import { FAST_SCRYPT, testCertificate } from '../../helpers/service.js';

const db = await testPostgres();

/** Every statement text sent by any pg client of this process while `task` runs. */
async function statements(task: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const original = pg.Client.prototype.query;
  const counting = function (this: pg.Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
    if (text !== undefined) seen.push(text.replace(/\s+/g, ' ').trim());
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
  pg.Client.prototype.query = counting as typeof original;
  try {
    await task();
  } finally {
    pg.Client.prototype.query = original;
  }
  return seen;
}

const basic = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
const readsOfUsers = (list: readonly string[]) => list.filter((s) => /^SELECT .* FROM httpskit\.users WHERE name = \$1$/.test(s));

test('issue 20: a password change reads its user once, plus its atomic update; an admin changing another user\'s reads the target once more', { skip: db.skip }, async (t) => {
  const url = await db.database();
  const { cert, key } = testCertificate();
  const service = createService({ store: url, port: 0, cert, key, scrypt: FAST_SCRYPT, log: false});
  t.after(() => service.close(0));
  const { url: base } = await service.listen();
  await service.users.add('root', 'the admin password is long', { role: 'admin' });
  await service.users.add('ann', 'ann password is long enough');
  const change = (who: string, password: string, target: string, next: string) =>
    request(`${base}/user/${target}/password`, { ca: cert, method: 'PUT', headers: { authorization: basic(who, password), 'content-type': 'text/plain' }, body: next });

  let status = 0;
  const own = await statements(async () => void (status = (await change('ann', 'ann password is long enough', 'ann', 'ann has a new long password')).status));
  assert.equal(status, 204);
  const other = await statements(async () => void (status = (await change('root', 'the admin password is long', 'ann', 'root chose this long password')).status));
  assert.equal(status, 204);
  t.diagnostic(`own change: ${own.length} statements, ${readsOfUsers(own).length} reads of the user; admin's change of another: ${other.length} statements, ${readsOfUsers(other).length} reads`);
  assert.equal(readsOfUsers(own).length, 1, own.join('\n'));
  // R-2: an authenticated read of one's own user resource reads the user once (the record the
  // authenticator read is the one shown).
  const read = await statements(async () => void (status = (await request(`${base}/user/ann`, { ca: cert, headers: { authorization: basic('ann', 'root chose this long password') } })).status));
  assert.equal(status, 200);
  t.diagnostic(`GET /user/ann: ${read.length} statements, ${readsOfUsers(read).length} reads of the user`);
  assert.equal(readsOfUsers(read).length, 1, read.join('\n'));
  assert.equal(readsOfUsers(other).length, 2, other.join('\n'));
});
