// docs/reference/cli.md is the one place a user finds every command, flag and environment variable
// (H-6, C-2): kept in step with the command and flag tables, both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMANDS } from '../../lib/cli/commands.js';
import { FLAGS, type FlagSpec } from '../../lib/cli/flags.js';
import { prose, read } from './markdown.js';

const page = read('docs/reference/cli.md');
const rows = page.split('\n').filter((line) => line.startsWith('| `-'));

test('C-2 every flag has a row in docs/reference/cli.md with its environment variable and its commands', () => {
  for (const [name, spec] of Object.entries(FLAGS) as Array<[string, FlagSpec]>) {
    const row = rows.find((r) => new RegExp(`\`[^\`]*--${name}(?![\\w-])`).test(r.split(/(?<!\\)\|/)[1] ?? ''));
    assert.ok(row, `--${name} has a row`);
    if (spec.env !== undefined) assert.ok(row.includes(`\`${spec.env}\``), `--${name}'s row names ${spec.env}`);
    if (name === 'help' || name === 'version') continue;
    const commands = COMMANDS.filter((c) => c.flags.includes(name as never)).map((c) => c.words.join(' '));
    // The Commands column: "all", "all but a, b", or the list "a, b".
    const column = (row.split(/(?<!\\)\|/)[4] ?? '').trim();
    const all = COMMANDS.map((c) => c.words.join(' '));
    const listed = column === 'all' ? all : column.startsWith('all but ') ? all.filter((c) => !column.slice(8).split(/,\s*/).includes(c)) : column.split(/,\s*/);
    assert.deepEqual([...listed].sort(), [...commands].sort(), `--${name}'s row lists the commands that take it (has "${column}")`);
  }
});

test('C-2 no row of docs/reference/cli.md names a flag that does not exist', () => {
  for (const row of rows) {
    for (const [, name] of (row.split(/(?<!\\)\|/)[1] ?? '').matchAll(/--([a-z0-9-]+)/g)) assert.ok(name !== undefined && name in FLAGS, `--${name} is a flag`);
  }
});

test('C-2 every command is listed in docs/reference/cli.md', () => {
  const text = prose(page) + page;
  for (const c of COMMANDS) assert.ok(text.includes(`httpskit ${c.words.join(' ')}`), `httpskit ${c.words.join(' ')}`);
});
