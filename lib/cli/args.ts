// argv → which command, its arguments and its flag values with where each came from. Pure: no
// I/O, so every usage error (C-4: exit 2) is found before anything touches the disk.
import { parseArgs } from 'node:util';
import type { ServiceOptions } from '../config.js';
import { BadFlagValue, FALSE_WORDS, FLAGS, GLOBAL_FLAGS, type FlagName, type FlagSpec, TRUE_WORDS } from './flags.js';

/** A command's identity as the parser needs it (the full entry lives in commands.ts). */
export interface CommandShape {
  /** The words that name it, `['user', 'add']`; the first command listed is the default. */
  readonly words: readonly string[];
  /** Its positional arguments, by placeholder: `['NAME']`. */
  readonly args: readonly string[];
  readonly flags: readonly FlagName[];
}

/** A flag's value and how the user gave it: `--port` or `HTTPSKIT_PORT`, for messages. */
export interface FlagValue {
  readonly value: string | boolean;
  readonly source: string;
}

export type Parsed<C extends CommandShape> =
  | { readonly kind: 'version' }
  /** `--help`: the command's help, a group's (`user --help`), or the whole program's. */
  | { readonly kind: 'help'; readonly command: C | undefined; readonly group: string | undefined }
  | {
      readonly kind: 'run';
      readonly command: C;
      readonly args: readonly string[];
      readonly flags: ReadonlyMap<FlagName, FlagValue>;
      /** The library options the flags set, and for each option key the flag or variable that set it. */
      readonly options: ServiceOptions;
      readonly sources: ReadonlyMap<string, FlagValue>;
    };

/** A usage error (exit 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly context: {
      /** The command whose --help the message points to. */
      readonly help?: readonly string[];
      /** The message is about this command's words (`httpskit user add: missing NAME`). */
      readonly scope?: readonly string[];
      /** Print this group's list of commands on stdout first. */
      readonly showGroup?: string;
    } = {},
  ) {
    super(message);
  }
}

/** Parses argv (without node and script) against the command table, with environment fallbacks. */
export function parseCommandLine<C extends CommandShape>(argv: readonly string[], env: NodeJS.ProcessEnv, commands: readonly C[]): Parsed<C> {
  const { tokens = [], positionals } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(FLAGS).map(([name, f]: [string, FlagSpec]) => [name, { type: f.type, ...(f.short === undefined ? {} : { short: f.short }) }]),
    ),
    allowPositionals: true,
    // Node's strict mode throws prose with quoting of its own; we word the errors ourselves.
    strict: false,
    tokens: true,
  });
  // The last occurrence of a flag wins, as with parseArgs' own values.
  const given = new Map<string, Given>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    given.set(token.name, { name: token.name, raw: token.rawName, value: token.value, inline: token.inlineValue === true });
  }
  if (given.has('version')) return { kind: 'version' };
  const unknown = [...given.values()].find((g) => !(g.name in FLAGS));
  let found: Found<C>;
  try {
    found = findCommand(positionals, commands, given.has('help'));
  } catch (error) {
    // In `--frob bar user list` or `--port --store x`, "bar" and "x" look like commands: the
    // option is the real mistake.
    if (unknown !== undefined) throw new UsageError(`unknown option ${unknown.raw}`);
    for (const g of given.values()) flagValue(FLAGS[g.name as FlagName], `--${g.name}`, g, []);
    throw error;
  }
  if (found.kind === 'help') return found;
  const { command } = found;
  const words = command.words;
  if (given.has('help')) return { kind: 'help', command, group: undefined };
  const see = (message: string, scoped = false): UsageError => new UsageError(message, { help: words, ...(scoped ? { scope: words } : {}) });
  if (unknown !== undefined) throw see(`unknown option ${unknown.raw}`);
  const allowed = new Set<string>([...command.flags, ...GLOBAL_FLAGS]);
  for (const g of given.values()) {
    if (!allowed.has(g.name)) throw see(`${g.raw} does not apply to ${words.join(' ')}`);
  }

  const flags = new Map<FlagName, FlagValue>();
  for (const name of command.flags) {
    const spec: FlagSpec = FLAGS[name];
    const g = given.get(name);
    if (g !== undefined) {
      flags.set(name, flagValue(spec, `--${name}`, g, words));
      continue;
    }
    const text = spec.env === undefined ? undefined : env[spec.env];
    if (text === undefined || text === '' || spec.env === undefined) continue;
    flags.set(name, { value: spec.type === 'boolean' ? booleanWord(spec.env, text, words) : text, source: spec.env });
  }
  // After the flags: in `--port --store x` the missing value, not the stray "x", is the mistake.
  const args = positionals.slice(words.length);
  const missing = command.args[args.length];
  if (missing !== undefined) throw see(`missing ${missing}`, true);
  if (args.length > command.args.length) throw see(`unexpected argument "${args[command.args.length] ?? ''}"`, true);
  const { options, sources } = toOptions(flags, words);
  return { kind: 'run', command, args, flags, options, sources };
}

