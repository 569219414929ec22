// fast-check arbitraries for hostile HTTP/1.1 requests (the security suite, fuzzing): random and hostile
// methods, targets (percent junk, dot segments, double slashes, encoded '/', Unicode), Accept,
// Authorization (Basic, Digest, Bearer; broken base64, huge values, odd parameters), Content-Type,
// bodies (random bytes, truncated, oversize) and framings (exact, chunked, short, long, smuggling).
import fc from 'fast-check';

/**
 * - `length`/`chunked`/`none`: well framed; sent on a kept-alive connection.
 * - `short`/`long`: Content-Length smaller / larger than the body; `smuggle`: CL with TE, or two
 *   CLs; `raw`: CR/LF and NUL left in the head. These go on a connection of their own.
 */
export type Framing = 'length' | 'chunked' | 'none' | 'short' | 'long' | 'smuggle' | 'raw';

export interface HostileRequest {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
  readonly framing: Framing;
  /** Where to split a chunked body (fractions of its length). */
  readonly cuts: readonly number[];
}

export interface Known {
  /** Existing user names. */
  readonly users: readonly string[];
  /** Passwords that must never be generated (a success would change the store). */
  readonly passwords: readonly string[];
}

const b64 = (text: string | Uint8Array): string => Buffer.from(text).toString('base64');
// encodeURIComponent throws on a lone surrogate; such a string has no UTF-8 form anyway.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const percent = (s: string): string => encodeURIComponent(s.replace(LONE_SURROGATE, '\ufffd'));
/** Unicode without controls or spaces: hostile in content, not in framing. */
const visible = fc.string({ unit: 'grapheme', maxLength: 30 }).map((v) => v.replace(/[\p{Cc}\s]/gu, '_'));
const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
// Control characters and bare CR/LF get a request refused before any handler sees it; keep them
// rare so most requests reach the code behind the parser.
const junk = fc.oneof({ weight: 4, arbitrary: visible }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) });
const ascii = fc.oneof({ weight: 4, arbitrary: printable }, { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) });

const segment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('api', 'user', 'something', 'something.json', 'something.xml', 'something.XML', 'something.yaml', 'something.', 'password', 'resetpassword', 'alice', 'root', 'ghost') },
  { weight: 4, arbitrary: fc.constantFrom('..', '.', '', '%2e%2e', '%2E', '%2F', '%2f', '%00', '%', '%z', '%zz', '%c3%28', '%ed%a0%80', '%F0%9F%98%80', '%C0%AF', 'caf%C3%A9', 'é', 'Å', '😀', '\u202e', 'a%2Fb', '%252f', '~', '*', ';', 'a;b=c', '\\', '%5c', '%3A', 'al%69ce', 'ALICE', 'alice%0a', 'alice%3Aroot') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map(percent) },
  { weight: 1, arbitrary: printable },
  // Raw non-ASCII or control bytes in a target: the parser refuses them (400) before any handler.
  { weight: 1, arbitrary: fc.oneof(visible, ascii) },
);

const path = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(segment, fc.boolean()).map(([s, slash]) => `/api/${s}${slash ? '/' : ''}`) },
  { weight: 4, arbitrary: fc.tuple(segment, fc.boolean()).map(([s, slash]) => `/user/${s}/password${slash ? '/' : ''}`) },
  { weight: 4, arbitrary: fc.tuple(segment, fc.boolean()).map(([s, slash]) => `/user/${s}/resetpassword${slash ? '/' : ''}`) },
  { weight: 3, arbitrary: fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('*', '', '/', '//', 'http://localhost/api/something', 'https://evil.example/api/something', '//api//something', '/api/./something', '/api/../api/something', '/user//password', '/user/alice/password/..', '/\\api\\something', '/api/something/..%2f..%2fetc%2fpasswd', '/api/%2e%2e/%2e%2e/etc/passwd', '/user/alice/../root/password', '/user/%2e%2e/password'),
  },
  { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 9_000 }).map((n) => `/api/${'a'.repeat(n)}`) },
);

