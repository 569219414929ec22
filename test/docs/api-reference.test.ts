// docs/reference/api.md lists every option of createService (H-6, A-10): read from the shipped
// types (dist/lib/config.d.ts), so an option added to ServiceOptions without a row fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, read } from './markdown.js';

const page = read('docs/reference/api.md');
const options = page.slice(page.indexOf('\n## Options\n'), page.indexOf('\n## ', page.indexOf('\n## Options\n') + 1));
const rows = options.split('\n').filter((line) => line.startsWith('| `'));

/** The members of `interface ServiceOptions` in the shipped declaration file. */
function optionNames(): string[] {
  const dts = readFileSync(join(ROOT, 'dist', 'lib', 'config.d.ts'), 'utf8');
  const start = dts.indexOf('export interface ServiceOptions {');
  assert.ok(start >= 0, 'dist/lib/config.d.ts declares ServiceOptions (npm run build first)');
  let depth = 0;
  let end = start;
  for (let i = dts.indexOf('{', start); i < dts.length; i++) {
    if (dts[i] === '{') depth++;
    else if (dts[i] === '}' && --depth === 0) {
      end = i;
      break;
    }
  }
  const body = dts.slice(dts.indexOf('{', start) + 1, end);
  // Members at the interface's own level: "    name?: …" with four spaces of indentation.
  return [...body.matchAll(/^ {4}(?:readonly )?([A-Za-z0-9]+)\??:/gm)].map((m) => m[1] as string);
}

test('A-10 every option of createService has a row in docs/reference/api.md', () => {
  const names = optionNames();
  assert.ok(names.length > 20, `read ${names.length} options`);
  for (const name of names) assert.ok(rows.some((r) => (r.split(/(?<!\\)\|/)[1] ?? '').includes(`\`${name}\``)), `option ${name}`);
});

test('A-10 no row of the options table names an option that does not exist', () => {
  const names = new Set(optionNames());
  for (const row of rows) for (const [, name] of (row.split(/(?<!\\)\|/)[1] ?? '').matchAll(/`([A-Za-z0-9]+)`/g)) assert.ok(names.has(name as string), `${name} is an option`);
});

test('A-1 every export of the package is named in docs/reference/api.md\'s exports', () => {
  const dts = readFileSync(join(ROOT, 'dist', 'lib', 'index.d.ts'), 'utf8');
  const names = [...dts.matchAll(/^export (?:type )?\{([^}]*)\}/gm)].flatMap((m) => (m[1] as string).split(',').map((n) => n.trim()).filter((n) => n !== ''));
  assert.ok(names.length > 20, `read ${names.length} exports`);
  const section = page.slice(page.indexOf('\n## Exports\n'), page.indexOf('\n## ', page.indexOf('\n## Exports\n') + 1));
  for (const name of names) assert.match(section, new RegExp(`\`${name}[\`(]`), name);
});
