// PATCH applies a JSON Merge Patch (RFC 7396) to the item's current value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { applyMergePatch } from '../../lib/resources/merge-patch.js';

// RFC 7396 Appendix A, every example, as original / patch / result JSON texts.
const APPENDIX_A: ReadonlyArray<readonly [string, string, string]> = [
  ['{"a":"b"}', '{"a":"c"}', '{"a":"c"}'],
  ['{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'],
  ['{"a":"b"}', '{"a":null}', '{}'],
  ['{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'],
  ['{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'],
  ['{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'],
  ['{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'],
  ['{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'],
  ['["a","b"]', '["c","d"]', '["c","d"]'],
  ['{"a":"b"}', '["c"]', '["c"]'],
  ['{"a":"foo"}', 'null', 'null'],
  ['{"a":"foo"}', '"bar"', '"bar"'],
  ['{"e":null}', '{"a":1}', '{"e":null,"a":1}'],
  ['[1,2]', '{"a":"b","c":null}', '{"a":"b"}'],
  ['{}', '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'],
];

for (const [original, patch, result] of APPENDIX_A) {
  test(`A-5 RFC 7396 Appendix A: ${original} + ${patch} → ${result}`, () => {
    const target = JSON.parse(original) as unknown;
    const p = JSON.parse(patch) as unknown;
    // Compared as text: member order is part of what a client sees.
    assert.equal(JSON.stringify(applyMergePatch(target, p)), result);
    assert.equal(JSON.stringify(target), original, 'the target is unchanged');
    assert.equal(JSON.stringify(p), patch, 'the patch is unchanged');
  });
}

test('A-5 RFC 7396 §3 example', () => {
  const target = { title: 'Goodbye!', author: { givenName: 'John', familyName: 'Doe' }, tags: ['example', 'sample'], content: 'This will be unchanged' };
  const patch = { title: 'Hello!', phoneNumber: '+01-123-456-7890', author: { familyName: null }, tags: ['example'] };
  assert.deepEqual(applyMergePatch(target, patch), {
    title: 'Hello!',
    author: { givenName: 'John' },
    tags: ['example'],
    content: 'This will be unchanged',
    phoneNumber: '+01-123-456-7890',
  });
});

test('A-5 the result shares nothing with its inputs: changing it changes neither', () => {
  const target = { keep: { deep: [1, { x: 1 }] }, replace: 1 };
  const patch = { added: { list: [1, 2] }, replace: { y: [3] } };
  const result = applyMergePatch(target, patch) as { keep: { deep: [number, { x: number }] }; added: { list: number[] }; replace: { y: number[] } };
  result.keep.deep[1].x = 99;
  result.added.list.push(3);
  result.replace.y.push(4);
  assert.deepEqual(target, { keep: { deep: [1, { x: 1 }] }, replace: 1 });
  assert.deepEqual(patch, { added: { list: [1, 2] }, replace: { y: [3] } });
});

test('A-5 the target is taken as JSON shows it (toJSON, undefined members)', () => {
  const at = new Date('2026-11-27T10:00:00.000Z');
  assert.deepEqual(applyMergePatch({ at, gone: undefined, keep: 1 }, { keep: 2 }), { at: '2026-11-27T10:00:00.000Z', keep: 2 });
  assert.deepEqual(applyMergePatch(undefined, { a: 1 }), { a: 1 });
});

test('A-5 a __proto__ member of a patch (own, as JSON.parse makes it) is an ordinary member, never a prototype', () => {
  const patch = JSON.parse('{"__proto__":{"polluted":true},"a":{"__proto__":{"polluted":true}}}') as unknown;
  const result = applyMergePatch({}, patch) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(result), Object.prototype);
  assert.ok(Object.hasOwn(result, '__proto__'));
  assert.equal(JSON.stringify(result), '{"__proto__":{"polluted":true},"a":{"__proto__":{"polluted":true}}}');
  assert.equal((result as { polluted?: unknown }).polluted, undefined);
  assert.equal(Object.getPrototypeOf(result['a']), Object.prototype);
  assert.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype is untouched');
});

test('A-5 a __proto__ member is merged into and removed like any other', () => {
  const target = JSON.parse('{"__proto__":{"x":1,"y":2},"b":1}') as unknown;
  assert.equal(JSON.stringify(applyMergePatch(target, JSON.parse('{"__proto__":{"y":null,"z":3}}'))), '{"__proto__":{"x":1,"z":3},"b":1}');
  assert.equal(JSON.stringify(applyMergePatch(target, JSON.parse('{"__proto__":null}'))), '{"b":1}');
  // Removing a __proto__ that is not there removes nothing, and leaves the prototype alone.
  const r = applyMergePatch({ b: 1 }, JSON.parse('{"__proto__":null}')) as object;
  assert.equal(Object.getPrototypeOf(r), Object.prototype);
  assert.equal(JSON.stringify(r), '{"b":1}');
});

/** RFC 7396 §2's pseudo-code, written as it reads, on copies. */
function reference(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return structuredClone(patch);
  let t = structuredClone(target) as Record<string, unknown>;
  if (typeof t !== 'object' || t === null || Array.isArray(t)) t = {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete t[name];
    else Object.defineProperty(t, name, { value: reference(Object.hasOwn(t, name) ? t[name] : undefined, value), enumerable: true, writable: true, configurable: true });
  }
  return t;
}

test('A-5 merge patch agrees with RFC 7396 §2 on generated values, and changes neither input', () => {
  const key = fc.constantFrom('a', 'b', 'c', '__proto__', 'constructor', '');
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 3 }), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 3 }),
    object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  })).value;
  fc.assert(
    fc.property(json, json, (target, patch) => {
      const before = [JSON.stringify(target), JSON.stringify(patch)];
      const result = applyMergePatch(target, patch);
      assert.equal(JSON.stringify(result), JSON.stringify(reference(target, patch)));
      assert.deepEqual([JSON.stringify(target), JSON.stringify(patch)], before);
    }),
    { numRuns: 500 },
  );
});
