import { parseArgs } from 'node:util';

/** Flags of the command line (C-2, C-3), each with its environment variable. */
export const FLAGS = {
  host: { type: 'string', env: 'HTTPSKIT_HOST', help: 'address to bind (default 127.0.0.1)' },
  port: { type: 'string', env: 'HTTPSKIT_PORT', help: 'HTTPS port, 0 picks a free one (default 8443)' },
  store: { type: 'string', env: 'HTTPSKIT_STORE', help: 'user store file (default ./data/users.json)' },
  cert: { type: 'string', env: 'HTTPSKIT_CERT', help: 'PEM certificate file (default: a development certificate)' },
  key: { type: 'string', env: 'HTTPSKIT_KEY', help: 'PEM private key file, with --cert' },
  'cert-dir': { type: 'string', env: 'HTTPSKIT_CERT_DIR', help: 'where the development certificate lives (default ./certs)' },
  'http-port': { type: 'string', env: 'HTTPSKIT_HTTP_PORT', help: 'also listen on plain HTTP (representations only; default off)' },
  digest: { type: 'boolean', env: 'HTTPSKIT_DIGEST', help: 'accept HTTP Digest (RFC 7616) on password changes (default off)' },
  'trust-proxy': { type: 'string', env: 'HTTPSKIT_TRUST_PROXY', help: 'comma-separated proxy addresses/CIDRs whose X-Forwarded-* count' },
  'min-length': { type: 'string', env: 'HTTPSKIT_MIN_LENGTH', help: 'minimum password length, 8..64 (default 15)' },
  'scrypt-ln': { type: 'string', env: 'HTTPSKIT_SCRYPT_LN', help: 'scrypt cost as log2(N) (default 17)' },
  'no-hsts': { type: 'boolean', env: 'HTTPSKIT_NO_HSTS', help: 'do not send Strict-Transport-Security' },
  'on-reset-token': { type: 'string', env: 'HTTPSKIT_ON_RESET_TOKEN', help: 'deliver reset tokens asked for by POST /user/NAME/resettoken: COMMAND runs (no shell) with the event as one JSON line on stdin' },
  admin: { type: 'boolean', env: undefined, help: 'with "user add": make the user an admin' },
  help: { type: 'boolean', env: undefined, help: 'show this help' },
  version: { type: 'boolean', env: undefined, help: 'show the version' },
} as const;

export type FlagName = keyof typeof FLAGS;
export type Flags = { -readonly [K in FlagName]?: (typeof FLAGS)[K]['type'] extends 'boolean' ? boolean : string };

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Parses argv (without node and script) with env fallbacks; throws UsageError on anything unknown. */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): { positionals: string[]; flags: Flags } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: Object.fromEntries(Object.entries(FLAGS).map(([name, f]) => [name, { type: f.type }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0] ?? 'bad arguments');
  }
  const flags: Record<string, string | boolean> = {};
  for (const [name, f] of Object.entries(FLAGS)) {
    const given = (parsed.values as Record<string, string | boolean | undefined>)[name];
    if (given !== undefined) {
      flags[name] = given;
      continue;
    }
    const fromEnv = f.env === undefined ? undefined : env[f.env];
    if (fromEnv === undefined || fromEnv === '') continue;
    if (f.type === 'boolean') {
      if (!/^(1|true|yes|on|0|false|no|off)$/i.test(fromEnv)) throw new UsageError(`${f.env} must be true or false, got "${fromEnv}"`);
      flags[name] = /^(1|true|yes|on)$/i.test(fromEnv);
    } else {
      flags[name] = fromEnv;
    }
  }
  return { positionals: parsed.positionals, flags: flags as Flags };
}

/** An integer flag in range, or a UsageError naming the flag. */
export function integerFlag(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

export function helpText(command: string): string {
  const lines = [
    `Usage: ${command} [serve] [options]          start the HTTPS server`,
    `       ${command} user add NAME [--admin]     create a user (password from stdin or a prompt)`,
    `       ${command} user passwd NAME            set a user's password`,
    `       ${command} user del NAME               delete a user`,
    `       ${command} user list                   list users and roles`,
    `       ${command} user role NAME admin|user   give a user another role`,
    `       ${command} reset-token NAME            issue a one-time password reset token`,
    '',
    'Passwords are never arguments: they are read from standard input (one line), or prompted twice on a terminal.',
    '',
    'Options (environment variable in brackets):',
  ];
  for (const [name, f] of Object.entries(FLAGS)) {
    const flag = `--${name}${f.type === 'string' ? ' VALUE' : ''}`;
    lines.push(`  ${flag.padEnd(22)} ${f.help}${f.env === undefined ? '' : ` [${f.env}]`}`);
  }
  lines.push('', 'Exit codes: 0 success, 1 failure, 2 usage error.');
  return lines.join('\n');
}