const queryValue = fc.oneof(
  fc.constantFrom('json', 'xml', 'XML', 'Json', '', 'yaml', 'x%00', '%', '%zz', '%c3%28', '%ed%a0%80', '<', '&amp;', ']]>', '%EF%BF%BF', '%01', '%1b', 'a+b', '%F0%9F%98%80'),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(percent),
  fc.string({ unit: 'binary', maxLength: 20 }).map(percent),
  printable,
);
const query = fc.oneof(
  { weight: 5, arbitrary: fc.array(fc.tuple(fc.constantFrom('param1', 'return_type', 'PARAM1', 'Return_Type', 'x', '', '%', 'param1[]'), queryValue), { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')) },
  { weight: 1, arbitrary: fc.oneof(printable, junk) },
  { weight: 1, arbitrary: fc.integer({ min: 7_900, max: 8_300 }).map((n) => `param1=${'q'.repeat(n)}`) },
);

const mediaRange = fc
  .tuple(
    fc.constantFrom('application', 'text', '*', 'APPLICATION', 'image', '', 'x'),
    fc.constantFrom('json', 'xml', '*', 'problem+json', 'problem+xml', 'XML', '', 'html'),
    fc.array(fc.tuple(fc.constantFrom('q', 'Q', 'charset', 'level', '', 'q '), fc.constantFrom('0', '1', '0.5', '.5', '1.000', '1.0001', '0.0001', 'abc', 'Infinity', '-1', 'utf-8', 'latin1', '"utf-8"', '')), { maxLength: 3 }),
  )
  .map(([t, s, params]) => [`${t}/${s}`, ...params.map(([k, v]) => `${k}=${v}`)].join(';'));
const accept = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('application/json', 'application/xml', 'text/xml', '*/*', 'json', 'application/json;q=0, */*', 'application/*;q=0.5', 'text/*', 'application/problem+xml', 'application/xml;q=1.5', '*/json', 'application/json;charset=latin1', ';;;,,,', '', ' ', 'q=1', '*/*;q=0') },
  { weight: 4, arbitrary: fc.array(mediaRange, { maxLength: 6 }).map((r) => r.join(', ')) },
  { weight: 1, arbitrary: junk },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 1_500 }).map((n) => 'a/b;q=0.1, '.repeat(n)) },
);

const digestParam = fc.tuple(
  fc.constantFrom('username', 'realm', 'nonce', 'uri', 'response', 'qop', 'nc', 'cnonce', 'algorithm', 'userhash', 'opaque', 'username*', 'x', ''),
  fc.oneof(
    fc.constantFrom('alice', 'root', 'httpskit', 'auth', 'auth-int', 'SHA-256', 'MD5', 'SHA-512-256', 'true', 'false', '00000001', 'ffffffff', '/user/alice/password', "UTF-8''%C3%A9", '0'.repeat(64), 'x'.repeat(5000)),
    ascii,
  ),
  fc.boolean(),
);

function basicFor(known: Known): fc.Arbitrary<string> {
  const name = fc.oneof(fc.constantFrom(...known.users, 'ghost', '', 'ALICE', 'alice\u0000'), fc.string({ unit: 'grapheme', maxLength: 12 }));
  const password = fc.string({ unit: 'grapheme', maxLength: 30 }).filter((p) => !known.passwords.includes(p));
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(name, password).map(([n, p]) => `Basic ${b64(`${n}:${p}`)}`) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((bytes) => `Basic ${b64(bytes)}`) },
    { weight: 1, arbitrary: fc.constantFrom('Basic', 'Basic ', 'basic YWxpY2U6', 'Basic YWxpY2U6cGFzcw', 'Basic ====', 'Basic YWxpY2U6cGFzcw==extra', 'Basic  YWxpY2U6cGFzcw==', 'BASIC YWxpY2U6cGFzcw==', 'Basic YWxp Y2U6cGFzcw==', 'Basic *', 'Basic YWxpY2U=') },
    { weight: 1, arbitrary: junk.map((j) => `Basic ${j}`) },
    { weight: 1, arbitrary: fc.integer({ min: 5_000, max: 15_000 }).map((n) => `Basic ${'QUFB'.repeat(Math.floor(n / 4))}`) },
  );
}

