import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathUserName, userPath, userView } from '../../lib/handlers/user-view.js';

const paths: ReadonlyArray<readonly [name: string, path: string]> = [
  ['alice', '/user/alice'],
  ['émile', '/user/%C3%A9mile'],
  ['a b?#%', '/user/a%20b%3F%23%25'],
  ['j.doe', '/user/j.doe'],
  // U-2: a kept name that ends like an extension gets that dot encoded, so the path names it.
  ['a.json', '/user/a%2Ejson'],
  ['a.b.XML', '/user/a.b%2EXML'],
  // U-2 (amended 2026-11-27): a kept dot-only name has its dots encoded (RFC 3986 would drop the segment).
  ['.', '/user/%2E'],
  ['..', '/user/%2E%2E'],
  ['...', '/user/...'],
];

for (const [name, path] of paths) {
  test(`R-4 / U-2: the path of ${JSON.stringify(name)} is ${path}, and it names that user again`, () => {
    assert.equal(userPath(name), path);
    assert.equal(pathUserName(path.slice('/user/'.length)), name);
  });
}

const segments: ReadonlyArray<readonly [segment: string, name: string | undefined]> = [
  ['alice.json', 'alice'],
  ['alice.XML', 'alice'],
  ['alice.yaml', 'alice.yaml'],
  ['e%CC%81mile', '\u00e9mile'], // NFD in the path is the NFC user
  ['a%2Fb', undefined], // cannot be a user
  ['%00', undefined],
  ['.json', undefined],
];

for (const [segment, name] of segments) {
  test(`R-5 / R-6: path segment ${segment} names ${JSON.stringify(name)}`, () => {
    assert.equal(pathUserName(segment), name);
  });
}

test('R-5: malformed percent-encoding in the path is a 400', () => {
  assert.throws(() => pathUserName('%zz'), (error: { name?: string; problem?: { status?: number } }) => error.name === 'HttpError' && error.problem?.status === 400);
});

test('R-1: the view has exactly the four members, times in RFC 3339 UTC with milliseconds', () => {
  const view = userView({ name: 'a', role: 'admin', createdAt: Date.UTC(2026, 10, 22, 10), passwordChangedAt: new Date(Date.UTC(2026, 10, 23, 1, 2, 3, 4)) });
  assert.deepEqual(view, { name: 'a', role: 'admin', createdAt: '2026-11-22T10:00:00.000Z', passwordChangedAt: '2026-11-23T01:02:03.004Z' });
  const leaky = { name: 'a', role: 'user' as const, createdAt: 0, passwordChangedAt: 0, hash: '$scrypt$…', digest: 'x', resetTokens: [] };
  assert.deepEqual(Object.keys(userView(leaky)), ['name', 'role', 'createdAt', 'passwordChangedAt']);
});
