import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Negotiator from 'negotiator';
import { MAX_ACCEPT_ENTRIES, MAX_ACCEPT_LENGTH, parseAccept } from '../../lib/negotiate/accept.js';
import type { MediaRange } from '../../lib/negotiate/accept.js';
import { createNegotiator, negotiate, negotiateAll } from '../../lib/negotiate/negotiate.js';
import { ServiceError } from '../../lib/errors.js';

/** a wrong argument is a ServiceError ERR_INVALID_ARGUMENT, not a TypeError. */
const INVALID_ARGUMENT = (error: unknown) => error instanceof ServiceError && error.code === 'ERR_INVALID_ARGUMENT';

const OFFERED = ['application/json', 'application/xml', 'text/xml'] as const;
/** The service's options (N-2): its representations are sent as UTF-8. */
const SERVICE = { charsetUtf8: true } as const;
const JSON_ = 'application/json';
const XML = 'application/xml';
const TEXT_XML = 'text/xml';

const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
const FIREFOX = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const FIREFOX_OLD = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const SAFARI_OLD = 'application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5';
const IE11 = 'text/html, application/xhtml+xml, image/jxr, */*';
const JAVA_URLCONNECTION = 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2';

const cases: ReadonlyArray<readonly [why: string, accept: string | undefined, expected: string | undefined]> = [
  // No header, empty header → */* → server order
  ['absent: default', undefined, JSON_],
  ['empty: like absent', '', JSON_],
  ['blank: like absent', '   ', JSON_],
  ['only commas: like absent', ', ,', JSON_],
  // Real clients
  ['Chrome/Edge navigation: application/xml;q=0.9 beats */*;q=0.8', CHROME, XML],
  ['Firefox/Safari navigation', FIREFOX, XML],
  ['older Firefox navigation', FIREFOX_OLD, XML],
  ['old WebKit: application/xml first at q=1', SAFARI_OLD, XML],
  ['IE11: only */* applies, server order', IE11, JSON_],
  ['curl, wget, fetch, requests', '*/*', JSON_],
  ['axios', 'application/json, text/plain, */*', JSON_],
  ['jQuery dataType json', 'application/json, text/javascript, */*; q=0.01', JSON_],
  ['jQuery dataType xml', 'application/xml, text/xml, */*; q=0.01', XML],
  ['HTTPie', 'application/json, */*;q=0.5', JSON_],
  ['Java HttpURLConnection (bare * is skipped)', JAVA_URLCONNECTION, JSON_],
  ['feed reader', 'application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.8, */*;q=0.7', XML],
  ['GitHub-style vendor type only', 'application/vnd.github+json', undefined],
  // Plain choices
  ['json', 'application/json', JSON_],
  ['xml', 'application/xml', XML],
  ['text/xml only when it wins', 'text/xml', TEXT_XML],
  ['text/* covers text/xml only', 'text/*', TEXT_XML],
  ['application/* prefers server order', 'application/*', JSON_],
  ['nothing offered matches', 'image/png, text/html', undefined],
  // q values
  ['higher q wins over header order', 'application/json;q=0.5, application/xml', XML],
  ['legacy .5 form', 'application/json;q=.5, application/xml;q=.4', JSON_],
  ['three decimals compare exactly', 'application/json;q=0.501, application/xml;q=0.5', JSON_],
  ['q=1.000 is 1', 'application/xml;q=1.000, application/json;q=0.999', XML],
  ['q=0 means not acceptable', 'application/json;q=0', undefined],
  ['*/*;q=0 refuses everything', '*/*;q=0', undefined],
  ['q=1.5 entry is skipped, the rest count', 'application/json;q=1.5, application/xml;q=0.1', XML],
  ['q=abc entry is skipped', 'application/json;q=abc, text/xml;q=0.1', TEXT_XML],
  ['q=Infinity entry is skipped', 'application/json;q=Infinity', undefined],
  ['q=0.0001 entry is skipped', 'application/json;q=0.0001, */*;q=0.1', JSON_],
  ['q=-0 entry is skipped', 'application/xml;q=-0, application/json;q=0.2', JSON_],
  // Specificity overrides (RFC 9110 §12.5.1)
  ['application/json;q=0, */*: anything but JSON', 'application/json;q=0, */*', XML],
  ['exact type overrides its wildcard even with lower q', 'application/*;q=1, application/json;q=0.1, text/xml;q=0.5', XML],
  ['exact q=0 overrides type wildcard', 'application/*;q=0.2, application/xml;q=0', JSON_],
  ['type wildcard q=0 overrides */*', 'application/*;q=0, */*', TEXT_XML],
  ['text/*;q=0 leaves application types', 'text/*;q=0, */*;q=0.3', JSON_],
  ['specific xml q=0.9 beats */* q=1 only by weight: */* wins', 'application/xml;q=0.9, */*', JSON_],
  // Tie-breaks (N-3)
  ['tie: more specific range wins over server order', '*/*, text/xml', TEXT_XML],
  ['tie: exact beats type wildcard', 'application/*, text/xml', TEXT_XML],
  ['tie on weight and specificity: earlier in header wins', 'text/xml, application/xml', TEXT_XML],
  ['tie: earlier in header, weights equal', 'application/xml;q=0.5, application/json;q=0.5', XML],
  ['tie on everything: server order', 'application/*', JSON_],
  ['equal specificity duplicates: highest q decides', 'application/json;q=0.2, application/json;q=0.9, application/xml;q=0.5', JSON_],
  // Parameters
  ['charset=utf-8 matches', 'application/json;charset=utf-8', JSON_],
  ['charset=UTF-8 (any case) matches', 'application/xml;charset=UTF-8', XML],
  ['charset=utf8 (WHATWG label) matches', 'application/xml;charset=utf8', XML],
  ['quoted charset matches', 'text/xml;charset="utf-8"', TEXT_XML],
  ['*/*;charset=utf-8 (PhpStorm) matches', '*/*; charset=utf-8', JSON_],
  ['charset=latin1 matches nothing', 'application/json;charset=iso-8859-1', undefined],
  ['charset names UTF-8 is more specific than without', 'application/json;charset=utf-8;q=0.9, application/json;q=0.1, application/xml;q=0.5', JSON_],
  ['a utf-8 range that refuses, overrides the plain range', 'application/json, application/json;charset=utf-8;q=0, application/xml;q=0.1', XML],
  ['other parameter: range matches none (version)', 'application/json;version=2', undefined],
  ['other parameter: range matches none (profile), rest count', 'application/json;profile=x, application/xml;q=0.1', XML],
  ['other parameter on */*: matches none', '*/*;foo=bar', undefined],
  ['parameters after q are ignored', 'application/json;q=0.5;foo=bar, application/xml;q=0.4', JSON_],
  ['Chrome signed-exchange v=b3 never matches', 'application/signed-exchange;v=b3', undefined],
  // Junk, case, whitespace, quotes
  ['all entries invalid: nothing acceptable', 'json', undefined],
  ['all entries invalid, several', 'json, xml, */json', undefined],
  ['*/json is skipped', '*/json, application/xml;q=0.5', XML],
  ['junk entries among valid ones', 'garbage, @@@, application/xml;q=0.3, ;;;', XML],
  ['types are case-insensitive', 'APPLICATION/XML', XML],
  ['mixed case and Q', 'Application/Json;Q=0.5, TEXT/XML', TEXT_XML],
  ['tabs and spaces', '\tapplication/xml \t; q=0.5 ,\ttext/xml ;q=0.4', XML],
  ['empty elements', ',,application/xml,,', XML],
  ['comma inside quotes does not split', 'foo/bar;x="a, application/json", application/xml;q=0.1', XML],
  ['unterminated quote swallows the rest', 'application/xml;q=0.1, foo/bar;x="a, application/json', XML],
];