function authorization(known: Known): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: basicFor(known) },
    { weight: 3, arbitrary: fc.array(digestParam, { maxLength: 12 }).map((params) => `Digest ${params.map(([k, v, quoted]) => `${k}=${quoted ? `"${v}"` : v}`).join(', ')}`) },
    { weight: 2, arbitrary: fc.oneof(fc.base64String({ maxLength: 60 }), junk, fc.constantFrom('', '=', 'a'.repeat(43), 'x'.repeat(6000))).map((t) => `Bearer ${t}`) },
    { weight: 1, arbitrary: fc.oneof(junk, fc.constantFrom('Negotiate abc', 'Digest', 'Bearer', 'NTLM TlRMTVNTUAAB', ' ', '\t')) },
  );
}

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('text/plain', 'text/plain; charset=utf-8', 'text/plain;charset=UTF-8', 'text/plain; charset="utf-8"', 'text/plain; charset=latin1', 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ';', 'text/', '', 'text/plain;', 'text/plain; charset', 'application/json;;', 'TEXT/PLAIN') },
  { weight: 1, arbitrary: visible },
  { weight: 1, arbitrary: junk },
);

function body(known: Known): fc.Arbitrary<Uint8Array> {
  const text = (s: string): Uint8Array => Buffer.from(s, 'utf8');
  const jsonValue = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.integer(), fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(new Uint8Array()) },
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }).filter((p) => !known.passwords.includes(p)).map(text) },
    {
      weight: 3,
      arbitrary: fc
        .record({ oldpasswd: jsonValue, newpasswd: jsonValue, extra: fc.option(jsonValue) })
        .filter((r) => !known.passwords.includes(String(r.oldpasswd)))
        .map((r) => text(JSON.stringify(r))),
    },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"oldpasswd":', '[]', 'null', '"x"', '{"oldpasswd":"a","oldpasswd":"b"}', '\ufeff{}', '{"__proto__":{"x":1}}', '{"oldpasswd":"\\ud800","newpasswd":"x"}').map(text) },
    { weight: 1, arbitrary: fc.integer({ min: 4_000, max: 6_000 }).map((n) => new Uint8Array(n).fill(0x61)) },
    { weight: 1, arbitrary: fc.constantFrom(Uint8Array.of(0xff, 0xfe), Uint8Array.of(0xc3, 0x28), Uint8Array.of(0xed, 0xa0, 0x80), Uint8Array.of(0xf8, 0x88, 0x80, 0x80, 0x80), Uint8Array.of(0x00)) },
  );
}

const headerName = fc.oneof(fc.constantFrom('X-Forwarded-For', 'X-Forwarded-Proto', 'If-None-Match', 'Expect', 'Connection', 'Upgrade', 'Host', 'Content-Encoding', 'Range', 'Cookie', 'Accept-Charset', 'TE', 'Trailer', 'Accept', 'Authorization', 'Content-Type'), fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/));
const headerValue = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('', '*', '"x"', 'W/"x"', '100-continue', 'foo', 'close', 'keep-alive', 'upgrade', 'websocket', 'h2c', 'https', 'http', 'HTTPS', '203.0.113.9', '203.0.113.9, 127.0.0.1', '::1', 'unknown', 'bytes=0-1', 'gzip', 'trailers') },
  { weight: 2, arbitrary: fc.oneof(fc.ipV4(), fc.ipV6()) },
  { weight: 2, arbitrary: visible },
  { weight: 1, arbitrary: junk },
);

/** `arbitrary`'s value with probability `p`, else undefined. */
function maybe<T>(arbitrary: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: Math.round(p * 100), arbitrary }, { weight: Math.round((1 - p) * 100), arbitrary: fc.constant(undefined) });
}

/** A kind of request; the numbers are how likely each part is present. */
interface Shape {
  readonly method: fc.Arbitrary<string>;
  readonly path: fc.Arbitrary<string>;
  readonly query: number;
  readonly accept: number;
  readonly authorization: number;
  readonly contentTypes: number;
  readonly contentType: fc.Arbitrary<string>;
  readonly body: fc.Arbitrary<Uint8Array>;
}

