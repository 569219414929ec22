// The security suite, crash safety (docs/CONTRACT.md U-1, P-7): the server is killed with SIGKILL at seeded random
// instants while several clients change passwords; after every kill the store loads and every
// change answered 204 is there. A store write that fails (injected) answers 503 and changes
// nothing. Replay a failing kill schedule with CRASH_SEED=<seed>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fsPromises, { type FileHandle } from 'node:fs/promises';
import { constants } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createService } from '../../lib/index.js';
import { verifyPassword } from '../../lib/users/password-hash.js';
import { openStore } from '../../lib/store/open.js';
import { PROTOCOLS } from '../helpers/https.js';
import { basic, FAST_SCRYPT, startService, testCertificate } from '../helpers/service.js';
import { tempDir } from '../helpers/tmp.js';
import { createClient, header, json } from './helpers/client.js';
import { seeded } from '../helpers/seeded.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/crash-server.ts', import.meta.url));
const SEED = Number(process.env['CRASH_SEED'] ?? 20_250_521);
// H-1: fewer kills over HTTP/2 (each costs a process start): what is tested is the store's journal, the same under both.
const RUNS = { h1: 20, h2: 5 } as const;
const CLIENTS = 4;


/** Starts the server as a child process and resolves with it and its URL. */
async function startChild(store: string): Promise<{ url: string; kill(): Promise<void> }> {
  const { cert, key } = testCertificate();
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER, JSON.stringify({ store, cert, key })], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    void exited.then(() => reject(new Error(`the server exited before listening:\n${stderr}`)));
  });
  return {
    url,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

for (const protocol of PROTOCOLS) test(`U-1 SIGKILL at ${RUNS[protocol]} random instants while ${CLIENTS} clients change passwords: the store loads and keeps every 204 (seed ${SEED}) (${protocol})`, async (t) => {
  const random = seeded(SEED);
  const dir = await tempDir(t);
  const store = join(dir, 'users.json');
  const names = Array.from({ length: CLIENTS }, (_, c) => `crasher${c}`);
  const current = names.map((_, c) => `crash-initial-passphrase-${c}`);
  const setup = createService({ store, scrypt: FAST_SCRYPT, log: false });
  for (const [c, name] of names.entries()) await setup.users.add(name, current[c] as string);
  await setup.close();

  let acknowledged = 0;
  let inFlightKept = 0;
  for (let run = 0; run < RUNS[protocol]; run++) {
    const server = await startChild(store);
    const client = createClient(server.url, testCertificate().cert, CLIENTS, 10_000, protocol);
    const inFlight: Array<string | undefined> = names.map(() => undefined);
    const acked: string[][] = names.map(() => []);
    let stop = false;
    const clients = names.map(async (name, c) => {
      for (let step = 0; !stop; step++) {
        const next = `crash-r${run}-c${c}-s${step}-passphrase`;
        inFlight[c] = next;
        let status: number;
        try {
          status = (await client.send('PUT', `/user/${name}/password`, { authorization: basic(name, current[c] as string), 'content-type': 'text/plain' }, next)).status;
        } catch {
          return; // killed: the outcome of `next` is unknown, and judged below
        }
        assert.equal(status, 204, `run ${run}: ${name} got ${status} (seed ${SEED})`);
        (acked[c] as string[]).push(next);
        current[c] = next;
        inFlight[c] = undefined;
      }
    });
    // A random instant: from right after start-up to well into the stream of changes.
    await sleep(random() * 400);
    await server.kill();
    stop = true;
    await Promise.all(clients);
    client.close();

    let reopened;
    try {
      reopened = await openStore(store, { lockTimeoutMs: 5_000 });
    } catch (error) {
      assert.fail(`run ${run} (seed ${SEED}): the store does not load after SIGKILL: ${String(error)}`);
    }
    for (const [c, name] of names.entries()) {
      const record = (await reopened.get(name));
      assert.ok(record !== undefined, `run ${run}: ${name} is gone`);
      if (await verifyPassword(current[c] as string, record.hash)) continue;
      // The change in flight at the kill may have been written before its 204 could be sent.
      const pending = inFlight[c];
      const kept = pending !== undefined && (await verifyPassword(pending, record.hash));
      assert.ok(kept, `run ${run} (seed ${SEED}): ${name} lost its acknowledged password ${current[c]} (acknowledged this run: ${(acked[c] as string[]).length})`);
      current[c] = pending as string;
      inFlightKept++;
    }
    await reopened.close();
    acknowledged += acked.reduce((n, list) => n + list.length, 0);
  }
  t.diagnostic(`${RUNS[protocol]} kills; ${acknowledged} changes acknowledged and all kept; ${inFlightKept} unacknowledged in-flight changes were also written`);
  assert.ok(acknowledged > 0, 'some changes were acknowledged before the kills');
});

// Failure injection at the file level: the store's journal appends go through a FileHandle opened
// read-write on `<store>.journal` (lib/store/file/replica.ts). Wrapping fs/promises.open lets one write or
// one fsync of that handle fail, as a full disk (ENOSPC) or a failing device (EIO) would.
type Fault = 'write' | 'datasync';
const faults: { armed: Fault | undefined } = { armed: undefined };
const originalOpen = fsPromises.open;
(fsPromises as { open: typeof fsPromises.open }).open = (async (...args: Parameters<typeof fsPromises.open>) => {
  const handle: FileHandle = await originalOpen(...args);
  // 'r+', or the same as open(2)'s flags (the store opens its files with O_NOFOLLOW: lib/fs/private-files.ts).
  const readWrite = args[1] === 'r+' || (typeof args[1] === 'number' && (args[1] & (constants.O_WRONLY | constants.O_RDWR)) === constants.O_RDWR);
  if (String(args[0]).endsWith('.journal') && readWrite) {
    for (const method of ['write', 'datasync'] as const) {
      const real = handle[method].bind(handle) as (...a: unknown[]) => Promise<unknown>;
      (handle as unknown as Record<string, unknown>)[method] = async (...a: unknown[]) => {
        if (faults.armed === method) {
          faults.armed = undefined;
          throw Object.assign(new Error(`${method === 'write' ? 'ENOSPC: no space left on device' : 'EIO: i/o error'}, ${method}`), { code: method === 'write' ? 'ENOSPC' : 'EIO' });
        }
        return real(...a);
      };
    }
  }
  return handle;
}) as typeof fsPromises.open;
syncBuiltinESMExports();

const injected: ReadonlyArray<readonly [fault: Fault, via: 'basic' | 'form' | 'token']> = [
  ['write', 'basic'],
  ['datasync', 'basic'],
  ['write', 'form'],
  ['datasync', 'token'],
];

for (const protocol of PROTOCOLS) for (const [fault, via] of injected) {
  test(`U-1 a failed journal ${fault} during a ${via} change answers 503 and acknowledges nothing (${protocol})`, async (t) => {
    const changed: string[] = [];
    const s = await startService(t, { onPasswordChanged: (event) => void changed.push(event.name) }, protocol);
    const old = 'lemon-initial-passphrase-1';
    await s.service.users.add('alice', old);
    const { token } = await s.service.users.issueResetToken('alice');
    const client = createClient(s.url, s.ca, 1, undefined, protocol);
    t.after(() => client.close());
    const attempt = (password: string) =>
      via === 'form'
        ? client.send('POST', '/user/alice/resetpassword/', { 'content-type': 'application/json' }, JSON.stringify({ oldpasswd: old, newpasswd: password }))
        : client.send('PUT', '/user/alice/password', { authorization: via === 'token' ? `Bearer ${token}` : basic('alice', old), 'content-type': 'text/plain' }, password);

    faults.armed = fault;
    const failed = await attempt('lemon-lost-passphrase-2');
    assert.equal(faults.armed, undefined, 'the fault was hit');
    assert.equal(failed.status, 503);
    assert.equal(json(failed)['type'], '/problems/overloaded');
    assert.match(header(failed, 'retry-after') ?? '', /^\d+$/);

    // Nothing was acknowledged: not in memory, not on disk, no hook, and the token still works.
    assert.equal(await s.service.users.verify('alice', old), true);
    assert.equal(await s.service.users.verify('alice', 'lemon-lost-passphrase-2'), false);
    const disk = await openStore(s.store);
    const record = await disk.get('alice');
    await disk.close();
    assert.ok(record !== undefined && (await verifyPassword(old, record.hash)), 'the store on disk still has the old password');
    await sleep(20);
    assert.deepEqual(changed, []);

    // The service is not wedged: the same change, retried, goes through.
    const retried = await attempt('lemon-saved-passphrase-3');
    assert.equal(retried.status, 204);
    assert.equal(await s.service.users.verify('alice', 'lemon-saved-passphrase-3'), true);
  });
}