for (const [why, accept, expected] of cases) {
  test(`N-2/N-3 negotiate: ${why}: ${JSON.stringify(accept)} → ${expected ?? 'none (406)'}`, () => {
    assert.equal(negotiate(accept, OFFERED, SERVICE), expected);
    assert.equal(negotiate(parseAccept(accept), OFFERED, SERVICE), expected, 'same answer from parsed ranges');
    assert.equal(createNegotiator(OFFERED, SERVICE)(accept), expected, 'same answer from createNegotiator');
    assert.equal(negotiateAll(accept, OFFERED, SERVICE)[0], expected, 'the ranking starts with it');
  });
}

test('N-2 negotiate: the entry cap (64): an acceptable type past it is not seen', () => {
  const filler = Array.from({ length: MAX_ACCEPT_ENTRIES }, (_, i) => `image/t${i}`).join(',');
  assert.equal(negotiate(`${filler},application/json`, OFFERED), undefined);
  const fewer = Array.from({ length: MAX_ACCEPT_ENTRIES - 1 }, (_, i) => `image/t${i}`).join(',');
  assert.equal(negotiate(`${fewer},application/xml`, OFFERED), XML);
});

test('N-2 negotiate: the length cap (8 KiB): later entries are ignored, a cut entry is dropped', () => {
  assert.equal(negotiate(`text/xml;q=0.1,${' '.repeat(MAX_ACCEPT_LENGTH)},application/json`, OFFERED), TEXT_XML);
  const prefix = 'text/xml;q=0.5,';
  const entry = 'application/json';
  const cut = `${prefix}${' '.repeat(MAX_ACCEPT_LENGTH - prefix.length - entry.length)}${entry};q=0.1`;
  assert.equal(negotiate(cut, OFFERED), TEXT_XML);
  assert.equal(negotiate(`foo/bar;x="${'y'.repeat(20_000)}", application/json`, OFFERED), undefined);
});