function headers(known: Known, shape: Shape): fc.Arbitrary<Array<[string, string]>> {
  return fc
    .record({
      host: fc.oneof({ weight: 12, arbitrary: fc.constant<string | undefined>('localhost') }, { weight: 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: visible }),
      accept: maybe(accept, shape.accept),
      authorization: maybe(authorization(known), shape.authorization),
      contentType: maybe(shape.contentType, shape.contentTypes),
      forwardedFor: maybe(fc.oneof({ weight: 6, arbitrary: fc.ipV4() }, { weight: 2, arbitrary: fc.ipV6() }, { weight: 1, arbitrary: visible }), 0.75),
      extra: fc.oneof(
        { weight: 9, arbitrary: fc.constant([]) },
        { weight: 3, arbitrary: fc.array(fc.tuple(headerName, headerValue), { maxLength: 4 }) },
        // Many short fields: under the parser's 16 KiB, over what an HTTP/2 header list may count.
        { weight: 1, arbitrary: fc.integer({ min: 100, max: 1_200 }).map((n) => Array.from({ length: n }, (_, i): [string, string] => [`x-${i % 7}`, 'v'])) },
      ),
      order: fc.boolean(),
    })
    .map((h) => {
      const list: Array<[string, string]> = [];
      if (h.host !== undefined) list.push(['Host', h.host]);
      if (h.accept !== undefined) list.push(['Accept', h.accept]);
      if (h.authorization !== undefined) list.push(['Authorization', h.authorization]);
      if (h.contentType !== undefined) list.push(['Content-Type', h.contentType]);
      if (h.forwardedFor !== undefined) list.push(['X-Forwarded-For', h.forwardedFor]);
      return h.order ? [...list, ...h.extra] : [...h.extra, ...list];
    });
}

const anyMethod = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom('GET', 'PUT', 'POST') },
  { weight: 3, arbitrary: fc.constantFrom('HEAD', 'OPTIONS', 'DELETE', 'PATCH', 'TRACE') },
  { weight: 1, arbitrary: fc.constantFrom('get', 'Put', 'CONNECT', 'PROPFIND', 'FOO', 'G ET', '', 'PUT\u0000', 'SEARCH', 'PRI') },
);
const usually = (likely: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof({ weight: 6, arbitrary: likely }, { weight: 1, arbitrary: anyMethod });

function shapes(known: Known): Shape[] {
  const anyBody = body(known);
  return [
    // Representations: GET/HEAD on /api/…, Accept-heavy, bodies rare.
    {
      method: usually(fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'OPTIONS')),
      path: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('/api/something', '/api/something', '/api/something.json', '/api/something.xml', '/api/something/', '/api/something.XML', '/api/something.Json/') },
        { weight: 2, arbitrary: fc.tuple(segment, fc.boolean()).map(([s, slash]) => `/api/${s}${slash ? '/' : ''}`) },
      ),
      query: 0.6,
      accept: 0.8,
      authorization: 0.1,
      contentTypes: 0.1,
      contentType: contentType,
      body: fc.oneof({ weight: 8, arbitrary: fc.constant(new Uint8Array()) }, { weight: 1, arbitrary: anyBody }),
    },
    // PUT /user/{name}/password: credentials of every kind, text/plain mostly.
    {
      method: usually(fc.constant('PUT')),
      path: fc.tuple(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known.users, 'ghost') }, { weight: 2, arbitrary: segment }), fc.boolean()).map(([s, slash]) => `/user/${s}/password${slash ? '/' : ''}`),
      query: 0.1,
      accept: 0.3,
      authorization: 0.9,
      contentTypes: 0.85,
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('text/plain', 'text/plain; charset=utf-8') }, { weight: 1, arbitrary: contentType }),
      body: anyBody,
    },
    // POST /user/{name}/resetpassword/: JSON forms mostly.
    {
      method: usually(fc.constant('POST')),
      path: fc.tuple(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known.users, 'ghost') }, { weight: 2, arbitrary: segment }), fc.boolean()).map(([s, slash]) => `/user/${s}/resetpassword${slash ? '/' : ''}`),
      query: 0.1,
      accept: 0.3,
      authorization: 0.2,
      contentTypes: 0.85,
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') }, { weight: 1, arbitrary: contentType }),
      body: anyBody,
    },
    // Anything at all.
    { method: anyMethod, path, query: 0.4, accept: 0.5, authorization: 0.5, contentTypes: 0.5, contentType, body: anyBody },
  ];
}

