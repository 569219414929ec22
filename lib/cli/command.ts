import type { Readable, Writable } from 'node:stream';
import type { ServiceOptions } from '../config.js';
import type { Service } from '../service.js';
import type { CommandShape, FlagValue } from './args.js';
import type { FlagName } from './flags.js';

/** The process as the CLI sees it; tests pass their own streams. */
export interface CliIO {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM); injectable for tests. */
  readonly stopSignal?: Promise<string>;
}

/** What a command's handler gets: its arguments, flags, the options they set, and the process. */
export interface CommandContext {
  readonly args: readonly string[];
  readonly flags: ReadonlyMap<FlagName, FlagValue>;
  readonly options: ServiceOptions;
  readonly io: CliIO;
  /**
   * The service on the flags' options plus `extra`. For a command whose `store` is 'existing',
   * a file store that does not exist is refused (exit 1) before anything is created (U-1).
   */
  open(extra?: ServiceOptions): Promise<Service>;
}

/** One entry of the command table (commands.ts). */
export interface Command extends CommandShape {
  /** The usage line after the command's words, `NAME [--admin] [--digest]` (help adds `[options]`). */
  readonly synopsis: string;
  /** One line for the command list; `details` adds a paragraph to the command's own --help. */
  readonly summary: string;
  readonly details?: string;
  /** 'creates': may create the store (it writes); 'existing': needs one that exists (U-1). */
  readonly store: 'creates' | 'existing';
  /** Resolves on success (exit 0); a throw is a failure (exit 1) or, for a UsageError, exit 2. */
  readonly run: (ctx: CommandContext) => Promise<void>;
}