test('N-3 negotiate: returns the offered string itself, for any offered list', () => {
  const problem = ['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml'];
  assert.equal(negotiate('application/problem+xml', problem), 'application/problem+xml');
  assert.equal(negotiate(CHROME, problem), 'application/xml');
  assert.equal(negotiate('*/*', problem), 'application/problem+json');
  assert.equal(negotiate('*/*', []), undefined);
  assert.equal(negotiate(undefined, []), undefined);
  assert.equal(negotiate('', []), undefined);
});

test('N-3 negotiate: ranges built by hand work too', () => {
  const range = (type: string, subtype: string, q: number, position: number, params: Record<string, string> = {}): MediaRange => ({
    type,
    subtype,
    q,
    position,
    params: new Map(Object.entries(params)),
  });
  assert.equal(negotiate([], OFFERED), undefined, 'no ranges accept nothing');
  assert.equal(negotiate([range('*', '*', 0.5, 0), range('text', 'xml', 0.5, 1)], OFFERED), TEXT_XML);
  assert.equal(negotiate([range('application', 'xml', 1, 1), range('application', 'json', 1, 0)], OFFERED), JSON_, 'position, not array order');
  assert.equal(negotiate([range('application', 'json', 1, 0, { charset: 'UTF-8' })], OFFERED, SERVICE), JSON_);
  assert.equal(negotiate([range('application', 'json', 1, 0, { charset: 'UTF-8' })], OFFERED), undefined, 'without the N-2 option');
  assert.equal(negotiate([range('application', 'json', 1, 0, { charset: 'utf-8', level: '1' })], OFFERED, SERVICE), undefined);
  assert.equal(negotiate([range('text', 'html', 1, 0, { level: '1' })], ['text/html', 'text/html;level=1']), 'text/html;level=1');
});