export function hostileRequest(known: Known): fc.Arbitrary<HostileRequest> {
  return fc.oneof(
    ...shapes(known).map((shape) =>
      fc.record({
        method: shape.method,
        target: fc.tuple(shape.path, maybe(query, shape.query)).map(([p, q]) => (q === undefined ? p : `${p}?${q}`)),
        version: fc.oneof({ weight: 30, arbitrary: fc.constant('HTTP/1.1') }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', '', 'http/1.1') }),
        headers: headers(known, shape),
        body: shape.body,
        framing: fc.oneof(
          { weight: 16, arbitrary: fc.constant<Framing>('length') },
          { weight: 2, arbitrary: fc.constantFrom<Framing>('chunked', 'none') },
          { weight: 1, arbitrary: fc.constantFrom<Framing>('short', 'long', 'smuggle', 'raw') },
        ),
        cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
      }),
    ),
  );
}

/** True when the request goes on a connection of its own (its framing or version is not sound). */
export function needsOwnConnection(r: HostileRequest): boolean {
  return r.framing === 'short' || r.framing === 'long' || r.framing === 'smuggle' || r.framing === 'raw' || r.version !== 'HTTP/1.1';
}

/** The bytes on the wire. Well-framed requests lose any CR/LF so they cannot desynchronise a kept-alive connection. */
export function encodeRequest(r: HostileRequest): Buffer {
  const keep = !needsOwnConnection(r);
  const clean = (s: string): string => (keep ? s.replace(/[\r\n]/g, ' ') : s);
  const lines: string[] = [`${clean(r.method)} ${clean(r.target)}${r.version === '' ? '' : ` ${r.version}`}`];
  for (const [name, value] of r.headers) lines.push(`${clean(name)}: ${clean(value)}`);
  let body: Buffer = Buffer.from(r.body);
  switch (r.framing) {
    case 'length':
      if (body.length > 0 || r.method === 'PUT' || r.method === 'POST') lines.push(`Content-Length: ${body.length}`);
      break;
    case 'none':
      body = Buffer.alloc(0);
      break;
    case 'chunked': {
      lines.push('Transfer-Encoding: chunked');
      const points = [...new Set(r.cuts.map((c) => Math.floor(c * body.length)))].sort((a, b) => a - b);
      const parts: Buffer[] = [];
      let at = 0;
      for (const p of [...points, body.length]) {
        if (p <= at) continue;
        parts.push(Buffer.from(`${(p - at).toString(16)}\r\n`), body.subarray(at, p), Buffer.from('\r\n'));
        at = p;
      }
      parts.push(Buffer.from('0\r\n\r\n'));
      body = Buffer.concat(parts);
      break;
    }
    case 'short':
      lines.push(`Content-Length: ${Math.max(0, body.length - 1 - Math.floor((r.cuts[0] ?? 0) * body.length))}`);
      break;
    case 'long':
      lines.push(`Content-Length: ${body.length + 1 + Math.floor((r.cuts[0] ?? 0) * 100)}`);
      break;
    case 'smuggle':
      if ((r.cuts[0] ?? 0) < 0.5) lines.push(`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked');
      else lines.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`);
      break;
    case 'raw':
      lines.push(`X-Injected: a\r\nContent-Length: ${body.length}\nX-Bare: b\u0000c`);
      break;
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), body]);
}

/** A readable rendering of the request for failure reports (the shrunk counterexample). */
export function describeRequest(r: HostileRequest): string {
  const bytes = encodeRequest(r);
  const shown = bytes.length > 2_000 ? `${bytes.subarray(0, 2_000).toString('latin1')}… (${bytes.length} bytes)` : bytes.toString('latin1');
  return `framing=${r.framing}\n${JSON.stringify(shown)}`;
}
