// The command table is the one place a command is added: words, arguments, flags, usage, handler.
// These run main() in-process with a table that has one more command, as a later branch would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { Command } from '../../lib/cli/command.js';
import { COMMANDS } from '../../lib/cli/commands.js';
import { main } from '../../lib/cli/main.js';

function io(env: NodeJS.ProcessEnv = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  return { io: { stdin: new PassThrough(), stdout, stderr, env }, out: () => out, err: () => err };
}

const calls: { args: readonly string[]; store: unknown }[] = [];
const role: Command = {
  words: ['user', 'role'],
  args: ['NAME', 'ROLE'],
  synopsis: 'NAME admin|user',
  summary: "change a user's role",
  flags: ['store'],
  store: 'existing',
  run: async (ctx) => void calls.push({ args: ctx.args, store: ctx.options.store }),
};
const table = [...COMMANDS, role];

const cases: ReadonlyArray<readonly [argv: readonly string[], env: NodeJS.ProcessEnv, code: number, stream: 'out' | 'err', text: RegExp]> = [
  [['user'], {}, 2, 'err', /^httpskit user: missing command \(add, passwd, del, list, role\)/],
  [['user', '--help'], {}, 0, 'out', /\n {2}user role NAME admin\|user +change a user's role\n/],
  [['user', 'role', '--help'], {}, 0, 'out', /^Usage: httpskit user role NAME admin\|user \[options\]\n/],
  [['user', 'role', 'bob'], {}, 2, 'err', /^httpskit user role: missing ROLE \(see httpskit user role --help\)\n$/],
  [['user', 'role', 'bob', 'admin', '--digest'], {}, 2, 'err', /^httpskit: --digest does not apply to user role /],
  [['--help'], {}, 0, 'out', /\n {2}user role NAME admin\|user +change a user's role\n/],
];
for (const [argv, env, code, stream, text] of cases) {
  test(`C-4 with one more table entry: ${argv.join(' ')} → exit ${code}`, async () => {
    const r = io(env);
    assert.equal(await main(argv, r.io, table), code);
    assert.match(stream === 'out' ? r.out() : r.err(), text);
  });
}

test('C-3 the new command runs with its arguments and flags; the environment counts only for its own flags', async () => {
  const r = io({ HTTPSKIT_STORE: '/srv/users.json', HTTPSKIT_PORT: 'not-a-port' });
  assert.equal(await main(['user', 'role', 'bob', 'admin'], r.io, table), 0, r.err());
  assert.deepEqual(calls.at(-1), { args: ['bob', 'admin'], store: '/srv/users.json' });
});