test('negotiate: programmer errors are loud', () => {
  const wildcards: ReadonlyArray<readonly string[]> = [['*/*'], ['text/*'], ['*/xml'], ['application/json', 'TEXT/*;level=1'], [' */* ']];
  for (const offered of wildcards) {
    assert.throws(() => negotiate('*/*', offered), INVALID_ARGUMENT, JSON.stringify(offered));
    assert.throws(() => negotiateAll('*/*', offered), INVALID_ARGUMENT, JSON.stringify(offered));
    assert.throws(() => createNegotiator(offered), INVALID_ARGUMENT, JSON.stringify(offered));
  }
  assert.throws(() => negotiate('*/*', 'application/json' as unknown as string[]), INVALID_ARGUMENT);
  assert.throws(() => negotiate('*/*', [42] as unknown as string[]), INVALID_ARGUMENT);
  assert.throws(() => negotiate('*/*', OFFERED, { charsetUTF8: true } as never), INVALID_ARGUMENT, 'unknown option (a typo)');
  assert.throws(() => negotiate('*/*', OFFERED, { cacheSize: 1 } as never), INVALID_ARGUMENT, 'cacheSize is for createNegotiator');
  assert.throws(() => negotiate('*/*', OFFERED, { charsetUtf8: 'yes' } as never), INVALID_ARGUMENT);
  assert.throws(() => createNegotiator(OFFERED, { charsetUtf8: 1 } as never), INVALID_ARGUMENT);
  assert.throws(() => negotiate([{ type: '*', subtype: '*', q: 2, position: 0, params: new Map() }], OFFERED), INVALID_ARGUMENT);
  assert.throws(() => negotiate([{ type: '*', subtype: '*', q: Number.NaN, position: 0, params: new Map() }], OFFERED), INVALID_ARGUMENT);
  for (const cacheSize of [-1, 1.5, Number.NaN, 1e9]) assert.throws(() => createNegotiator(OFFERED, { cacheSize }), INVALID_ARGUMENT, String(cacheSize));
});

test('N-2 createNegotiator: cached answers stay right while the cache churns', () => {
  const headers = [CHROME, '*/*', 'text/xml', 'application/json;q=0, */*', 'json', '', FIREFOX, 'image/png', 'text/*;q=0.5, application/xml;q=0.4'];
  for (const cacheSize of [0, 1, 2, 3, 256]) {
    const choose = createNegotiator(OFFERED, { cacheSize });
    for (let round = 0; round < 5; round++) {
      for (const header of round % 2 === 0 ? headers : [...headers].reverse()) {
        assert.equal(choose(header), negotiate(header, OFFERED), `cacheSize ${cacheSize}: ${header}`);
      }
    }
    assert.equal(choose(undefined), JSON_);
  }
});

test('N-2 createNegotiator: copies the offered list (later changes to it do not matter)', () => {
  const offered = ['application/json', 'application/xml'];
  const choose = createNegotiator(offered);
  offered[0] = 'text/xml';
  assert.equal(choose('*/*'), 'application/json');
  assert.equal(choose(undefined), 'application/json');
});

test('N-2 createNegotiator: headers longer than the cache key limit are still answered', () => {
  const choose = createNegotiator(OFFERED, { cacheSize: 2 });
  const long = `${'image/png, '.repeat(60)}text/xml`;
  assert.equal(choose(long), TEXT_XML);
  assert.equal(choose(long), TEXT_XML);
});

// Agreement with the `negotiator` package (used by Express) where the contract agrees with it.
function expressChoice(accept: string | undefined): string | undefined {
  return new Negotiator({ headers: accept === undefined ? {} : { accept } }).mediaType([...OFFERED]);
}

