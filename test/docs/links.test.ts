// H-6: every document's relative links lead to a file of the repository, and an anchor to a heading
// of that file; the documents a user reads cite no contract clause ids (those belong in tests and
// docs/CONTRACT.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { ROOT, allDocs, anchors, links, prose, read, userDocs } from './markdown.js';

for (const doc of allDocs()) {
  test(`H-6 ${doc}: every relative link leads to a file, and every anchor to a heading`, () => {
    const broken: string[] = [];
    for (const { line, target, anchor } of links(doc)) {
      const file = target === '' ? doc : normalize(join(dirname(doc), target));
      const path = join(ROOT, file);
      if (!existsSync(path)) {
        broken.push(`${doc}:${line}: ${target} does not exist`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(path).isDirectory() || !file.endsWith('.md')) broken.push(`${doc}:${line}: #${anchor} on ${file}, which has no headings`);
      else if (!anchors(read(file)).has(anchor)) broken.push(`${doc}:${line}: ${file} has no heading #${anchor}`);
    }
    assert.deepEqual(broken, []);
  });
}

for (const doc of userDocs()) {
  test(`H-6 ${doc} cites no contract clause id in its prose`, () => {
    const found = [...prose(read(doc)).matchAll(/(?<![\p{L}\p{N}/._-])[A-Z]{1,2}-\d{1,2}(?:\.\.[A-Z]-\d+)?(?![\p{L}\p{N}])/gu)].map((m) => m[0]);
    assert.deepEqual(found, []);
  });
}

test('the link check finds what it must: a missing file, a missing anchor', () => {
  // The checks above would pass on documents without links; these show they can fail.
  const sample = '# One\n## Two `code`\n[a](#one) [b](#two-code) [c](missing.md) [d](x.md#y) `[e](not-a-link.md)`\n```sh\n# Not a heading\n```\n';
  assert.deepEqual([...anchors(sample)], ['one', 'two-code']);
  assert.equal(prose(sample).includes('not-a-link'), false);
});
