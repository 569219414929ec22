// A-3: the media-type cases, with an offered list, of the peers' own test suites, as vectors:
//   jshttp/negotiator test/mediaType.js at 14b0a7b (1.1.0): `mediaType(list)` and `mediaTypes(list)`;
//   jshttp/accepts test/type.js at 19db02a: `types(...)` with media types.
// Each row cites its suite › describe › case. The vectors are the peers' facts; the test is ours.
// Left out: cases without a list (they return ranges from the header, not a choice) and accepts'
// file-extension cases (`types('html')` looks the extension up with mime-types: not a media type,
// so our negotiator skips such an entry as malformed, pinned below).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Negotiator from 'negotiator';
import { createNegotiator, negotiate, negotiateAll } from '../../lib/negotiate/negotiate.js';
import { ServiceError } from '../../lib/errors.js';

/** a wrong argument is a ServiceError ERR_INVALID_ARGUMENT, not a TypeError. */
const INVALID_ARGUMENT = (error: unknown) => error instanceof ServiceError && error.code === 'ERR_INVALID_ARGUMENT';

const NEG_ONE = 'negotiator test/mediaType.js › negotiator.mediaType(array)';
const NEG_ALL = 'negotiator test/mediaType.js › negotiator.mediaTypes(array)';
const ACCEPTS = 'accepts test/type.js › accepts.types()';

const THREE = 'text/plain, application/json;q=0.5, text/html, */*;q=0.1';
const LONG = 'text/plain, application/json;q=0.5, text/html, text/xml, text/yaml, text/javascript, text/csv, text/css, text/rtf, text/markdown, application/octet-stream;q=0.2, */*;q=0.1';
const LONG_LIST = ['text/plain', 'text/html', 'text/xml', 'text/yaml', 'text/javascript', 'text/csv', 'text/css', 'text/rtf', 'text/markdown', 'application/json', 'application/octet-stream'];
const XHTML_WAP = 'application/xhtml+xml;profile="http://www.wapforum.org/xhtml"';
const STABLE_IN = ['application/json', 'text/html', 'text/plain', 'text/xml', 'application/xml', 'image/gif', 'image/jpeg', 'image/png', 'audio/mp3', 'application/javascript', 'text/javascript'];
const STABLE_OUT = ['text/html', 'text/plain', 'text/xml', 'text/javascript', 'image/gif', 'image/jpeg', 'image/png', 'application/json', 'application/xml', 'audio/mp3', 'application/javascript'];