const agreed: ReadonlyArray<string | undefined> = [
  undefined, CHROME, FIREFOX, FIREFOX_OLD, SAFARI_OLD, IE11, JAVA_URLCONNECTION, '*/*', 'application/json, text/plain, */*',
  'application/json, text/javascript, */*; q=0.01', 'application/xml, text/xml, */*; q=0.01', 'json', '*', 'text/*',
  'application/json;q=0, */*', 'application/*;q=0.2, application/xml;q=0', 'text/*;q=0.5, application/*;q=0.4', 'APPLICATION/XML',
  'Application/Json;Q=0.5, text/XML', 'application/json;q=abc, application/xml', 'application/json;q=-0', 'application/json;q=.5, application/xml;q=.4',
  'application/json;q=1.000', 'application/json;charset=iso-8859-1', 'application/json;version=2', 'application/json;profile=x, application/xml;q=0.1',
  'foo/bar;x="1,2", application/xml', 'application/json;q=0.5, application/json;q=0.9, application/xml;q=0.8', 'text/xml, application/xml',
  'application/xml;q=0.5, text/xml;q=0.5', '*/*;q=0.5, application/xml', 'application/json;q=0.8, text/xml;q=0.8', 'image/png', 'application/json;q=0',
  '*/*;q=0', 'application/xml;q=0.9, */*', 'application/*, text/xml;q=0.99', 'application/json ;q=0.5, application/xml;q=0.4',
  'application/json,,,application/xml', 'application/json;;q=0.1, application/xml;q=0.2', '*/*, text/xml', 'application/*;q=0, */*',
];

test('N-2/N-3 negotiate agrees with the negotiator package on common and edge headers', () => {
  for (const accept of agreed) assert.equal(negotiate(accept, OFFERED, SERVICE), expressChoice(accept), JSON.stringify(accept));
});

// Without the N-2 option (the library's default) a charset on a range is a parameter like any
// other, as RFC 9110 §12.5.1 says and as negotiator does.
const agreedWithoutUtf8: ReadonlyArray<string> = [
  'application/json;charset=utf-8', '*/*; charset=utf-8', 'text/xml;charset="utf-8"', 'application/json;charset=UTF-8;q=0.5, application/xml;q=0.4',
  'application/json, application/json;charset=utf-8;q=0, application/xml;q=0.1', 'application/json;charset=utf-8;q=0.9, application/json;q=0.1, application/xml;q=0.5',
];

test('A-3 negotiate without the N-2 option: a charset on a range must be on the offered type, as negotiator does', () => {
  for (const accept of [...agreed, ...agreedWithoutUtf8]) {
    assert.equal(negotiate(accept, OFFERED), expressChoice(accept), JSON.stringify(accept));
    assert.equal(createNegotiator(OFFERED)(accept ?? undefined), expressChoice(accept), JSON.stringify(accept));
  }
  assert.equal(negotiate('application/json;charset=utf-8', ['application/json;charset=UTF-8']), 'application/json;charset=UTF-8', 'charset values are case-insensitive');
  assert.equal(negotiate('application/json;charset=utf-8', ['application/json;charset=iso-8859-1', 'application/json']), undefined);
});

