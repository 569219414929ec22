// --help texts (C-4), all made from the command and flag tables so they cannot drift from them.
import type { Command } from './command.js';
import { FALSE_WORDS, FLAGS, GLOBAL_FLAGS, TRUE_WORDS, type FlagName, type FlagSpec } from './flags.js';

/** The password rule of C-3, for the help of every command that reads one. */
export const PASSWORDS = 'Passwords are never arguments: they are read from standard input (one line), or prompted twice on a terminal.';
const EXIT_CODES = 'Exit codes: 0 success, 1 failure, 2 usage error.';

/** The whole program: every command, every flag with its environment variable. */
export function programHelp(program: string, commands: readonly Command[]): string {
  return [
    `Usage: ${program} [COMMAND] [options]`,
    '',
    'Commands:',
    ...commandList(commands),
    '',
    PASSWORDS,
    '',
    `Options (environment variable in brackets; "${program} COMMAND --help" lists a command's own):`,
    ...flagLines(Object.keys(FLAGS) as FlagName[]),
    '',
    booleanNote(),
    EXIT_CODES,
  ].join('\n');
}

/** A group such as `user`: its commands. */
export function groupHelp(program: string, group: string, commands: readonly Command[]): string {
  const members = commands.filter((c) => c.words[0] === group);
  return [
    `Usage: ${program} ${group} COMMAND [options]`,
    '',
    'Commands:',
    ...commandList(members),
    '',
    `"${program} ${group} COMMAND --help" lists a command's options.`,
  ].join('\n');
}

/** One command: its usage line and only its own options. */
export function commandHelp(program: string, command: Command): string {
  const flags = [...command.flags, ...GLOBAL_FLAGS];
  const hasEnv = flags.some((name) => (FLAGS[name] as FlagSpec).env !== undefined);
  const hasBoolEnv = flags.some((name) => FLAGS[name].type === 'boolean' && (FLAGS[name] as FlagSpec).env !== undefined);
  return [
    usageLine(program, command),
    '',
    `${capitalise(command.summary)}.${command.details === undefined ? '' : ` ${command.details}`}`,
    '',
    hasEnv ? 'Options (environment variable in brackets):' : 'Options:',
    ...flagLines(flags),
    ...(hasBoolEnv ? ['', booleanNote()] : []),
    '',
    EXIT_CODES,
  ].join('\n');
}

export function usageLine(program: string, command: Command): string {
  return `Usage: ${[program, ...command.words, command.synopsis, '[options]'].filter((s) => s !== '').join(' ')}`;
}

function commandList(commands: readonly Command[]): string[] {
  const left = commands.map((c) => [...c.words, c.synopsis].filter((s) => s !== '').join(' '));
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return commands.map((c, i) => `  ${(left[i] ?? '').padEnd(width)}${c.summary}`);
}

/** One line per flag; every description starts at one column, two spaces past the widest flag. */
function flagLines(names: readonly FlagName[]): string[] {
  const left = names.map((name) => {
    const f: FlagSpec = FLAGS[name];
    return [f.short === undefined ? '' : `-${f.short}, `, `--${name}`, f.type === 'string' ? ` ${f.value}` : ''].join('');
  });
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return names.map((name, i) => {
    const f: FlagSpec = FLAGS[name];
    return `  ${(left[i] ?? '').padEnd(width)}${f.help}${f.env === undefined ? '' : ` [${f.env}]`}`;
  });
}

function booleanNote(): string {
  return `Boolean variables take ${TRUE_WORDS.join(' or ')} (on), ${FALSE_WORDS.join(' or ')} (off); an empty one is unset.`;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