/** [where, Accept (undefined: absent), offered, the one chosen (undefined: none)] */
const chosen: ReadonlyArray<readonly [where: string, accept: string | undefined, offered: readonly string[], expected: string | undefined]> = [
  [`${NEG_ONE} › when no Accept › should return first item in list`, undefined, ['text/html'], 'text/html'],
  [`${NEG_ONE} › when no Accept › should return first item in list`, undefined, ['text/html', 'application/json'], 'text/html'],
  [`${NEG_ONE} › when no Accept › should return first item in list`, undefined, ['application/json', 'text/html'], 'application/json'],
  [`${NEG_ONE} › when Accept: */* › should return first item in list`, '*/*', ['text/html'], 'text/html'],
  [`${NEG_ONE} › when Accept: */* › should return first item in list`, '*/*', ['text/html', 'application/json'], 'text/html'],
  [`${NEG_ONE} › when Accept: */* › should return first item in list`, '*/*', ['application/json', 'text/html'], 'application/json'],
  [`${NEG_ONE} › when Accept: application/json › should be case insensitive`, 'application/json', ['application/JSON'], 'application/JSON'],
  [`${NEG_ONE} › when Accept: application/json › should only return application/json`, 'application/json', ['text/html'], undefined],
  [`${NEG_ONE} › when Accept: application/json › should only return application/json`, 'application/json', ['text/html', 'application/json'], 'application/json'],
  [`${NEG_ONE} › when Accept: application/json;q=0.2, text/html › should prefer text/html over application/json`, 'application/json;q=0.2, text/html', ['application/json'], 'application/json'],
  [`${NEG_ONE} › when Accept: application/json;q=0.2, text/html › should prefer text/html over application/json`, 'application/json;q=0.2, text/html', ['application/json', 'text/html'], 'text/html'],
  [`${NEG_ONE} › when Accept: application/json;q=0.2, text/html › should prefer text/html over application/json`, 'application/json;q=0.2, text/html', ['text/html', 'application/json'], 'text/html'],
  [`${NEG_ONE} › when Accept: text/* › should prefer text media types`, 'text/*', ['application/json'], undefined],
  [`${NEG_ONE} › when Accept: text/* › should prefer text media types`, 'text/*', ['application/json', 'text/html'], 'text/html'],
  [`${NEG_ONE} › when Accept: text/* › should prefer text media types`, 'text/*', ['text/html', 'application/json'], 'text/html'],
  [`${NEG_ONE} › when Accept: text/*, text/plain;q=0 › should prefer text media types`, 'text/*, text/plain;q=0', ['application/json'], undefined],
  [`${NEG_ONE} › when Accept: text/*, text/plain;q=0 › should prefer text media types`, 'text/*, text/plain;q=0', ['application/json', 'text/html'], 'text/html'],
  [`${NEG_ONE} › when Accept: text/*, text/plain;q=0 › should prefer text media types`, 'text/*, text/plain;q=0', ['text/html', 'application/json'], 'text/html'],
  [`${NEG_ONE} › when Accept: ${THREE} › should return in preferred order`, THREE, ['application/json', 'text/plain', 'text/html'], 'text/plain'],
  [`${NEG_ONE} › when Accept: ${THREE} › should return in preferred order`, THREE, ['image/jpeg', 'text/html'], 'text/html'],
  [`${NEG_ONE} › when Accept: ${THREE} › should return in preferred order`, THREE, ['image/jpeg', 'image/gif'], 'image/jpeg'],
  [`${NEG_ONE} › when Accept: text/plain, … (12 ranges) › should return the client-preferred order`, LONG, LONG_LIST, 'text/plain'],
  [`${ACCEPTS} › with no valid types › when Accept is populated › should return false`, 'application/*;q=0.2, image/jpeg;q=0.8, text/html, text/plain', ['image/png', 'image/tiff'], undefined],
  [`${ACCEPTS} › when present in Accept as an exact match › should return the type`, 'text/plain, text/html', ['text/html'], 'text/html'],
  [`${ACCEPTS} › when present in Accept as an exact match › should return the type`, 'text/plain, text/html', ['text/plain'], 'text/plain'],
  [`${ACCEPTS} › when present in Accept as a type match › should return the type`, 'application/json, */*', ['text/html'], 'text/html'],
  [`${ACCEPTS} › when present in Accept as a type match › should return the type`, 'application/json, */*', ['text/plain'], 'text/plain'],
  [`${ACCEPTS} › when present in Accept as a type match › should return the type`, 'application/json, */*', ['image/png'], 'image/png'],
  [`${ACCEPTS} › when present in Accept as a subtype match › should return the type`, 'application/json, text/*', ['text/html'], 'text/html'],
  [`${ACCEPTS} › when present in Accept as a subtype match › should return the type`, 'application/json, text/*', ['text/plain'], 'text/plain'],
  [`${ACCEPTS} › when present in Accept as a subtype match › should return the type`, 'application/json, text/*', ['image/png'], undefined],
];