// Where we differ on purpose; each row: header, our answer, negotiator's answer, reason.
const differences: ReadonlyArray<readonly [accept: string, ours: string | undefined, theirs: string | undefined, reason: string]> = [
  ['', JSON_, undefined, 'N-2: an empty Accept means */*; negotiator treats it as accepting nothing'],
  [' , ', JSON_, undefined, 'N-2: a header with no entries is like an empty one'],
  ['application/json;q=1.5', undefined, JSON_, 'N-2: q above 1 is invalid, so the entry is skipped; negotiator uses parseFloat'],
  ['application/json;q=Infinity', undefined, JSON_, 'N-2: Infinity is not a qvalue'],
  ['application/json;q=0.0001', undefined, JSON_, 'N-2: at most three decimals'],
  ['application/json;q=1.0001', undefined, JSON_, 'N-2: at most three decimals'],
  ['application/json;q=', undefined, JSON_, 'N-2: an empty weight is invalid; negotiator falls back to q=1'],
  ['application/json;charset=utf-8', JSON_, undefined, 'N-2: charset=utf-8 matches what we send; negotiator needs the offer to carry the parameter'],
  ['*/*; charset=utf-8', JSON_, undefined, 'N-2: same, on a wildcard (the PhpStorm header)'],
  ['text/xml;charset="utf-8"', TEXT_XML, undefined, 'N-2: same, quoted'],
  ['application/json;charset=UTF-8;q=0.5, application/xml;q=0.4', JSON_, XML, 'N-2: same, so JSON keeps its 0.5'],
  ['application/json;q=0.5;foo=bar', JSON_, undefined, 'parameters after q are accept-ext and ignored; negotiator treats them as media-type parameters'],
  ['*/json, application/xml;q=0.5', XML, JSON_, 'N-2: */json is not a media range and is skipped; negotiator lets it cover application/json'],
  ['application/json, application/xml, application/json', JSON_, XML, 'N-3: a repeated range keeps its first position; negotiator keeps the last one'],
];

for (const [accept, ours, theirs, reason] of differences) {
  test(`N-2/N-3 documented difference from negotiator: ${JSON.stringify(accept)}: ${reason}`, () => {
    assert.equal(negotiate(accept, OFFERED, SERVICE), ours);
    assert.equal(expressChoice(accept), theirs, 'negotiator changed: revisit this row');
  });
}

// Where the library differs from negotiator's mediaTypes(list), options off (README, "Content
// negotiation on its own"); each row: header, offered, our ranking, negotiator's, reason.
const libraryDifferences: ReadonlyArray<readonly [accept: string | undefined, offered: readonly string[], ours: readonly string[] | 'refused', theirs: readonly string[], reason: string]> = [
  ['text/html;level=1;foo=bar;q=0, text/html;level=1', ['text/html;level=1;foo=bar', 'text/html;level=1'], ['text/html;level=1'], ['text/html;level=1;foo=bar', 'text/html;level=1'], 'RFC 9110 §12.5.1: more parameters are more specific, so the q=0 range decides'],
  ['application/vnd.example+json;version=V2', ['application/vnd.example+json;version=v2'], [], ['application/vnd.example+json;version=v2'], 'RFC 9110 §5.6.6: parameter values keep their case (charset excepted)'],
  ['text/html;level=*', ['text/html;level=1'], [], ['text/html;level=1'], 'a "*" parameter value is a value, not a wildcard'],
  [undefined, ['text/html', 'application/*'], 'refused', ['application/*', 'text/html'], 'an offer is a concrete type'],
  ['*/*', ['text/html;level', 'text/html;q=0.5', 'text/html, text/plain', ' text/html', 'text/plain'], ['text/plain'], ['text/html;level', 'text/html;q=0.5', 'text/html, text/plain', ' text/html', 'text/plain'], 'malformed offered types are skipped'],
];

for (const [accept, offered, ours, theirs, reason] of libraryDifferences) {
  test(`A-3 documented difference from negotiator (library): ${JSON.stringify(accept)} × ${JSON.stringify(offered)}: ${reason}`, () => {
    if (ours === 'refused') assert.throws(() => negotiateAll(accept, offered), INVALID_ARGUMENT);
    else assert.deepEqual(negotiateAll(accept, offered), ours);
    assert.deepEqual(new Negotiator({ headers: accept === undefined ? {} : { accept } }).mediaTypes([...offered]), theirs, 'negotiator changed: revisit this row');
  });
}

// A slow, obviously-correct model of N-2/N-3 over parsed ranges, to check the fast code against:
// every acceptable offered type, best first.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const OFFER = new RegExp(`^(${TOKEN})/(${TOKEN})((?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"(?:[^"\\\\]|\\\\.)*"))*)$`);
const OFFER_PARAM = new RegExp(`;[ \\t]*(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*")`, 'g');
const isUtf8 = (v: string): boolean => ['utf-8', 'utf8'].includes(v.toLowerCase());

