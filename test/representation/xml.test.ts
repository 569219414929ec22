import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { toXml, encodeXmlName, decodeXmlName } from '../../lib/representation/xml.js';
import type { XmlOptions } from '../../lib/representation/xml.js';
import { parseXml, parseXmlDocument } from '../helpers/xml-parse.js';
import type { XmlElement } from '../helpers/xml-parse.js';
import { ServiceError } from '../../lib/errors.js';

/** a wrong argument is a ServiceError ERR_INVALID_ARGUMENT, not a TypeError. */
const INVALID_ARGUMENT = (error: unknown) => error instanceof ServiceError && error.code === 'ERR_INVALID_ARGUMENT';

const DECL = '<?xml version="1.0" encoding="UTF-8"?>';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';
const XSI_DECL = ` xmlns:xsi="${XSI}"`;
const NO_DECL = { declaration: false } as const;

// --- N-9: the resource's exact bytes -------------------------------------------------------------

test('N-9: {param1:"v"} as <something>', () => {
  assert.equal(
    toXml({ param1: 'v' }, { root: 'something' }),
    `${DECL}<something><param1>v</param1></something>`,
  );
});

test('N-9: {param1:null} gives xsi:nil with the xsi namespace declared on the root', () => {
  assert.equal(
    toXml({ param1: null }, { root: 'something' }),
    `${DECL}<something${XSI_DECL}><param1 xsi:nil="true"/></something>`,
  );
});

// --- N-11: the mapping, value by value -----------------------------------------------------------

const outputs: ReadonlyArray<readonly [label: string, value: unknown, options: XmlOptions, expected: string]> = [
  ['string root', 'hi', NO_DECL, '<root>hi</root>'],
  ['empty string root', '', NO_DECL, '<root/>'],
  ['number root', 422, NO_DECL, '<root>422</root>'],
  ['true root', true, NO_DECL, '<root>true</root>'],
  ['false root', false, NO_DECL, '<root>false</root>'],
  ['null root', null, NO_DECL, `<root${XSI_DECL} xsi:nil="true"/>`],
  ['NaN root', Number.NaN, NO_DECL, `<root${XSI_DECL} xsi:nil="true"/>`],
  ['empty object', {}, NO_DECL, '<root/>'],
  ['empty array', [], NO_DECL, '<root/>'],
  ['declaration by default', {}, {}, `${DECL}<root/>`],
  ['keys in order', { b: 1, a: 2 }, NO_DECL, '<root><b>1</b><a>2</a></root>'],
  ['array entries', [1, 'x', false], NO_DECL, '<root><item>1</item><item>x</item><item>false</item></root>'],
  ['itemName', ['a'], { ...NO_DECL, itemName: 'i' }, '<root><i>a</i></root>'],
  ['nested', { a: { b: [{ c: 'd' }] } }, NO_DECL, '<root><a><b><item><c>d</c></item></b></a></root>'],
  ['empty containers nested', { a: {}, b: [], c: '' }, NO_DECL, '<root><a/><b/><c/></root>'],
  ['array of arrays', [[], [[]]], NO_DECL, '<root><item/><item><item/></item></root>'],
  ['nil in array', [null], NO_DECL, `<root${XSI_DECL}><item xsi:nil="true"/></root>`],
  ['deep nil declares once on the root', { a: [{ b: null }], c: null }, NO_DECL,
    `<root${XSI_DECL}><a><item><b xsi:nil="true"/></item></a><c xsi:nil="true"/></root>`],
  ['numbers in JSON form', [1e21, 1.5e-7, -0, 0.1, -12], NO_DECL,
    '<root><item>1e+21</item><item>1.5e-7</item><item>0</item><item>0.1</item><item>-12</item></root>'],
  ['non-finite numbers are nil, as JSON.stringify makes them null', { a: Infinity, b: -Infinity }, NO_DECL,
    `<root${XSI_DECL}><a xsi:nil="true"/><b xsi:nil="true"/></root>`],
  ['namespace', { a: 1 }, { ...NO_DECL, namespace: 'urn:x' }, '<root xmlns="urn:x"><a>1</a></root>'],
  ['namespace is escaped', {}, { ...NO_DECL, namespace: 'urn:a&b<"c' }, '<root xmlns="urn:a&amp;b&lt;&quot;c"/>'],
  ['namespace and nil', null, { ...NO_DECL, namespace: 'urn:x' }, `<root xmlns="urn:x"${XSI_DECL} xsi:nil="true"/>`],
  ['root name', 1, { ...NO_DECL, root: 'ns-free.name_1' }, '<ns-free.name_1>1</ns-free.name_1>'],
  ['odd keys are encoded', { '1st': 1, 'a b': 2, '': 3 }, NO_DECL,
    '<root><_x0031_st>1</_x0031_st><a_x0020_b>2</a_x0020_b><_x_>3</_x_></root>'],
];

