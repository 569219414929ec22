// The young generation `httpskit serve` holds (lib/cli/young-generation.ts), measured in fresh
// processes that allocate as a busy server does: short-lived garbage with a steady trickle that
// survives a collection or two. Node's defaults let it grow to 32 MiB; held, it stays at 8.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { holdYoungGeneration } from '../../lib/cli/young-generation.js';

const execFileP = promisify(execFile);
const MODULE = fileURLToPath(new URL('../../lib/cli/young-generation.ts', import.meta.url));

/** The largest young generation (MiB) seen while a fresh process churns for `ms`, with the hold or without. */
async function largestYoungGeneration(hold: boolean, nodeFlags: readonly string[] = [], ms = 3000): Promise<number> {
  const script = `
    const { holdYoungGeneration, youngGenerationSize } = await import(${JSON.stringify(MODULE)});
    if (${hold}) holdYoungGeneration();
    const kept = [];
    let largest = 0;
    const end = Date.now() + ${ms};
    // Each slice yields to the event loop, where the hold looks at the size.
    while (Date.now() < end) {
      for (let i = 0; i < 20000; i++) {
        const o = { a: i, b: 'x' + i, c: [i, i] };
        if (i % 40 === 0) kept.push(o);
      }
      if (kept.length > 40000) kept.length = 0;
      largest = Math.max(largest, youngGenerationSize());
      await new Promise((resolve) => setImmediate(resolve));
    }
    console.log(largest / 1048576);
  `;
  const { stdout } = await execFileP(process.execPath, [...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script]);
  return Number(stdout.trim());
}

test('httpskit serve holds the young generation at 8 MiB under a sustained load; Node alone grows it past that', async () => {
  const [held, free] = await Promise.all([largestYoungGeneration(true), largestYoungGeneration(false)]);
  assert.ok(free > 8, `without the hold it grows (${free} MiB)`);
  assert.ok(held <= 8, `held: ${held} MiB`);
});

test('an operator who sizes it with Node flags (NODE_OPTIONS, execArgv) is left alone', async () => {
  for (const flags of [['--max-semi-space-size=16'], ['--max_semi_space_size=2'], ['--semi-space-growth-factor=4'], ['--foo', '--max-young-generation-size=64']]) {
    assert.equal(holdYoungGeneration(undefined, flags), undefined, flags.join(' '));
  }
  // A flag that names nothing of it does not count.
  const stop = holdYoungGeneration(undefined, ['--import=tsx', '--enable-source-maps']);
  assert.equal(typeof stop, 'function');
  stop?.();
  // With the operator's own ceiling, the process is as Node makes it.
  const sized = await largestYoungGeneration(true, ['--max-semi-space-size=16']);
  assert.ok(sized > 8, `the operator's 16 MiB semi-spaces: ${sized} MiB`);
});