/** [where, Accept (undefined: absent), offered, every acceptable one, best first] */
const ranked: ReadonlyArray<readonly [where: string, accept: string | undefined, offered: readonly string[], expected: readonly string[]]> = [
  [`${NEG_ALL} › when no Accept › should return return original list`, undefined, ['application/json', 'text/plain'], ['application/json', 'text/plain']],
  [`${NEG_ALL} › when Accept: */* › should return return original list`, '*/*', ['application/json', 'text/plain'], ['application/json', 'text/plain']],
  [`${NEG_ALL} › when Accept: */*;q=0.8, text/*, image/* › should return return stable-sorted list`, '*/*;q=0.8, text/*, image/*', STABLE_IN, STABLE_OUT],
  [`${NEG_ALL} › when Accept: application/json › should accept application/json`, 'application/json', ['application/json'], ['application/json']],
  [`${NEG_ALL} › when Accept: application/json › should be case insensitive`, 'application/json', ['application/JSON'], ['application/JSON']],
  [`${NEG_ALL} › when Accept: application/json › should only return application/json`, 'application/json', ['text/html', 'application/json'], ['application/json']],
  [`${NEG_ALL} › when Accept: application/json › should ignore invalid types`, 'application/json', ['boom', 'application/json'], ['application/json']],
  [`${NEG_ALL} › when Accept: application/json;q=0 › should not accept application/json`, 'application/json;q=0', ['application/json'], []],
  [`${NEG_ALL} › when Accept: application/json;q=0 › should not accept other media types`, 'application/json;q=0', ['application/json', 'text/html', 'image/jpeg'], []],
  [`${NEG_ALL} › when Accept: application/json;q=0.2, text/html › should prefer text/html over application/json`, 'application/json;q=0.2, text/html', ['application/json', 'text/html'], ['text/html', 'application/json']],
  [`${NEG_ALL} › when Accept: application/json;q=0.9, text/html;q=0.8, application/json;q=0.7 › should prefer application/json over text/html`, 'application/json;q=0.9, text/html;q=0.8, application/json;q=0.7', ['text/html', 'application/json'], ['application/json', 'text/html']],
  [`${NEG_ALL} › when Accept: application/json, */*;q=0.1 › should prefer application/json over text/html`, 'application/json, */*;q=0.1', ['text/html', 'application/json'], ['application/json', 'text/html']],
  [`${NEG_ALL} › when Accept: ${XHTML_WAP} › should accept ${XHTML_WAP}`, XHTML_WAP, [XHTML_WAP], [XHTML_WAP]],
  [`${NEG_ALL} › when Accept: text/* › should prefer text media types`, 'text/*', ['text/html', 'application/json', 'text/plain'], ['text/html', 'text/plain']],
  [`${NEG_ALL} › when Accept: text/*, text/html;level › should accept text/html`, 'text/*, text/html;level', ['text/html'], ['text/html']],
  [`${NEG_ALL} › when Accept: text/*, text/plain;q=0 › should prefer text media types except text/plain`, 'text/*, text/plain;q=0', ['text/html', 'text/plain'], ['text/html']],
  [`${NEG_ALL} › when Accept: text/*, text/plain;q=0.5 › should prefer text/plain below other text types`, 'text/*, text/plain;q=0.5', ['text/html', 'text/plain', 'text/xml'], ['text/html', 'text/xml', 'text/plain']],
  [`${NEG_ALL} › when Accept: text/html;level=1 › should accept text/html;level=1`, 'text/html;level=1', ['text/html;level=1'], ['text/html;level=1']],
  [`${NEG_ALL} › when Accept: text/html;level=1 › should accept text/html;Level=1`, 'text/html;level=1', ['text/html;Level=1'], ['text/html;Level=1']],
  [`${NEG_ALL} › when Accept: text/html;level=1 › should not accept text/html;level=2`, 'text/html;level=1', ['text/html;level=2'], []],
  [`${NEG_ALL} › when Accept: text/html;level=1 › should not accept text/html`, 'text/html;level=1', ['text/html'], []],
  [`${NEG_ALL} › when Accept: text/html;level=1 › should accept text/html;level=1;foo=bar`, 'text/html;level=1', ['text/html;level=1;foo=bar'], ['text/html;level=1;foo=bar']],
  [`${NEG_ALL} › when Accept: text/html;level=1;foo=bar › should not accept text/html;level=1`, 'text/html;level=1;foo=bar', ['text/html;level=1'], []],
  [`${NEG_ALL} › when Accept: text/html;level=1;foo=bar › should accept text/html;level=1;foo=bar`, 'text/html;level=1;foo=bar', ['text/html;level=1;foo=bar'], ['text/html;level=1;foo=bar']],
  [`${NEG_ALL} › when Accept: text/html;level=1;foo=bar › should accept text/html;foo=bar;level=1`, 'text/html;level=1;foo=bar', ['text/html;foo=bar;level=1'], ['text/html;foo=bar;level=1']],
  [`${NEG_ALL} › when Accept: text/html;level=1;foo="bar" › should accept text/html;level=1;foo=bar`, 'text/html;level=1;foo="bar"', ['text/html;level=1;foo=bar'], ['text/html;level=1;foo=bar']],
  [`${NEG_ALL} › when Accept: text/html;level=1;foo="bar" › should accept text/html;level=1;foo="bar"`, 'text/html;level=1;foo="bar"', ['text/html;level=1;foo="bar"'], ['text/html;level=1;foo="bar"']],
  [`${NEG_ALL} › when Accept: text/html;foo=";level=2;" › should not accept text/html;level=2`, 'text/html;foo=";level=2;"', ['text/html;level=2'], []],
  [`${NEG_ALL} › when Accept: text/html;foo=";level=2;" › should accept text/html;foo=";level=2;"`, 'text/html;foo=";level=2;"', ['text/html;foo=";level=2;"'], ['text/html;foo=";level=2;"']],
  [`${NEG_ALL} › when Accept: text/html;LEVEL=1 › should accept text/html;level=1`, 'text/html;LEVEL=1', ['text/html;level=1'], ['text/html;level=1']],
  [`${NEG_ALL} › when Accept: text/html;LEVEL=1 › should accept text/html;Level=1`, 'text/html;LEVEL=1', ['text/html;Level=1'], ['text/html;Level=1']],
  [`${NEG_ALL} › when Accept: text/html;LEVEL=1;level=2 › should accept the first parameter value`, 'text/html;LEVEL=1;level=2', ['text/html;level=1'], ['text/html;level=1']],
  [`${NEG_ALL} › when Accept: text/html;LEVEL=1;level=2 › should not accept the duplicate parameter value`, 'text/html;LEVEL=1;level=2', ['text/html;level=2'], []],
  [`${NEG_ALL} › when Accept: text/html;level=2 › should not accept text/html;level=1`, 'text/html;level=2', ['text/html;level=1'], []],
  [`${NEG_ALL} › when Accept: text/html;level=2, text/html › should prefer text/html;level=2 over text/html`, 'text/html;level=2, text/html', ['text/html', 'text/html;level=2'], ['text/html;level=2', 'text/html']],
  [`${NEG_ALL} › when Accept: text/html;level=2;q=0.1, text/html › should prefer text/html over text/html;level=2`, 'text/html;level=2;q=0.1, text/html', ['text/html;level=2', 'text/html'], ['text/html', 'text/html;level=2']],
  [`${NEG_ALL} › when Accept: text/html;level=2;q=0.1;level=1 › should not accept text/html;level=1`, 'text/html;level=2;q=0.1;level=1', ['text/html;level=1'], []],
  [
    `${NEG_ALL} › when Accept: text/html;level=2;q=0.1, text/html;level=1, text/html;q=0.5 › should prefer text/html;level=1, text/html, text/html;level=2`,
    'text/html;level=2;q=0.1, text/html;level=1, text/html;q=0.5', ['text/html;level=1', 'text/html;level=2', 'text/html'], ['text/html;level=1', 'text/html', 'text/html;level=2'],
  ],
  [`${NEG_ALL} › when Accept: ${THREE} › should prefer text/plain over text/html`, THREE, ['text/html', 'text/plain'], ['text/plain', 'text/html']],
  [`${NEG_ALL} › when Accept: ${THREE} › should prefer application/json after text`, THREE, ['application/json', 'text/html', 'text/plain'], ['text/plain', 'text/html', 'application/json']],
  [`${NEG_ALL} › when Accept: ${THREE} › should prefer image/jpeg after text`, THREE, ['image/jpeg', 'text/html', 'text/plain'], ['text/plain', 'text/html', 'image/jpeg']],
  [`${NEG_ALL} › when Accept: text/plain, … (12 ranges) › should return the client-preferred order`, LONG, LONG_LIST, LONG_LIST],
];

