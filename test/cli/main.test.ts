// The command table is the one place a command is added: words, arguments, flags, usage, handler.
// These run main() in-process with a table that has one more command, as a later branch would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { Command } from '../../lib/cli/command.js';
import { COMMANDS } from '../../lib/cli/commands.js';
import { main } from '../../lib/cli/main.js';
import { POSTGRES_FLAGS } from '../../lib/cli/store-commands.js';

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
// A hypothetical command (`user role`, the first one added this way, is in the real table now).
const role: Command = {
  words: ['user', 'tag'],
  args: ['NAME', 'TAG'],
  synopsis: 'NAME TAG',
  summary: 'tag a user',
  flags: ['store'],
  store: 'existing',
  run: async (ctx) => void calls.push({ args: ctx.args, store: ctx.options.store }),
};
const table = [...COMMANDS, role];

const cases: ReadonlyArray<readonly [argv: readonly string[], env: NodeJS.ProcessEnv, code: number, stream: 'out' | 'err', text: RegExp]> = [
  [['user'], {}, 2, 'err', /^httpskit user: missing command \(add, passwd, del, list, role, tag\)/],
  [['user', '--help'], {}, 0, 'out', /\n {2}user tag NAME TAG +tag a user\n/],
  [['user', 'tag', '--help'], {}, 0, 'out', /^Usage: httpskit user tag NAME TAG \[options\]\n/],
  [['user', 'tag', 'bob'], {}, 2, 'err', /^httpskit user tag: missing TAG \(see httpskit user tag --help\)\n$/],
  [['user', 'tag', 'bob', 'x', '--digest'], {}, 2, 'err', /^httpskit: --digest does not apply to user tag /],
  [['--help'], {}, 0, 'out', /\n {2}user tag NAME TAG +tag a user\n/],
  [['--help'], {}, 0, 'out', /\n {2}user role NAME admin\|user +give a user another role/],
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
  assert.equal(await main(['user', 'tag', 'bob', 'x'], r.io, table), 0, r.err());
  assert.deepEqual(calls.at(-1), { args: ['bob', 'x'], store: '/srv/users.json' });
});

test('C-2 every command that opens the store takes the PostgreSQL flags, so it works on a cluster the way serve does', () => {
  for (const command of COMMANDS) {
    if (!command.flags.includes('store')) continue;
    for (const flag of POSTGRES_FLAGS) assert.ok(command.flags.includes(flag), `${command.words.join(' ')} lacks --${flag}`);
  }
});
