// Reset tokens (P-9, P-7) and embedder events, end to end over TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { PasswordChangedEvent, ResetTokenEvent } from '../../lib/index.js';
import { run } from '../helpers/cli.js';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';

const PW = 'quartz-initial-passphrase-1';

function bearerPut(s: Started, name: string, token: string, body: string) {
  return s.fetch(`/user/${name}/password`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain; charset=utf-8' },
    body,
  });
}

for (const protocol of PROTOCOLS) test(`P-9 a reset token sets the password once, for its user only (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('gina', PW);
  await s.service.users.add('hank', 'hazel-initial-passphrase-1');
  const { token } = await s.service.users.issueResetToken('gina');
  const wrongUser = await bearerPut(s, 'hank', token, 'hazel-stolen-passphrase-2');
  assert.equal(wrongUser.status, 401);
  assert.match(String(wrongUser.headers['www-authenticate']), /Bearer realm="httpskit", error="invalid_token"/);
  const weak = await bearerPut(s, 'gina', token, 'short');
  assert.equal(weak.status, 422, 'P-6 still applies');
  const ok = await bearerPut(s, 'gina', token, 'quartz-reset-passphrase-2');
  assert.equal(ok.status, 204, 'a refused password did not burn the token');
  assert.equal(await s.service.users.verify('gina', 'quartz-reset-passphrase-2'), true);
  const reused = await bearerPut(s, 'gina', token, 'quartz-reset-passphrase-3');
  assert.equal(reused.status, 401);
  const header = reused.headers['www-authenticate'];
  assert.match(String(header), /^Basic realm="httpskit", charset="UTF-8", Bearer realm="httpskit", error="invalid_token"$/);
  assert.equal((await bearerPut(s, 'gina', 'not a token!', 'quartz-reset-passphrase-3')).status, 401);
  assert.equal((await bearerPut(s, 'gina', 'A'.repeat(43), 'quartz-reset-passphrase-3')).status, 401);
});

for (const protocol of PROTOCOLS) test(`P-9 two concurrent uses of one token: exactly one 204 (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('gina', PW);
  for (let round = 0; round < 3; round++) {
    const { token } = await s.service.users.issueResetToken('gina');
    const results = await Promise.all([
      bearerPut(s, 'gina', token, `quartz-race-passphrase-a${round}`),
      bearerPut(s, 'gina', token, `quartz-race-passphrase-b${round}`),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [204, 401]);
  }
});

for (const protocol of PROTOCOLS) test(`P-9 tokens expire (${protocol})`, async (t) => {
  const s = await startService(t, { resetTokenTtlMs: 1_000 }, protocol);
  await s.service.users.add('gina', PW);
  const { token, expiresAt } = await s.service.users.issueResetToken('gina');
  assert.ok(expiresAt.getTime() - Date.now() <= 1_000);
  await new Promise((r) => setTimeout(r, 1_100));
  assert.equal((await bearerPut(s, 'gina', token, 'quartz-late-passphrase-2')).status, 401);
});

for (const protocol of PROTOCOLS) test(`P-7 a password change by any route kills every outstanding token (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('gina', PW);
  const first = await s.service.users.issueResetToken('gina');
  const second = await s.service.users.issueResetToken('gina');
  const change = await s.fetch('/user/gina/password', {
    method: 'PUT',
    headers: { authorization: basic('gina', PW), 'content-type': 'text/plain' },
    body: 'quartz-basic-passphrase-2',
  });
  assert.equal(change.status, 204);
  assert.equal((await bearerPut(s, 'gina', first.token, 'quartz-token-passphrase-3')).status, 401);
  assert.equal((await bearerPut(s, 'gina', second.token, 'quartz-token-passphrase-3')).status, 401);
  const third = await s.service.users.issueResetToken('gina');
  await s.service.users.setPassword('gina', 'quartz-library-passphrase-4');
  assert.equal((await bearerPut(s, 'gina', third.token, 'quartz-token-passphrase-5')).status, 401);
});

for (const protocol of PROTOCOLS) test(`P-9 a token issued by the CLI works against the running server (one store) (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  await s.service.users.add('gina', PW);
  const r = await run(['reset-token', 'gina', '--store', s.store]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((await bearerPut(s, 'gina', r.stdout.trim(), 'quartz-cli-token-passphrase')).status, 204);
});

test('P-12 `user reset-token` for a user who holds the most live tokens (5) exits non-zero, printing no token, and says when one expires; the earlier tokens still work', async (t) => {
  const s = await startService(t, {});
  await s.service.users.add('gina', PW);
  const tokens: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await run(['reset-token', 'gina', '--store', s.store]);
    assert.equal(r.code, 0, r.stderr);
    tokens.push(r.stdout.trim());
  }
  const sixth = await run(['reset-token', 'gina', '--store', s.store]);
  assert.notEqual(sixth.code, 0);
  assert.equal(sixth.stdout, '', 'no token printed');
  assert.match(sixth.stderr, /"gina" already holds 5 live reset tokens.*expires \(the first at \d{4}-\d\d-\d\dT/);
  assert.equal((await bearerPut(s, 'gina', tokens[0] as string, 'quartz-cli-token-passphrase')).status, 204);
});

for (const protocol of PROTOCOLS) test(`A-4 onResetToken and onPasswordChanged fire for every route; a failing hook changes nothing (${protocol})`, async (t) => {
  const tokens: ResetTokenEvent[] = [];
  const changes: PasswordChangedEvent[] = [];
  const s = await startService(t, {
    onResetToken: (e) => void tokens.push(e),
    onPasswordChanged: (e) => {
      changes.push(e);
      if (e.via === 'form') throw new Error('mailer down');
      if (e.via === 'token') return new Promise(() => {}); // never settles
      return undefined;
    },
  }, protocol);
  await s.service.users.add('gina', PW);
  await s.service.users.add('root', 'granite-admin-passphrase-1', { role: 'admin' });
  // "Forgot my password": the embedder's channel receives the token and the user uses it.
  await s.service.users.issueResetToken('gina');
  assert.equal(tokens.length, 1);
  assert.equal(tokens[0]?.name, 'gina');
  assert.ok(tokens[0]?.expiresAt instanceof Date);
  assert.equal((await bearerPut(s, 'gina', tokens[0]?.token as string, 'quartz-hook-passphrase-2')).status, 204);
  const form = await s.fetch('/user/gina/resetpassword/', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ oldpasswd: 'quartz-hook-passphrase-2', newpasswd: 'quartz-hook-passphrase-3' }),
  });
  assert.equal(form.status, 204, 'a throwing hook does not undo the change');
  assert.equal(await s.service.users.verify('gina', 'quartz-hook-passphrase-3'), true);
  const own = await s.fetch('/user/gina/password', {
    method: 'PUT',
    headers: { authorization: basic('gina', 'quartz-hook-passphrase-3'), 'content-type': 'text/plain' },
    body: 'quartz-hook-passphrase-4',
  });
  assert.equal(own.status, 204);
  const admin = await s.fetch('/user/gina/password', {
    method: 'PUT',
    headers: { authorization: basic('root', 'granite-admin-passphrase-1'), 'content-type': 'text/plain' },
    body: 'quartz-hook-passphrase-5',
  });
  assert.equal(admin.status, 204);
  await s.service.users.setPassword('gina', 'quartz-hook-passphrase-6');
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(
    changes.map((c) => [c.name, c.by, c.via]),
    [
      ['gina', null, 'token'],
      ['gina', 'gina', 'form'],
      ['gina', 'gina', 'basic'],
      ['gina', 'root', 'basic'],
      ['gina', null, 'library'],
    ],
  );
  for (const c of changes) assert.ok(c.at instanceof Date);
  const errors = s.logs.map((l) => JSON.parse(l)).filter((l) => l.level === 'error');
  assert.ok(errors.some((l) => /onPasswordChanged hook failed/.test(l.msg)));
  assert.ok(!s.logs.join('\n').includes(tokens[0]?.token as string), 'P-11 the token is not logged');
  void join;
});
