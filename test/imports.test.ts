// STYLE: no import cycle anywhere in lib/ (static imports, type-only ones and dynamic import()s
// of a literal path alike): the folder list shows the layers, and a cycle would hide one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LIB = fileURLToPath(new URL('../lib/', import.meta.url));
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Each lib/ module and the lib/ modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(LIB)) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? '';
      const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
      if (target.startsWith(LIB)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** One cycle as a list of modules (the first repeated at the end), or undefined. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

test('lib/ has no import cycle', () => {
  const graph = importGraph();
  assert.ok(graph.size > 50, 'the walk found the modules of lib/');
  const cycle = findCycle(graph);
  assert.equal(cycle?.map((file) => relative(LIB, file)).join(' → '), undefined);
});

test('the cycle finder finds a cycle (a → b → a) and accepts a diamond', () => {
  assert.deepEqual(findCycle(new Map([['a', ['b']], ['b', ['a']]])), ['a', 'b', 'a']);
  assert.equal(findCycle(new Map([['a', ['b', 'c']], ['b', ['d']], ['c', ['d']], ['d', []]])), undefined);
});

test('the store room imports nothing of auth/, and its stores import only the room, lib/fs, lib/errors and lib/process', () => {
  const graph = importGraph();
  const storeRoom = join(LIB, 'store');
  for (const [file, targets] of graph) {
    if (!file.startsWith(storeRoom)) continue;
    for (const target of targets) assert.ok(!target.startsWith(join(LIB, 'auth')), `${relative(LIB, file)} imports ${relative(LIB, target)}`);
    const backend = /^(file|postgres|memory)\//.exec(relative(storeRoom, file))?.[1];
    if (backend === undefined) continue;
    for (const target of targets) {
      const inside = relative(storeRoom, target);
      const ok = inside.startsWith(`${backend}/`) || !inside.includes('/') || target.startsWith(join(LIB, 'fs')) || target === join(LIB, 'errors.ts') || target === join(LIB, 'process.ts');
      assert.ok(ok, `${relative(LIB, file)} imports ${relative(LIB, target)}`);
    }
  }
});

/** A module's text without its comments. */
function codeOf(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

// Node's global `Buffer` and `process` are getters on globalThis: every use of one in a function
// calls the getter (about 150 instructions, counted with callgrind on the request path), where an
// imported binding is read directly. So lib/ imports them (process from lib/process.ts, which
// reads the global once: see the next test), and this keeps it so.
const GETTER_GLOBALS = [
  { name: 'Buffer', use: /\bBuffer\s*\.|instanceof\s+Buffer\b|\bnew\s+Buffer\b/, imported: /import\s*\{[^}]*\bBuffer\b[^}]*\}\s*from\s*'node:buffer'/ },
  { name: 'process', use: /(?<![\w.$])process\s*\./, imported: /import\s*\{\s*process\s*\}\s*from\s*'(?:\.{1,2}\/)+process\.js'/ },
] as const;

// Node builds `node:process`'s ESM facade by reading every property of the process object, and
// reading `stdin` makes its stream: importing the module from anywhere in lib/ gave every
// application that imports the library an open handle on its standard input (a pipe or a
// terminal), its descriptor made non-blocking.
// (Standard output and error cannot be asked here: tsx, which runs the sources, opens both itself.)
test('importing the library leaves standard input alone: with a pipe on it, no handle holds it after the import', () => {
  const script = "await import('./lib/index.ts'); console.log(JSON.stringify(process._getActiveHandles().filter((h) => h._handle?.fd === 0).map((h) => h.constructor.name)))";
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(LIB, '..'), input: '', encoding: 'utf8', timeout: 30_000 });
  assert.deepEqual(JSON.parse(out), []);
});

test('no module of lib/ imports node:process (lib/process.ts reads the global once)', () => {
  const importers = sources(LIB).filter((file) => /from\s*'node:process'|import\(\s*'node:process'\s*\)/.test(codeOf(readFileSync(file, 'utf8'))));
  assert.deepEqual(importers.map((file) => relative(LIB, file)), []);
});

test('lib/ reads Buffer from node:buffer and process from lib/process.ts, never through the globals\' getters', () => {
  const offenders: string[] = [];
  for (const file of sources(LIB)) {
    const text = readFileSync(file, 'utf8');
    const code = codeOf(text);
    for (const g of GETTER_GLOBALS) if (g.use.test(code) && !g.imported.test(text)) offenders.push(`${relative(LIB, file)} (${g.name})`);
  }
  assert.deepEqual(offenders, []);
});
