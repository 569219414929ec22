// The request ids a dispatcher gives (x-request-id, the log's `id`): a random prefix per
// dispatcher, then a count; short enough for V8 to keep as one flat string for 60 million requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestIds } from '../../lib/http/dispatch.js';

test('ids count up in base 36 behind one prefix of six base-36 digits', () => {
  const next = requestIds();
  const ids = Array.from({ length: 40 }, () => next());
  const prefix = (ids[0] as string).slice(0, 7);
  assert.match(prefix, /^[0-9a-z]{6}-$/);
  assert.deepEqual(ids.map((id) => id.slice(0, 7)), ids.map(() => prefix));
  assert.deepEqual(ids.map((id) => id.slice(7)), Array.from({ length: 40 }, (_, i) => (i + 1).toString(36)));
  assert.equal(new Set(ids).size, 40);
});

test('the count stays base 36 across its lowest two digits\' turns', () => {
  const next = requestIds();
  const ids = Array.from({ length: 36 ** 2 * 3 + 40 }, () => next());
  const prefix = (ids[0] as string).slice(0, 7);
  ids.forEach((id, i) => assert.equal(id, `${prefix}${(i + 1).toString(36)}`));
});

test('each dispatcher draws its own prefix', () => {
  const prefixes = new Set(Array.from({ length: 20 }, () => requestIds()().slice(0, 6)));
  // 31 random bits each: twenty alike by chance is out of the question, two alike nearly so.
  assert.ok(prefixes.size >= 19, `${prefixes.size} distinct prefixes of 20`);
});