for (const [where, accept, offered, expected] of chosen) {
  test(`A-3 peer case: ${where}: ${JSON.stringify(offered)} → ${expected ?? 'none'}`, () => {
    assert.equal(negotiate(accept, offered), expected);
    assert.equal(createNegotiator(offered)(accept), expected, 'createNegotiator');
    assert.equal(negotiate(accept, offered, { charsetUtf8: true }), expected, 'the N-2 option changes nothing without a charset');
  });
}

for (const [where, accept, offered, expected] of ranked) {
  test(`A-3 peer case: ${where}: ${JSON.stringify(offered)} → ${JSON.stringify(expected)}`, () => {
    assert.deepEqual(negotiateAll(accept, offered), expected);
    assert.equal(negotiate(accept, offered), expected[0], 'negotiate answers the first of the ranking');
    assert.equal(createNegotiator(offered)(accept), expected[0], 'createNegotiator');
  });
}

test('A-3 peer vectors: transcribed right (the negotiator package passes its own rows)', () => {
  const theirs = (accept: string | undefined, offered: readonly string[]): string[] => new Negotiator({ headers: accept === undefined ? {} : { accept } }).mediaTypes([...offered]);
  for (const [where, accept, offered, expected] of ranked) assert.deepEqual(theirs(accept, offered), expected, where);
  for (const [where, accept, offered, expected] of chosen) assert.equal(theirs(accept, offered)[0], expected, where);
});

test(`A-3 peer case, the one exception: ${ACCEPTS} › with no valid types › when Accept is not populated › should return the first type`, () => {
  // accepts answers 'text/html' for ['text/html', 'text/plain', 'image/jpeg', 'application/*']: we refuse
  // the list, since a wildcard is a range a client sends, not a type a server can send.
  assert.throws(() => negotiate(undefined, ['text/html', 'text/plain', 'image/jpeg', 'application/*']), INVALID_ARGUMENT);
  assert.equal(negotiate(undefined, ['text/html', 'text/plain', 'image/jpeg']), 'text/html', 'without the wildcard: the first type');
});

test(`A-3 not a media type: ${ACCEPTS} › when extensions are given (mime lookups): an extension is a malformed offered type, skipped`, () => {
  assert.equal(negotiate('text/plain, text/html', ['html']), undefined);
  assert.equal(negotiate('text/plain, text/html', ['bogus', 'text/html']), 'text/html');
});