function modelOffer(text: string): { type: string; subtype: string; params: Map<string, string> } | undefined {
  const m = OFFER.exec(text);
  if (m === null) return undefined;
  const params = new Map<string, string>();
  for (const [, name, value] of (m[3] as string).matchAll(OFFER_PARAM)) {
    const key = (name as string).toLowerCase();
    const unquoted = (value as string).startsWith('"') ? (value as string).slice(1, -1).replace(/\\(.)/g, '$1') : (value as string);
    if (!params.has(key)) params.set(key, unquoted);
  }
  // RFC 9110 §12.5.1: the media type registry disallows a parameter named q.
  if (params.has('q')) return undefined;
  return { type: (m[1] as string).toLowerCase(), subtype: (m[2] as string).toLowerCase(), params };
}

function modelRanking(ranges: readonly MediaRange[], offered: readonly string[], utf8 = false): string[] {
  const scored = offered.flatMap((text, index) => {
    const offer = modelOffer(text);
    if (offer === undefined) return [];
    const met = (name: string, value: string): boolean => {
      const have = offer.params.get(name);
      if (name !== 'charset') return have === value;
      if (have === undefined) return utf8 && isUtf8(value);
      return have.toLowerCase() === value.toLowerCase() || (utf8 && isUtf8(have) && isUtf8(value));
    };
    const covering = ranges
      .filter((r) => [...r.params].every(([k, v]) => met(k, v)))
      .map((r) => {
        const level = r.type === '*' && r.subtype === '*' ? 0 : r.type === offer.type && r.subtype === '*' ? 2 : r.type === offer.type && r.subtype === offer.subtype ? 4 : -1;
        return { r, specificity: level < 0 ? -1 : level * 1000 + r.params.size };
      })
      .filter((c) => c.specificity >= 0)
      .sort((a, b) => b.specificity - a.specificity || b.r.q - a.r.q || a.r.position - b.r.position);
    const best = covering[0];
    return best === undefined || best.r.q === 0 ? [] : [{ text, index, q: best.r.q, specificity: best.specificity, position: best.r.position }];
  });
  scored.sort((a, b) => b.q - a.q || b.specificity - a.specificity || a.position - b.position || a.index - b.index);
  return scored.map((s) => s.text);
}

const token = fc.constantFrom('application', 'text', 'image', '*', 'APPLICATION', 'Text', 'a');
const subtoken = fc.constantFrom('json', 'xml', 'html', '*', 'XML', 'Json', 'problem+json', 'x');
const param = fc.constantFrom(
  ';q=0', ';q=1', ';q=0.5', ';q=.3', ';q=0.001', ';q=1.5', ';q=abc', ';Q=0.7', ' ; q=0.25 ', ';charset=utf-8', ';charset="UTF8"',
  ';charset=latin1', ';v=b3', ';;', ';x="a,b"', ';x="q=0, */*"', ';level', ';q=0.5;ext=1', ';q="0.5"',
  ';level=1', ';LEVEL="1"', ';level=2', ';version=2', ';Version="2"', ';version=V2', ';charset="utf-8"',
);
const entry = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(token, subtoken, fc.array(param, { maxLength: 3 })).map(([t, s, ps]) => `${t}/${s}${ps.join('')}`) },
  { weight: 1, arbitrary: fc.constantFrom('json', '*', '', ' ', '*/json', '@/x', '"', 'a/b;x="unterminated') },
);
const realisticHeader = fc.array(entry, { maxLength: 12 }).chain((entries) =>
  fc.array(fc.constantFrom(',', ', ', ' ,', ',,', ',\t'), { minLength: entries.length, maxLength: entries.length }).map((seps) =>
    entries.map((e, i) => `${i === 0 ? '' : (seps[i] as string)}${e}`).join(''),
  ),
);
const anyHeader = fc.oneof(
  realisticHeader,
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: fc.constantFrom(...'ab*/,;=q.0159 "\\\t'.split('')), minLength: 0, maxLength: 10_000 }),
);
const offeredList = fc.uniqueArray(fc.constantFrom<string>('application/json', 'application/xml', 'text/xml', 'text/html', 'application/problem+json', 'image/png'), {
  maxLength: 5,
});
// Offered lists as applications write them: parameters, any case, quoted values, malformed entries.
const libraryOfferedList = fc.uniqueArray(
  fc.constantFrom<string>(
    'application/json', 'application/xml', 'text/xml', 'text/html', 'text/html;level=1', 'Text/HTML;Level=1', 'text/html;level=2;foo=bar',
    'application/json;version=2', 'application/JSON; version="2"', 'application/json;charset=utf-8', 'application/xml;charset="UTF-8"',
    'application/json;charset=latin1', 'boom', 'text/html;level', 'text/html;q=1', 'a, b/c', '',
  ),
  { maxLength: 6 },
);