for (const [label, value, options, expected] of outputs) {
  test(`N-11: ${label}`, () => {
    assert.equal(toXml(value, options), expected);
    parseXml(expected); // every expected output is itself well-formed
  });
}

// --- N-11: JSON.stringify's rules for what is serialised ---------------------------------------

test('N-11: undefined, functions and symbols are dropped from objects, nil in arrays', () => {
  const value = { a: undefined, b: () => 1, c: Symbol('s'), d: 1 };
  assert.equal(toXml(value, NO_DECL), '<root><d>1</d></root>');
  assert.equal(
    toXml([undefined, () => 1, Symbol('s')], NO_DECL),
    `<root${XSI_DECL}><item xsi:nil="true"/><item xsi:nil="true"/><item xsi:nil="true"/></root>`,
  );
});

test('N-11: array holes are nil, like JSON null', () => {
  // eslint-disable-next-line no-sparse-arrays
  assert.equal(toXml([, 1], NO_DECL), `<root${XSI_DECL}><item xsi:nil="true"/><item>1</item></root>`);
});

test('N-11: toJSON is honoured (Date) and receives the key, as in JSON.stringify', () => {
  assert.equal(toXml({ at: new Date(0) }, NO_DECL), '<root><at>1970-01-01T00:00:00.000Z</at></root>');
  const seen: string[] = [];
  const probe = (result: unknown): object => ({
    toJSON(key: string): unknown {
      seen.push(key);
      return result;
    },
  });
  assert.equal(toXml(probe({ a: probe('x'), b: [probe(1)] }), NO_DECL), '<root><a>x</a><b><item>1</item></b></root>');
  assert.deepEqual(seen, ['', 'a', '0']);
});

test('N-11: toJSON returning undefined drops an object member, nils an array entry', () => {
  const gone = { toJSON: (): undefined => undefined };
  assert.equal(toXml({ a: gone, b: 1 }, NO_DECL), '<root><b>1</b></root>');
  assert.equal(toXml([gone], NO_DECL), `<root${XSI_DECL}><item xsi:nil="true"/></root>`);
});

test('N-11: boxed primitives are unwrapped', () => {
  const value = [new String('s'), new Number(2), new Boolean(false)];
  assert.equal(toXml(value, NO_DECL), '<root><item>s</item><item>2</item><item>false</item></root>');
});

test('N-11: only own enumerable string keys are serialised', () => {
  const proto = { inherited: 1 };
  const value = Object.create(proto, {
    own: { value: 'yes', enumerable: true },
    hidden: { value: 'no', enumerable: false },
    [Symbol('s')]: { value: 'no', enumerable: true },
  }) as object;
  assert.equal(toXml(value, NO_DECL), '<root><own>yes</own></root>');
});

test('N-11: a "__proto__" own key is an ordinary member', () => {
  const value = JSON.parse('{"__proto__":{"a":1}}') as unknown;
  assert.equal(toXml(value, NO_DECL), '<root><__proto__><a>1</a></__proto__></root>');
});

test('N-11: a value shared twice (not a cycle) is written twice', () => {
  const shared = { x: 1 };
  assert.equal(toXml([shared, shared], NO_DECL), '<root><item><x>1</x></item><item><x>1</x></item></root>');
});

const typeErrors: ReadonlyArray<readonly [label: string, value: () => unknown]> = [
  ['bigint', () => 1n],
  ['nested bigint', () => ({ a: [1n] })],
  ['boxed bigint', () => [Object(1n)]],
  ['undefined document', () => undefined],
  ['function document', () => () => 1],
  ['symbol document', () => Symbol('s')],
  ['self cycle', () => {
    const a: Record<string, unknown> = {};
    a['self'] = a;
    return a;
  }],
  ['cycle through an array', () => {
    const a: unknown[] = [];
    a.push({ back: a });
    return a;
  }],
  ['cycle below depth 32 (Set path)', () => {
    const top: Record<string, unknown> = {};
    let node = top;
    for (let i = 0; i < 100; i++) node = (node['n'] = {}) as Record<string, unknown>;
    node['n'] = top;
    return top;
  }],
];

