// --help as a user reads it (C-4): the descriptions form one column whatever a flag's width, and
// the text speaks in the user's words, not in the contract's clause ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMANDS } from '../../lib/cli/commands.js';
import { commandHelp, groupHelp, programHelp } from '../../lib/cli/help.js';

const texts: ReadonlyArray<readonly [string, string]> = [
  ['httpskit --help', programHelp('httpskit', COMMANDS)],
  ...[...new Set(COMMANDS.map((c) => c.words[0] as string))].filter((g) => COMMANDS.some((c) => c.words.length > 1 && c.words[0] === g)).map((g) => [`httpskit ${g} --help`, groupHelp('httpskit', g, COMMANDS)] as const),
  ...COMMANDS.map((c) => [`httpskit ${c.words.join(' ')} --help`, commandHelp('httpskit', c)] as const),
];

/** The rows of each two-column list (indented entries after "Commands:" or "Options…:"), by list. */
function lists(text: string): string[][] {
  const out: string[][] = [];
  let current: string[] | undefined;
  for (const line of text.split('\n')) {
    if (/^(Commands|Options)\b.*:$/.test(line)) out.push((current = []));
    else if (current !== undefined && line.startsWith('  ')) current.push(line);
    else current = undefined;
  }
  return out;
}

for (const [name, text] of texts) {
  test(`C-4 ${name}: every description starts at one column, at least two spaces past the widest entry`, () => {
    const found = lists(text);
    assert.ok(found.length > 0, 'it has a list');
    for (const rows of found) {
      // The entry is the text up to the first run of two spaces; the description starts after it.
      const columns = rows.map((row) => row.slice(2).search(/(?<=\S {2,})\S/) + 2);
      assert.ok(columns.every((c) => c > 2), `every row has an entry and a description:\n${rows.join('\n')}`);
      assert.equal(new Set(columns).size, 1, `one column:\n${rows.join('\n')}`);
    }
  });

  test(`C-4 ${name} cites no contract clause id`, () => {
    assert.doesNotMatch(text, /(?<![A-Za-z0-9])[A-Z]{1,2}-\d+\b/);
  });
}
