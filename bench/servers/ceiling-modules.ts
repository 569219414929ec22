// Diagnostic peer: ceiling+headers in an application of a dozen ES modules, the least any app
// embedding a library has. Node's ES module loader reads each module with node:fs/promises, whose
// FileHandle is an event emitter. V8 gives `EventEmitter.init` its feedback at about its eighth
// call; from then on each kind of emitter it sees is recorded there. With the loader's FileHandle,
// the four kinds of a request (socket, TLS socket, request, response) make five, past V8's four,
// and node:http's per-request constructors, which inline `EventEmitter.init`, then take V8's
// generic property paths: about 1.4k instructions a request (bench/HISTORY.md, session 24).
// ceiling+headers itself loads four modules, before V8 gives the function its feedback.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const MODULES = 12;
const dir = mkdtempSync(join(tmpdir(), 'httpskit-bench-modules-'));
try {
  let sum = 0;
  for (let i = 0; i < MODULES; i++) {
    const file = join(dir, `m${i}.js`);
    writeFileSync(file, `export const n = ${i};\n`);
    sum += ((await import(pathToFileURL(file).href)) as { n: number }).n;
  }
  if (sum !== (MODULES * (MODULES - 1)) / 2) throw new Error('the modules did not load');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
// The same server, its arguments read from process.argv as when it is run itself.
await import('./ceiling-headers.js');