for (const [label, make] of typeErrors) {
  test(`N-11: ${label} is a TypeError, as JSON.stringify makes it`, () => {
    assert.throws(() => toXml(make()), TypeError);
  });
}

// --- N-10: text escapes ---------------------------------------------------------------------------

const escapes: ReadonlyArray<readonly [input: string, expected: string]> = [
  ['plain', 'plain'],
  ['&', '&amp;'],
  ['<', '&lt;'],
  ['>', '&gt;'],
  [']]>', ']]&gt;'],
  ['"\'', '"\''],
  ['a\rb', 'a&#13;b'],
  ['a\r\nb', 'a&#13;\nb'],
  ['\t\n', '\t\n'],
  ['\u0000', '\uFFFD'],
  ['\u0001\u0008', '\uFFFD\uFFFD'],
  ['\u000B\u000C', '\uFFFD\uFFFD'],
  ['\u000E\u001F', '\uFFFD\uFFFD'],
  ['\u007F\u0085\u009F', '\u007F\u0085\u009F'], // allowed in XML 1.0
  ['\uD800', '\uFFFD'],
  ['\uDFFF', '\uFFFD'],
  ['x\uD800', 'x\uFFFD'], // high surrogate at the end
  ['\uD800x', '\uFFFDx'],
  ['\uDC00\uD800', '\uFFFD\uFFFD'], // reversed pair
  ['\uD800\uD800\uDC00', '\uFFFD\uD800\uDC00'],
  ['\uD83D\uDE00', '\uD83D\uDE00'], // a valid pair stays
  ['\u{10FFFF}', '\u{10FFFF}'],
  ['\uFFFE\uFFFF', '\uFFFD\uFFFD'],
  ['\uFFFD\uE000\uFFFC', '\uFFFD\uE000\uFFFC'],
  ['a<b&c>d\u0000e', 'a&lt;b&amp;c&gt;d\uFFFDe'],
];

