import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ServiceOptions } from '../config.js';
import { ServiceError } from '../errors.js';
import { createService } from '../service.js';
import { createCommandDelivery } from '../users/deliver-command.js';
import { PasswordPolicyError } from '../users/users.js';
import { helpText, integerFlag, parseCommandLine, UsageError, type Flags } from './args.js';
import { readPassword } from './prompt.js';

export interface CliIO {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM); injectable for tests. */
  readonly stopSignal?: Promise<string>;
}

const COMMAND = 'httpskit';

/** The command line (C-1..C-5). Returns the exit code: 0 success, 1 failure, 2 usage error. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    const { positionals, flags } = parseCommandLine(argv, io.env);
    if (flags.help === true) {
      io.stdout.write(helpText(COMMAND) + '\n');
      return 0;
    }
    if (flags.version === true) {
      io.stdout.write(`${version()}\n`);
      return 0;
    }
    const [command = 'serve', sub, name, ...rest] = positionals;
    if (command === 'serve') {
      if (sub !== undefined) throw new UsageError(`serve takes no arguments, got "${sub}"`);
      return await serve(flags, io);
    }
    if (command === 'user') {
      if (sub === 'list') {
        if (name !== undefined) throw new UsageError('user list takes no arguments');
        return await withService(flags, io, async (s) => {
          for (const u of await s.users.list()) io.stdout.write(`${u.name}\t${u.role}\t${u.passwordChangedAt.toISOString()}\n`);
        });
      }
      if (sub === 'role') {
        const [role, ...more] = rest;
        if (name === undefined || (role !== 'admin' && role !== 'user') || more.length > 0) throw new UsageError(`usage: ${COMMAND} user role NAME admin|user`);
        return await withService(flags, io, async (s) => {
          await s.users.setRole(name, role);
          io.stderr.write(`"${name}" is now ${role === 'admin' ? 'an admin' : 'a user'}\n`);
        });
      }
      if (sub !== 'add' && sub !== 'passwd' && sub !== 'del') throw new UsageError(`unknown user command "${sub ?? ''}" (add, passwd, del, list, role)`);
      if (name === undefined || rest.length > 0) throw new UsageError(`usage: ${COMMAND} user ${sub} NAME`);
      if (flags.admin === true && sub !== 'add') throw new UsageError('--admin goes with "user add"');
      return await withService(flags, io, async (s) => {
        if (sub === 'del') {
          if (!(await s.users.remove(name))) throw new ServiceError('ERR_USER_NOT_FOUND', `no user "${name}"`);
          io.stderr.write(`deleted user "${name}"\n`);
          return;
        }
        const password = await readPassword(io, 'New password');
        if (sub === 'add') {
          await s.users.add(name, password, { role: flags.admin === true ? 'admin' : 'user' });
          io.stderr.write(`added ${flags.admin === true ? 'admin' : 'user'} "${name}"\n`);
        } else {
          await s.users.setPassword(name, password);
          io.stderr.write(`changed the password of "${name}"\n`);
        }
      });
    }
    if (command === 'reset-token') {
      if (sub === undefined || name !== undefined) throw new UsageError(`usage: ${COMMAND} reset-token NAME`);
      return await withService(flags, io, async (s) => {
        const { token, expiresAt } = await s.users.issueResetToken(sub);
        io.stdout.write(`${token}\n`);
        io.stderr.write(`one-time reset token for "${sub}", valid until ${expiresAt.toISOString()}; it is shown only once\n`);
      });
    }
    throw new UsageError(`unknown command "${command}"`);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${COMMAND}: ${error.message} (see ${COMMAND} --help)\n`);
      return 2;
    }
    io.stderr.write(`${COMMAND}: ${describe(error)}\n`);
    return 1;
  }
}

function describe(error: unknown): string {
  if (error instanceof PasswordPolicyError) return `password refused by the policy: ${error.violations.join(', ')}`;
  if (error instanceof Error) return error.message.split('\n')[0] ?? 'failed';
  return String(error);
}

/** Options common to every command, from flags and environment. */
async function options(flags: Flags): Promise<ServiceOptions> {
  const o: ServiceOptions = {};
  if (flags.store !== undefined) o.store = flags.store;
  const min = integerFlag(flags['min-length'], 'min-length', 8, 64);
  if (min !== undefined) o.minPasswordLength = min;
  const ln = integerFlag(flags['scrypt-ln'], 'scrypt-ln', 10, 24);
  if (ln !== undefined) o.scrypt = { ln, r: 8, p: 1 };
  if (flags.digest === true) o.digest = true;
  return o;
}

async function withService(flags: Flags, io: CliIO, run: (s: ReturnType<typeof createService>) => Promise<void>): Promise<number> {
  const service = createService({ ...(await options(flags)), log: false });
  try {
    await run(service);
    return 0;
  } finally {
    await service.close();
  }
}

async function serve(flags: Flags, io: CliIO): Promise<number> {
  const o = await options(flags);
  if (flags.host !== undefined) o.host = flags.host;
  const port = integerFlag(flags.port, 'port', 0, 65_535);
  if (port !== undefined) o.port = port;
  const httpPort = integerFlag(flags['http-port'], 'http-port', 0, 65_535);
  if (httpPort !== undefined) o.httpPort = httpPort;
  if (flags['cert-dir'] !== undefined) o.certDir = flags['cert-dir'];
  if (flags['trust-proxy'] !== undefined) o.trustProxy = flags['trust-proxy'];
  if (flags['no-hsts'] === true) o.hstsMaxAge = false;
  if ((flags.cert === undefined) !== (flags.key === undefined)) throw new UsageError('--cert and --key go together');
  if (flags.cert !== undefined && flags.key !== undefined) {
    o.cert = await readPem(flags.cert, 'certificate (--cert)');
    o.key = await readPem(flags.key, 'key (--key)');
  }
  if (flags['on-reset-token'] !== undefined) {
    try {
      o.onResetToken = createCommandDelivery(flags['on-reset-token']);
    } catch (error) {
      throw new UsageError(`--on-reset-token: ${(error as Error).message}`);
    }
  }
  o.log = (line) => void io.stdout.write(line + '\n');
  const service = createService(o);
  try {
    await service.listen();
  } catch (error) {
    await service.close().catch(() => {});
    const code = (error as { code?: unknown }).code;
    const what = typeof code === 'string' && code.startsWith('ERR_OSSL') ? 'the certificate or key is not usable: ' : '';
    throw new Error(`cannot start: ${what}${describe(error)}`);
  }
  const signal = await (io.stopSignal ?? processSignal());
  io.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'stopping', signal }) + '\n');
  await service.close(10_000);
  return 0;
}

function processSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

async function readPem(path: string, what: string): Promise<Buffer> {
  let pem: Buffer;
  try {
    pem = await readFile(path);
  } catch (error) {
    throw new Error(`cannot read the ${what} file "${path}": ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!pem.includes('-----BEGIN')) throw new Error(`the ${what} file "${path}" is not PEM`);
  return pem;
}

/** The package version, found by walking up from this module to our package.json. */
function version(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'httpskit' && pkg.version !== undefined) return pkg.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}
