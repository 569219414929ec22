// The command table (C-2, C-3). Adding a command is one entry: its words, positional arguments,
// flags (from flags.ts), usage line, whether it may create the store, and its handler.
import { ServiceError } from '../errors.js';
import type { Service } from '../service.js';
import { checkNewUserName } from '../users/names.js';
import { UsageError } from './args.js';
import type { Command, CommandContext } from './command.js';
import { PASSWORDS } from './help.js';
import { readPassword } from './prompt.js';
import { serve } from './serve.js';
import { POSTGRES_FLAGS, STORE_COMMANDS } from './store-commands.js';

/** Flags of every command that hashes a password (the policy and the Digest secret apply). */
const PASSWORD_FLAGS = ['store', 'digest', 'digest-key', 'min-length', 'scrypt-ln', ...POSTGRES_FLAGS] as const;

/** The first entry is the default command (`httpskit` alone is `httpskit serve`). */
export const COMMANDS: readonly Command[] = [
  {
    words: ['serve'],
    args: [],
    synopsis: '',
    summary: 'start the HTTPS server (the default command)',
    flags: ['host', 'port', 'store', 'cert', 'key', 'cert-dir', 'http-port', 'digest', 'digest-key', 'trust-proxy', 'min-length', 'scrypt-ln', 'no-hsts', 'no-http2', ...POSTGRES_FLAGS, 'no-migrate', 'metrics-port', 'shutdown-delay', 'log-level', 'on-reset-token'],
    store: 'creates',
    run: serve,
  },
  {
    words: ['user', 'add'],
    args: ['NAME'],
    synopsis: 'NAME [--admin] [--digest]',
    summary: 'create a user',
    details: `${PASSWORDS} A server running on the store (or a database's recorded settings) decides whether the Digest secret is written too; with none running, give --digest when the server runs with it, so the user can use Digest at once.`,
    flags: [...PASSWORD_FLAGS, 'admin'],
    store: 'creates',
    run: async (ctx) => {
      // Before the store is created and before a terminal asks for a password (U-1, U-2).
      const check = checkNewUserName(ctx.args[0] ?? '');
      if (!check.ok) throw new ServiceError('ERR_INVALID_NAME', `invalid user name ${JSON.stringify(ctx.args[0])} (${check.violation})`);
      await withService(ctx, async (s, name) => {
        const role = ctx.flags.get('admin')?.value === true ? 'admin' : 'user';
        await s.users.add(name, await readPassword(ctx.io, 'New password'), { role });
        ctx.io.stderr.write(`added ${role} "${name}"\n`);
      });
    },
  },
  {
    words: ['user', 'passwd'],
    args: ['NAME'],
    synopsis: 'NAME [--digest]',
    summary: "set a user's password",
    details: `${PASSWORDS} A server running on the store (or a database's recorded settings) decides whether the Digest secret is written too; with none running, give --digest when the server runs with it, or the user loses Digest until their next Basic login.`,
    flags: PASSWORD_FLAGS,
    store: 'existing',
    run: (ctx) =>
      withService(ctx, async (s, name) => {
        // Before a terminal asks for a password that would go nowhere.
        if (!(await s.users.list()).some((user) => user.name === name)) throw new ServiceError('ERR_USER_NOT_FOUND', `no user "${name}"`);
        await s.users.setPassword(name, await readPassword(ctx.io, 'New password'));
        ctx.io.stderr.write(`changed the password of "${name}"\n`);
      }),
  },
  {
    words: ['user', 'del'],
    args: ['NAME'],
    synopsis: 'NAME [--force]',
    summary: 'delete a user (the last admin only with --force)',
    flags: ['store', 'force', ...POSTGRES_FLAGS],
    store: 'existing',
    run: (ctx) =>
      withService(ctx, async (s, name) => {
        // As `user role`: the only admin stays unless the operator says so (A-11's force).
        const force = ctx.flags.get('force')?.value === true;
        let removed: boolean;
        try {
          removed = await s.users.remove(name, { force });
        } catch (error) {
          if (error instanceof ServiceError && error.code === 'ERR_LAST_ADMIN') {
            throw new ServiceError('ERR_LAST_ADMIN', `"${name}" is the only admin; make another user admin first, or pass --force`);
          }
          throw error;
        }
        if (!removed) throw new ServiceError('ERR_USER_NOT_FOUND', `no user "${name}"`);
        ctx.io.stderr.write(`deleted user "${name}"\n`);
      }),
  },
  {
    words: ['user', 'list'],
    args: [],
    synopsis: '',
    summary: 'list users: name, role and when the password last changed (tab-separated)',
    flags: ['store', ...POSTGRES_FLAGS],
    store: 'existing',
    run: (ctx) =>
      withService(ctx, async (s) => {
        for (const u of await s.users.list()) ctx.io.stdout.write(`${u.name}\t${u.role}\t${u.passwordChangedAt.toISOString()}\n`);
      }),
  },
  {
    words: ['user', 'role'],
    args: ['NAME', 'ROLE'],
    synopsis: 'NAME admin|user',
    summary: 'give a user another role (the last admin stays one)',
    flags: ['store', ...POSTGRES_FLAGS],
    store: 'existing',
    run: async (ctx) => {
      const role = ctx.args[1];
      // Checked before the store is opened.
      if (role !== 'admin' && role !== 'user') throw new UsageError(`ROLE must be admin or user, got "${role ?? ''}"`, { help: ['user', 'role'], scope: ['user', 'role'] });
      await withService(ctx, async (s, name) => {
        await s.users.setRole(name, role);
        ctx.io.stderr.write(`"${name}" is now ${role === 'admin' ? 'an admin' : 'a user'}\n`);
      });
    },
  },
  {
    words: ['reset-token'],
    args: ['NAME'],
    synopsis: 'NAME',
    summary: 'issue a one-time password reset token (printed once, on stdout)',
    flags: ['store', ...POSTGRES_FLAGS],
    store: 'existing',
    run: (ctx) =>
      withService(ctx, async (s, name) => {
        const { token, expiresAt } = await s.users.issueResetToken(name);
        ctx.io.stdout.write(`${token}\n`);
        ctx.io.stderr.write(`one-time reset token for "${name}", valid until ${expiresAt.toISOString()}; it is shown only once\n`);
      }),
  },
  ...STORE_COMMANDS,
];

/** Runs `fn` on the service with the first argument (the user name), and closes the store after. */
async function withService(ctx: CommandContext, fn: (service: Service, name: string) => Promise<void>): Promise<void> {
  const service = await ctx.open({ log: false });
  try {
    await fn(service, ctx.args[0] ?? '');
  } finally {
    await service.close();
  }
}