for (const [input, expected] of escapes) {
  test(`N-10: text ${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () => {
    assert.equal(toXml(input, NO_DECL), `<root>${expected}</root>`);
    assert.equal(parseXml(toXml(input)).text, sanitize(input));
  });
}

// --- N-11: key → element name ---------------------------------------------------------------------

const names: ReadonlyArray<readonly [key: string, name: string]> = [
  ['param1', 'param1'],
  ['a-b.c', 'a-b.c'],
  ['_', '_'],
  ['a_b', 'a_b'],
  ['_X', '_X'], // only a lower-case x makes an escape
  ['', '_x_'],
  ['1st', '_x0031_st'],
  ['-a', '_x002D_a'],
  ['.a', '_x002E_a'],
  ['a b', 'a_x0020_b'],
  ['a:b', 'a_x003A_b'],
  ['a/b', 'a_x002F_b'],
  ['_x', '_x005F_x'],
  ['a_x0041_', 'a_x005F_x0041_'],
  ['__x', '__x005F_x'],
  ['xml', '_x0078_ml'],
  ['XmLfoo', '_x0058_mLfoo'],
  ['xmlns', '_x0078_mlns'],
  ['xm', 'xm'],
  ['axml', 'axml'],
  ['prénom', 'prénom'],
  ['\u00B7a', '_x00B7_a'], // allowed only after the first character
  ['a\u00B7', 'a\u00B7'],
  ['\u0301', '_x0301_'],
  ['é\u0301', 'é\u0301'],
  ['日本', '日本'],
  ['\u{1F600}', '\u{1F600}'], // U+10000–U+EFFFF are name characters
  ['\u{F0000}', '_x0F0000_'],
  ['\u{10FFFF}', '_x10FFFF_'],
  ['\uD800', '_xD800_'],
  ['a\uDC00b', 'a_xDC00_b'],
  ['\uFFFF', '_xFFFF_'],
  ['\u0000', '_x0000_'],
  ['\u0001x', '_x0001_x'],
];

for (const [key, name] of names) {
  test(`N-11: key ${JSON.stringify(key)} ↔ element <${name}>`, () => {
    assert.equal(encodeXmlName(key), name);
    assert.equal(decodeXmlName(name), key);
    assert.equal(parseXml(`<${name}/>`).name, name);
  });
}

// Names no encoder produces: the decoder keeps what is not a well-formed escape.
const lenient: ReadonlyArray<readonly [name: string, key: string]> = [
  ['_xZZ', '_xZZ'],
  ['_x00e9_', '_x00e9_'], // lower-case hex is not an escape
  ['_x00E9', '_x00E9'],
  ['_x110000_', '_x110000_'],
  ['_x00E9__x', 'é_x'],
  ['a_x_', 'a_x_'],
];

for (const [name, key] of lenient) {
  test(`N-11: decodeXmlName(${JSON.stringify(name)}) is ${JSON.stringify(key)}`, () => {
    assert.equal(decodeXmlName(name), key);
  });
}

// --- Options: programmer input is checked -------------------------------------------------------

const badOptions: ReadonlyArray<readonly [label: string, options: unknown]> = [
  ['empty root', { root: '' }],
  ['root with a colon', { root: 'a:b' }],
  ['root starting with a digit', { root: '1a' }],
  ['root with a space', { root: 'a b' }],
  ['root not a string', { root: 1 }],
  ['itemName with a colon', { itemName: 'x:i' }],
  ['itemName empty', { itemName: '' }],
  ['declaration not a boolean', { declaration: 'yes' }],
  ['empty namespace', { namespace: '' }],
  ['namespace with a newline', { namespace: 'urn:a\nb' }],
  ['namespace with a lone surrogate', { namespace: 'urn:\uD800' }],
  ['namespace not a string', { namespace: 7 }],
  ['reserved xmlns namespace', { namespace: 'http://www.w3.org/2000/xmlns/' }],
  ['reserved xml namespace', { namespace: 'http://www.w3.org/XML/1998/namespace' }],
  ['unknown option', { indent: 2 }],
];

for (const [label, options] of badOptions) {
  test(`options: ${label} is a TypeError`, () => {
    assert.throws(() => toXml({}, options as XmlOptions), INVALID_ARGUMENT);
  });
}

test('options: reserved-but-well-formed names are accepted for root and itemName', () => {
  assert.equal(toXml(['a'], { root: 'xmlData', itemName: 'é', declaration: false }), '<xmlData><é>a</é></xmlData>');
});

test('encodeXmlName / decodeXmlName refuse non-strings', () => {
  assert.throws(() => encodeXmlName(1 as unknown as string), INVALID_ARGUMENT);
  assert.throws(() => decodeXmlName(undefined as unknown as string), INVALID_ARGUMENT);
});

// --- E-1: the problem document --------------------------------------------------------------------

test('E-1: an RFC 9457 problem as application/problem+xml (urn:ietf:rfc:7807, <i> entries)', () => {
  const xml = toXml(
    {
      type: '/problems/password-policy',
      title: 'The new password does not meet the policy',
      status: 422,
      violations: ['too-short', 'common-password'],
    },
    { root: 'problem', namespace: 'urn:ietf:rfc:7807', itemName: 'i' },
  );
  assert.equal(
    xml,
    `${DECL}<problem xmlns="urn:ietf:rfc:7807"><type>/problems/password-policy</type>` +
      '<title>The new password does not meet the policy</title><status>422</status>' +
      '<violations><i>too-short</i><i>common-password</i></violations></problem>',
  );
  const { declaration, root } = parseXmlDocument(xml);
  assert.deepEqual(declaration, { version: '1.0', encoding: 'UTF-8' });
  assert.equal(root.ns, 'urn:ietf:rfc:7807');
  const violations = root.children.find((c) => c.name === 'violations');
  assert.deepEqual(violations?.children.map((c) => [c.name, c.ns, c.text]), [
    ['i', 'urn:ietf:rfc:7807', 'too-short'],
    ['i', 'urn:ietf:rfc:7807', 'common-password'],
  ]);
});

// --- Deep nesting: an explicit stack, no recursion -------------------------------------------------

for (const kind of ['array', 'object'] as const) {
  test(`N-11: 10,000 nested ${kind}s serialise and parse`, () => {
    const depth = 10_000;
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { k: value };
    const xml = toXml(value);
    let element = parseXml(xml);
    for (let i = 0; i < depth; i++) {
      assert.equal(element.children.length, 1);
      element = element.children[0]!;
      assert.equal(element.name, kind === 'array' ? 'item' : 'k');
    }
    assert.equal(element.text, 'leaf');
  });
}

test('N-11: 200,000 levels do not overflow the call stack', () => {
  let value: unknown = null;
  for (let i = 0; i < 200_000; i++) value = [value];
  const xml = toXml(value, NO_DECL);
  assert.ok(xml.endsWith('<item xsi:nil="true"/>' + '</item>'.repeat(199_999) + '</root>'));
});

// --- Properties (fast-check, seeded) --------------------------------------------------------------

// Characters from the whole range: any UTF-16 code unit (lone surrogates included), any code point,
// and the characters the encoders treat specially.
const anyChar = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
  fc.constantFrom('&', '<', '>', '"', "'", '\r', '\n', '\t', '\u0000', '\u001F', '\uD800', '\uDC00', '\uFFFE', '\uFFFF'),
  fc.constantFrom('_', 'x', 'X', 'm', 'l', '_x', '_x0041_', '_x01F600_', 'xml', '1', '-', '.', ':', '\u00B7', 'a'),
);
const anyString = fc.string({ unit: anyChar, maxLength: 16 });

test('N-11: decodeXmlName(encodeXmlName(key)) === key for any key (whole Unicode, lone surrogates)', () => {
  fc.assert(
    fc.property(fc.oneof(anyString, fc.string({ unit: 'binary-ascii' })), (key) => {
      const name = encodeXmlName(key);
      assert.equal(decodeXmlName(name), key);
      assert.doesNotMatch(name, /^xml/i);
      assert.equal(parseXml(`<${name}/>`).name, name); // a valid NCName, by the real parser
    }),
    { seed: 0x5eed, numRuns: 5000 },
  );
});

test('N-11: distinct keys get distinct element names', () => {
  fc.assert(
    fc.property(fc.uniqueArray(anyString, { minLength: 2, maxLength: 8 }), (keys) => {
      assert.equal(new Set(keys.map(encodeXmlName)).size, keys.length);
    }),
    { seed: 0x5eed + 1, numRuns: 3000 },
  );
});

test('N-10: any string survives as text, with only the characters XML cannot carry replaced', () => {
  fc.assert(
    fc.property(fc.string({ unit: anyChar, maxLength: 64 }), (text) => {
      assert.equal(parseXml(toXml(text)).text, sanitize(text));
    }),
    { seed: 0x5eed + 2, numRuns: 3000 },
  );
});

const jsonLeaf = fc.oneof(anyString, fc.double(), fc.integer(), fc.boolean(), fc.constant(null));
const { json: jsonValue } = fc.letrec<{ json: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', maxDepth: 8 }, jsonLeaf, tie('array'), tie('object')),
  array: fc.array(tie('json'), { maxLength: 5 }),
  object: fc
    .uniqueArray(fc.tuple(anyString, tie('json')), { selector: ([key]) => key, maxLength: 5 })
    .map((entries) => Object.fromEntries(entries)),
}));

test('N-10, N-11: any JSON value gives a well-formed document whose tree maps back to the value', () => {
  fc.assert(
    fc.property(jsonValue, fc.constantFrom('item', 'i'), fc.constantFrom(undefined, 'urn:ietf:rfc:7807'), (value, itemName, namespace) => {
      const options: XmlOptions = namespace === undefined ? { itemName } : { itemName, namespace };
      const root = parseXml(toXml(value, options));
      assert.equal(root.name, 'root');
      assert.equal(root.ns, namespace);
      assert.equal(root.attributes['xmlns:xsi'], hasNil(value) ? XSI : undefined);
      assertMapsTo(root, value, itemName, namespace);
    }),
    { seed: 0x5eed + 3, numRuns: 4000 },
  );
});

test('N-11: toXml(v) equals toXml(JSON.parse(JSON.stringify(v))) for arbitrary JS values', () => {
  const anything = fc.anything({
    key: anyString,
    values: [anyString, fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined)],
    maxDepth: 4,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withSparseArray: true,
    withTypedArray: true,
    withObjectString: true,
  });
  fc.assert(
    fc.property(anything, (value) => {
      const json = JSON.stringify(value);
      if (json === undefined) {
        assert.throws(() => toXml(value), TypeError);
        return;
      }
      assert.equal(toXml(value), toXml(JSON.parse(json)));
    }),
    { seed: 0x5eed + 4, numRuns: 3000 },
  );
});

// --- Oracles, written independently of the implementation ----------------------------------------

/** N-10 by the letter: characters outside XML 1.0's Char production become U+FFFD. */
function sanitize(text: string): string {
  let out = '';
  for (const char of text) {
    const cp = char.codePointAt(0)!;
    const bad =
      (cp < 0x20 && cp !== 0x9 && cp !== 0xa && cp !== 0xd) ||
      (cp >= 0xd800 && cp <= 0xdfff) ||
      cp === 0xfffe ||
      cp === 0xffff;
    out += bad ? '\uFFFD' : char;
  }
  return out;
}

function isNil(value: unknown): boolean {
  return value === null || (typeof value === 'number' && !Number.isFinite(value));
}

function hasNil(value: unknown): boolean {
  if (isNil(value)) return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasNil);
}

function assertMapsTo(element: XmlElement, value: unknown, itemName: string, ns: string | undefined): void {
  assert.equal(element.ns, ns);
  if (isNil(value)) {
    assert.equal(element.attributes['xsi:nil'], 'true');
    assert.equal(element.children.length, 0);
    assert.equal(element.text, '');
    return;
  }
  assert.equal(element.attributes['xsi:nil'], undefined);
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    assert.equal(element.children.length, 0);
    assert.equal(element.text, typeof value === 'string' ? sanitize(value) : JSON.stringify(value));
    return;
  }
  assert.equal(element.text, '');
  if (Array.isArray(value)) {
    assert.equal(element.children.length, value.length);
    value.forEach((entry, i) => {
      const child = element.children[i]!;
      assert.equal(child.name, itemName);
      assertMapsTo(child, entry, itemName, ns);
    });
    return;
  }
  const entries = Object.entries(value as object);
  assert.equal(element.children.length, entries.length);
  entries.forEach(([key, entry], i) => {
    const child = element.children[i]!;
    assert.equal(decodeXmlName(child.name), key);
    assertMapsTo(child, entry, itemName, ns);
  });
}

// --- unwrapped array members (a page of users) -----------------------------------------------

const unwrapped: ReadonlyArray<readonly [label: string, value: unknown, expected: string]> = [
  ['entries in the member\'s place, no wrapper', { users: [{ name: 'a' }, { name: 'b' }], next: '/user/?after=b' },
    '<users><user><name>a</name></user><user><name>b</name></user><next>/user/?after=b</next></users>'],
  ['an empty array writes nothing', { users: [], next: null }, `<users${XSI_DECL}><next xsi:nil="true"/></users>`],
  ['a null entry is a nil element', { users: [null] }, `<users${XSI_DECL}><user xsi:nil="true"/></users>`],
  ['a non-array member of that name is an ordinary element', { users: 'x' }, '<users><users>x</users></users>'],
  ['arrays inside entries keep <item>', { users: [[1, 2]] }, '<users><user><item>1</item><item>2</item></user></users>'],
  ['the same name deeper is unwrapped too', { a: { users: [1] } }, '<users><a><user>1</user></a></users>'],
];

for (const [label, value, expected] of unwrapped) {
  test(`R-3: unwrap, ${label}`, () => {
    const xml = toXml(value, { root: 'users', unwrap: { users: 'user' }, declaration: false });
    assert.equal(xml, expected);
    parseXml(xml); // well-formed
  });
}

test('R-3: unwrap refuses an element name that is not an NCName', () => {
  assert.throws(() => toXml({}, { unwrap: { users: 'a:b' } }), INVALID_ARGUMENT);
  assert.throws(() => toXml({}, { unwrap: { users: '' } }), INVALID_ARGUMENT);
});

test('toXml options of a root alone are checked on every call (the resolved ones are reused only for valid roots)', () => {
  for (let i = 0; i < 3; i++) {
    assert.throws(() => toXml({ a: 1 }, { root: 'not a name' }), /root must be an XML name/);
    assert.equal(toXml({ a: 1 }, { root: 'thing' }), '<?xml version="1.0" encoding="UTF-8"?><thing><a>1</a></thing>');
    assert.throws(() => toXml({ a: 1 }, { root: 'thing', bogus: 1 } as never), /unknown toXml option "bogus"/);
  }
});
