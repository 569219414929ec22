import { stat } from 'node:fs/promises';
import { resolveConfig, type ServiceOptions } from '../config.js';
import { ServiceError } from '../errors.js';
import { createService, type Service } from '../service.js';
import { parseCommandLine, UsageError, type FlagValue } from './args.js';
import type { CliIO, Command, CommandContext } from './command.js';
import { COMMANDS } from './commands.js';
import { packageVersion } from '../package-version.js';
import { MEMORY_STORE, redactUrl, storeKind } from '../store/spec.js';
import { describe } from './describe.js';
import { commandHelp, groupHelp, programHelp } from './help.js';

export type { CliIO } from './command.js';

const PROGRAM = 'httpskit';

/** The command line (C-1..C-5). Returns the exit code: 0 success, 1 failure, 2 usage error. */
export async function main(argv: readonly string[], io: CliIO, commands: readonly Command[] = COMMANDS): Promise<number> {
  try {
    const parsed = parseCommandLine(argv, io.env, commands);
    switch (parsed.kind) {
      case 'version':
        io.stdout.write(`${packageVersion() ?? 'unknown'}\n`);
        return 0;
      case 'help':
        io.stdout.write(helpFor(parsed.command, parsed.group, commands) + '\n');
        return 0;
      case 'run': {
        const { command, sources } = parsed;
        // Every option is checked before any command touches the disk; the library names its
        // options, the user typed flags or variables (C-4).
        inFlagTerms(() => resolveConfig({ ...parsed.options, log: false }), command, sources);
        const ctx: CommandContext = {
          args: parsed.args,
          flags: parsed.flags,
          options: parsed.options,
          io,
          open: (extra) => open(command, { ...parsed.options, ...extra }, sources),
        };
        await command.run(ctx);
        return 0;
      }
      default:
        return parsed satisfies never;
    }
  } catch (error) {
    if (error instanceof UsageError) {
      const { help = [], scope = [], showGroup } = error.context;
      if (showGroup !== undefined) io.stdout.write(groupHelp(PROGRAM, showGroup, commands) + '\n');
      io.stderr.write(`${[PROGRAM, ...scope].join(' ')}: ${error.message} (see ${[PROGRAM, ...help, '--help'].join(' ')})\n`);
      return 2;
    }
    io.stderr.write(`${PROGRAM}: ${describe(error)}\n`);
    return 1;
  }
}

function helpFor(command: Command | undefined, group: string | undefined, commands: readonly Command[]): string {
  if (command !== undefined) return commandHelp(PROGRAM, command);
  if (group !== undefined) return groupHelp(PROGRAM, group, commands);
  return programHelp(PROGRAM, commands);
}

/** The service for a command; a command that only reads never creates a store (U-1). */
async function open(command: Command, options: ServiceOptions, sources: ReadonlyMap<string, FlagValue>): Promise<Service> {
  const service = inFlagTerms(() => createService(options), command, sources);
  const store = service.config.store;
  // A memory store (U-6) lives and dies with one process: a command other than serve never finds
  // one to read, and what it wrote there would be gone when it ends.
  const kind = storeKind(store);
  if (kind === 'memory' && command.words[0] !== 'serve') {
    // A value this command cannot take: a usage error (C-4), like any other refused --store.
    const source = sources.get('store')?.source ?? '--store';
    throw new UsageError(`${source}: a ${MEMORY_STORE} store holds no users outside the server that made it (nothing would be kept; use it with "${PROGRAM} serve")`, { help: command.words });
  }
  if (command.store !== 'existing') return service;
  // A database URL (S-1) is the database's business; only file paths are checked here.
  if (kind === 'file' && !(await storeExists(store))) {
    throw new Error(`no user store at ${store} (nothing was created; "${PROGRAM} user add" creates one)`);
  }
  return service;
}

/** A file store exists when its snapshot or its journal does (the store recovers from either). */
async function storeExists(path: string): Promise<boolean> {
  for (const file of [path, `${path}.journal`]) {
    try {
      await stat(file);
      return true;
    } catch (error) {
      // Anything but "not there" (EACCES …) is for the store to report when it opens.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ENOTDIR') return true;
    }
  }
  return false;
}

/**
 * Runs option validation, turning an ERR_INVALID_OPTION about a library option that a flag set
 * (`trustProxy: …`, `scrypt.ln must …`) into a usage error naming that flag or variable.
 */
function inFlagTerms<T>(fn: () => T, command: Command, sources: ReadonlyMap<string, FlagValue>): T {
  try {
    return fn();
  } catch (error) {
    if (!(error instanceof ServiceError) || error.code !== 'ERR_INVALID_OPTION') throw error;
    const option = /^[A-Za-z]+/.exec(error.message)?.[0];
    const from = option === undefined ? undefined : sources.get(option);
    if (option === undefined || from === undefined) throw error;
    // "scrypt.ln must be …" → "--scrypt-ln must be …"; "trustProxy: not …" → "--trust-proxy: not …";
    // other prose ("scrypt cost needs …") keeps its words after the flag and value.
    const rest = error.message.slice(option.length).replace(/^\.[A-Za-z]+/, '');
    const help = { help: command.words };
    const value = redactUrl(String(from.value));
    if (!/^( must |:)/.test(rest)) throw new UsageError(`${from.source} "${value}": ${error.message}`, help);
    const named = typeof from.value !== 'string' || rest.includes(from.value);
    throw new UsageError(`${from.source}${rest}${named ? '' : ` (got "${value}")`}`, help);
  }
}
