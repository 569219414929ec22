// End-to-end over real TLS: CONTRACT E-1 (amended 2026-11-22), the problem's label is negotiated:
// of the problem type and the plain type of the chosen format, the one the request's Accept
// accepts best; the problem type on a tie (no Accept, */*) and when Accept accepts neither.
// The Accept headers are those real clients send.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Negotiator from 'negotiator';
import { PROTOCOLS } from '../helpers/https.js';
import { startService } from '../helpers/service.js';
import { parseXml } from '../helpers/xml-parse.js';
import { HttpError, problem } from '../../lib/http/problem.js';

const CHROMIUM = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
const FIREFOX = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const FIREFOX_115 = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const SAFARI = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const LABELS = {
  json: ['application/problem+json', 'application/json'],
  xml: ['application/problem+xml', 'application/xml', 'text/xml'],
} as const;

type Case = readonly [client: string, accept: string | undefined, expected: string];

// A 404 (/api/nothing): no extension, no return_type, so Accept decides the format and the label.
const NEGOTIATED: readonly Case[] = [
  ['Chromium navigation', CHROMIUM, 'application/xml'],
  ['Firefox navigation', FIREFOX, 'application/xml'],
  ['Firefox 115 ESR navigation', FIREFOX_115, 'application/xml'],
  ['Safari navigation', SAFARI, 'application/xml'],
  ['curl, wget, fetch(), Python requests', '*/*', 'application/problem+json'],
  ['Node https, no Accept', undefined, 'application/problem+json'],
  ['empty Accept', '', 'application/problem+json'],
  ['axios', 'application/json, text/plain, */*', 'application/json'],
  ['jQuery getJSON', 'application/json, text/javascript, */*; q=0.01', 'application/json'],
  ['HTTPie', 'application/json, */*;q=0.5', 'application/json'],
  ['Java HttpURLConnection', 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2', 'application/problem+json'],
  ['an API client asking for problem+json', 'application/problem+json', 'application/problem+json'],
  ['an API client asking for problem+xml', 'application/problem+xml', 'application/problem+xml'],
  ['RFC 9457 §3 style: JSON or problem+json', 'application/problem+json, application/json;q=0.9', 'application/problem+json'],
  ['JSON first, problem+json second', 'application/json, application/problem+json', 'application/json'],
  ['plain JSON only', 'application/json', 'application/json'],
  ['plain XML only', 'application/xml', 'application/xml'],
  ['text/xml only', 'text/xml', 'text/xml'],
  ['XML, problem+xml preferred', 'application/problem+xml, application/xml;q=0.5', 'application/problem+xml'],
  ['nothing we offer (406-style)', 'text/html', 'application/problem+json'],
  ['all entries malformed', 'json', 'application/problem+json'],
];

// The format is fixed by the extension or return_type; Accept still picks the label within it.
const FIXED: ReadonlyArray<readonly [client: string, path: string, accept: string | undefined, expected: string]> = [
  ['Chromium on the .xml form', '/api/something.xml?return_type=bogus', CHROMIUM, 'application/xml'],
  ['Firefox with return_type=xml', '/api/something?return_type=xml&return_type=xml', FIREFOX, 'application/xml'],
  ['curl on the .xml form', '/api/something.xml?return_type=bogus', '*/*', 'application/problem+xml'],
  ['no Accept on the .xml form', '/api/something.xml?return_type=bogus', undefined, 'application/problem+xml'],
  ['problem+xml client on the .xml form', '/api/something.xml?return_type=bogus', 'application/problem+xml', 'application/problem+xml'],
  ['JSON-only client on the .xml form', '/api/something.xml?return_type=bogus', 'application/json', 'application/problem+xml'],
  ['Chromium on the .json form', '/api/something.json?return_type=bogus', CHROMIUM, 'application/problem+json'],
  ['axios on the .json form', '/api/something.json?return_type=bogus', 'application/json, text/plain, */*', 'application/json'],
  ['XML-only client on the .json form', '/api/something.json?return_type=bogus', 'application/xml', 'application/problem+json'],
];

for (const protocol of PROTOCOLS) test(`E-1 the problem’s label is negotiated (real clients’ Accept headers) (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);

  const check = async (client: string, path: string, accept: string | undefined, expected: string): Promise<void> => {
    const r = await s.fetch(path, accept === undefined ? {} : { headers: { accept } });
    assert.ok(r.status >= 400 && r.status < 500, `${client}: ${r.status}`);
    assert.equal(r.headers['content-type'], `${expected}; charset=utf-8`, client);
    assert.match(String(r.headers['vary']), /\bAccept\b/, `${client}: the label depends on Accept`);
    const format = expected.endsWith('json') ? 'json' : 'xml';
    if (format === 'json') {
      assert.equal(JSON.parse(r.body).status, r.status);
    } else {
      const doc = parseXml(r.body);
      assert.equal(doc.name, 'problem');
      assert.equal(doc.ns, 'urn:ietf:rfc:7807');
    }
    // Cross-check with an independent negotiator (Express's `negotiator`): the label never
    // contradicts Accept when one of the format's labels is acceptable.
    if (accept !== undefined && accept !== '') {
      const acceptable = new Negotiator({ headers: { accept } }).mediaTypes([...LABELS[format]]);
      if (acceptable.length > 0) assert.ok(acceptable.includes(expected), `${client}: ${expected} is acceptable to ${accept}`);
    }
  };

  for (const [client, accept, expected] of NEGOTIATED) {
    await t.test(`E-1 404 for ${client} (Accept: ${accept ?? 'none'}) → ${expected}`, () => check(client, '/api/nothing', accept, expected));
  }
  for (const [client, path, accept, expected] of FIXED) {
    await t.test(`E-1 400 for ${client} → ${expected}`, () => check(client, path, accept, expected));
  }
  await t.test('E-1 a browser’s 405 on a password path and a 401 are XML it accepts too', async () => {
    const get = await s.fetch('/user/alice/password', { headers: { accept: FIREFOX } });
    assert.equal(get.status, 405);
    assert.equal(get.headers['content-type'], 'application/xml; charset=utf-8');
    const put = await s.fetch('/user/alice/password', { method: 'PUT', headers: { accept: CHROMIUM, 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(put.status, 401);
    assert.equal(put.headers['content-type'], 'application/xml; charset=utf-8');
    assert.equal(parseXml(put.body).children.find((c) => c.name === 'type')?.text, '/problems/unauthorized');
  });
});

for (const protocol of PROTOCOLS) test(`E-1 / C-6 a reply that cannot be written (a resource's header value with a line break) is a 500 problem that still carries its x-request-id, the id of the error line (${protocol})`, async (t) => {
  const broken = () => {
    throw new HttpError(problem(503, 'overloaded'), { 'Retry-After': '1\r\nSet-Cookie: injected=1' });
  };
  const s = await startService(t, { resources: { broken } }, protocol);
  const r = await s.fetch('/api/broken.json');
  assert.equal(r.status, 500);
  assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.equal((JSON.parse(r.body) as { status: number }).status, 500);
  assert.equal(r.headers['set-cookie'], undefined, 'nothing was injected');
  const id = r.headers['x-request-id'];
  assert.match(String(id), /^[0-9a-z]{6}-[0-9a-z]+$/);
  const errors = s.logs.map((l) => JSON.parse(l) as { level: string; msg: string; id?: string }).filter((l) => l.msg === 'could not write the response');
  assert.deepEqual(errors.map((l) => l.id), [id]);
  // The connection serves the next request.
  assert.equal((await s.fetch('/api/something.json')).status, 200);
});