test('N-2 negotiate property: never throws; the answer is one of offered or undefined', () => {
  fc.assert(
    fc.property(anyHeader, fc.oneof(offeredList, libraryOfferedList), fc.boolean(), (header, offered, charsetUtf8) => {
      const answer = negotiate(header, offered, { charsetUtf8 });
      assert.ok(answer === undefined || offered.includes(answer));
      assert.ok(negotiateAll(header, offered, { charsetUtf8 }).every((type) => offered.includes(type)));
    }),
    { numRuns: 1000 },
  );
});

test('N-2/N-3 negotiate property: the header path, the parsed-ranges path and a reference model agree', () => {
  fc.assert(
    fc.property(realisticHeader, fc.oneof(offeredList, libraryOfferedList), fc.boolean(), (header, offered, charsetUtf8) => {
      const ranges = parseAccept(header);
      const expected = modelRanking(ranges, offered, charsetUtf8);
      assert.deepEqual(negotiateAll(header, offered, { charsetUtf8 }), expected);
      assert.deepEqual(negotiateAll(ranges, offered, { charsetUtf8 }), expected);
      assert.equal(negotiate(header, offered, { charsetUtf8 }), expected[0]);
      assert.equal(negotiate(ranges, offered, { charsetUtf8 }), expected[0]);
      assert.equal(createNegotiator(offered, { charsetUtf8, cacheSize: 0 })(header), expected[0]);
    }),
    { numRuns: 3000 },
  );
});

test('N-2 createNegotiator property: agrees with negotiate on random headers, cache hits included', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(realisticHeader, fc.string({ maxLength: 40 })), { minLength: 1, maxLength: 30 }), fc.integer({ min: 0, max: 6 }), fc.oneof(fc.constant(OFFERED), libraryOfferedList), fc.boolean(), (headers, cacheSize, offered, charsetUtf8) => {
      const choose = createNegotiator(offered, { cacheSize, charsetUtf8 });
      for (const header of [...headers, ...headers.slice().reverse(), ...headers]) {
        assert.equal(choose(header), negotiate(header, offered, { charsetUtf8 }));
      }
      assert.equal(choose(undefined), negotiate(undefined, offered, { charsetUtf8 }));
    }),
    { numRuns: 300 },
  );
});

test('N-2 negotiate: huge headers (1 MB) are answered', () => {
  const huge = `${'x/y;q=0.5, '.repeat(100_000)}application/json`;
  assert.equal(negotiate(huge, OFFERED), undefined);
  assert.equal(negotiate(`application/xml${' '.repeat(1 << 20)}`, OFFERED), undefined, 'entry cut by the cap');
  assert.equal(negotiate(`application/xml, ${'"'.repeat(1 << 20)}`, OFFERED), XML);
});