interface Given {
  readonly name: string;
  /** As typed: `--port`, `-h`. */
  readonly raw: string;
  readonly value: string | undefined;
  readonly inline: boolean;
}

type Found<C> = { kind: 'found'; command: C } | { kind: 'help'; command: C | undefined; group: string | undefined };

/**
 * The command named by the longest run of leading words. Without words it is the first command
 * of the table (serve) or, with --help, the program's help. A group's first word alone (`user`)
 * is its help with --help, else a usage error that lists the group's commands.
 */
function findCommand<C extends CommandShape>(positionals: readonly string[], commands: readonly C[], help: boolean): Found<C> {
  const first = positionals[0];
  if (first === undefined) {
    const fallback = commands[0];
    if (help || fallback === undefined) return { kind: 'help', command: undefined, group: undefined };
    return { kind: 'found', command: fallback };
  }
  let best: C | undefined;
  for (const c of commands) {
    if (c.words.every((w, i) => positionals[i] === w) && (best === undefined || c.words.length > best.words.length)) best = c;
  }
  if (best !== undefined) return { kind: 'found', command: best };
  const group = commands.filter((c) => c.words.length > 1 && c.words[0] === first);
  if (group.length === 0) {
    const names = [...new Set(commands.map((c) => c.words[0]))].join(', ');
    throw new UsageError(`unknown command "${first}" (${names})`);
  }
  if (help && positionals.length === 1) return { kind: 'help', command: undefined, group: first };
  const names = group.map((c) => c.words[1]).join(', ');
  const second = positionals[1];
  const context = { help: [first], scope: [first] };
  if (second === undefined) throw new UsageError(`missing command (${names})`, { ...context, showGroup: first });
  throw new UsageError(`unknown command "${second}" (${names})`, context);
}

function flagValue(spec: FlagSpec, name: string, g: Given, help: readonly string[]): FlagValue {
  if (spec.type === 'boolean') {
    if (g.value !== undefined) throw new UsageError(`${name} takes no value, got "${g.value}"`, { help });
    return { value: true, source: name };
  }
  // Unlike strict mode, the lenient parser takes `--port --store x` as port "--store".
  if (typeof g.value !== 'string' || (!g.inline && g.value.startsWith('--'))) throw new UsageError(`${name} needs a value`, { help });
  return { value: g.value, source: name };
}

function booleanWord(variable: string, text: string, help: readonly string[]): boolean {
  if (TRUE_WORDS.includes(text)) return true;
  if (FALSE_WORDS.includes(text)) return false;
  throw new UsageError(`${variable} must be ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ').replace(/, (?=[^,]*$)/, ' or ')}, got "${text}"`, { help });
}

/** Every flag's library options, checked for syntax; remembers which flag set which option key. */
function toOptions(flags: ReadonlyMap<FlagName, FlagValue>, help: readonly string[]): { options: ServiceOptions; sources: Map<string, FlagValue> } {
  const options: ServiceOptions = {};
  const sources = new Map<string, FlagValue>();
  for (const [name, v] of flags) {
    const spec: FlagSpec = FLAGS[name];
    let set: ServiceOptions;
    try {
      if (spec.toOptions === undefined) continue;
      set = spec.type === 'boolean' ? spec.toOptions(v.value === true) : spec.toOptions(String(v.value));
    } catch (error) {
      if (error instanceof BadFlagValue) throw new UsageError(`${v.source} ${error.message}`, { help });
      throw error;
    }
    // The PostgreSQL flags each set one key of one `postgres` object.
    Object.assign(options, set, set.postgres === undefined ? {} : { postgres: { ...options.postgres, ...set.postgres } });
    for (const key of Object.keys(set)) sources.set(key, v);
  }
  return { options, sources };
}
