// End-to-end over real TLS: CONTRACT N-1..N-13, T-4, E-1 for the representation endpoints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROTOCOLS } from '../helpers/https.js';
import { startService } from '../helpers/service.js';
import { parseXml } from '../helpers/xml-parse.js';

const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

// H-1: every clause holds over HTTP/1.1 and HTTP/2 alike.
for (const protocol of PROTOCOLS) {
  test(`representations over HTTPS (${protocol})`, async (t) => {
    const s = await startService(t, {}, protocol);

    await t.test('N-9 default is JSON {"param1": value} with Vary: Accept (N-5)', async () => {
      const r = await s.fetch('/api/something?param1=hello');
      assert.equal(r.status, 200);
      assert.equal(r.httpVersion, protocol === 'h2' ? '2.0' : '1.1', 'H-1: served over the protocol asked for');
      assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
      assert.deepEqual(JSON.parse(r.body), { param1: 'hello' });
      assert.equal(r.headers['vary'], 'Accept');
    });

    await t.test('N-9 absent param1 is null; XML uses xsi:nil', async () => {
      const j = await s.fetch('/api/something');
      assert.deepEqual(JSON.parse(j.body), { param1: null });
      const x = await s.fetch('/api/something.xml');
      assert.equal(x.body, '<?xml version="1.0" encoding="UTF-8"?><something xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><param1 xsi:nil="true"/></something>');
      const doc = parseXml(x.body);
      assert.equal(doc.name, 'something');
    });

    await t.test('N-2/N-3 Accept: application/xml gives XML; text/xml only when it wins', async () => {
      const x = await s.fetch('/api/something?param1=a', { headers: { accept: 'application/xml' } });
      assert.equal(x.headers['content-type'], 'application/xml; charset=utf-8');
      assert.equal(x.body, '<?xml version="1.0" encoding="UTF-8"?><something><param1>a</param1></something>');
      assert.equal(x.headers['vary'], 'Accept');
      const tx = await s.fetch('/api/something?param1=a', { headers: { accept: 'text/xml' } });
      assert.equal(tx.headers['content-type'], 'text/xml; charset=utf-8');
      assert.equal(tx.body, x.body);
      const chrome = await s.fetch('/api/something?param1=a', { headers: { accept: CHROME } });
      assert.equal(chrome.headers['content-type'], 'application/xml; charset=utf-8');
      const anyButJson = await s.fetch('/api/something', { headers: { accept: 'application/json;q=0, */*' } });
      assert.equal(anyButJson.headers['content-type'], 'application/xml; charset=utf-8');
    });

    await t.test('N-1 extension wins over return_type and Accept, and does not vary (N-5)', async () => {
      const r = await s.fetch('/api/something.json?param1=a&return_type=xml', { headers: { accept: 'application/xml' } });
      assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(r.headers['vary'], undefined);
      const x = await s.fetch('/api/something.XML?param1=a', { headers: { accept: 'application/json' } });
      assert.equal(x.headers['content-type'], 'application/xml; charset=utf-8');
      assert.equal(x.headers['vary'], undefined);
    });

    await t.test('N-1 return_type wins over Accept, case-insensitive, no Vary', async () => {
      const r = await s.fetch('/api/something?param1=a&return_type=XML', { headers: { accept: 'application/json' } });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'application/xml; charset=utf-8');
      assert.equal(r.headers['vary'], undefined);
      const j = await s.fetch('/api/something?return_type=json', { headers: { accept: 'application/xml' } });
      assert.equal(j.headers['content-type'], 'application/json; charset=utf-8');
    });

    await t.test('N-4 nothing acceptable: 406 problem listing available types, with Vary', async () => {
      const r = await s.fetch('/api/something', { headers: { accept: 'text/html' } });
      assert.equal(r.status, 406);
      assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
      const body = JSON.parse(r.body);
      assert.deepEqual(body.available, ['application/json', 'application/xml', 'text/xml']);
      assert.equal(body.type, '/problems/not-acceptable');
      assert.equal(body.status, 406);
      assert.match(String(r.headers['vary']), /Accept/);
      const junk = await s.fetch('/api/something', { headers: { accept: 'json' } });
      assert.equal(junk.status, 406);
    });

    await t.test('N-7 strong ETag per representation; If-None-Match → 304 with ETag and Vary, no body', async () => {
      const j = await s.fetch('/api/something?param1=e');
      const x = await s.fetch('/api/something?param1=e', { headers: { accept: 'application/xml' } });
      const tx = await s.fetch('/api/something?param1=e', { headers: { accept: 'text/xml' } });
      const etags = [j.headers['etag'], x.headers['etag'], tx.headers['etag']];
      for (const e of etags) assert.match(String(e), /^"[^"]+"$/);
      assert.equal(new Set(etags).size, 3);
      const hit = await s.fetch('/api/something?param1=e', { headers: { 'if-none-match': String(j.headers['etag']) } });
      assert.equal(hit.status, 304);
      assert.equal(hit.body, '');
      assert.equal(hit.headers['etag'], j.headers['etag']);
      assert.equal(hit.headers['vary'], 'Accept');
      // The JSON tag does not validate the XML representation.
      const miss = await s.fetch('/api/something?param1=e', { headers: { accept: 'application/xml', 'if-none-match': String(j.headers['etag']) } });
      assert.equal(miss.status, 200);
      const ext = await s.fetch('/api/something.json?param1=e', { headers: { 'if-none-match': `W/${String(j.headers['etag'])}` } });
      assert.equal(ext.status, 304);
      assert.equal(ext.headers['vary'], undefined);
    });

    await t.test('N-7 HEAD gives the GET headers and no body', async () => {
      const get = await s.fetch('/api/something?param1=h', { headers: { accept: 'application/xml' } });
      const head = await s.fetch('/api/something?param1=h', { method: 'HEAD', headers: { accept: 'application/xml' } });
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      for (const h of ['content-type', 'content-length', 'etag', 'vary', 'content-location', 'link']) {
        assert.equal(head.headers[h], get.headers[h], h);
      }
    });

    await t.test('N-8 OPTIONS 204 with Allow; other methods 405 with the same Allow', async () => {
      const o = await s.fetch('/api/something', { method: 'OPTIONS' });
      assert.equal(o.status, 204);
      assert.equal(o.headers['allow'], 'GET, HEAD, OPTIONS');
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const r = await s.fetch('/api/something.json', { method });
        assert.equal(r.status, 405, method);
        assert.equal(r.headers['allow'], 'GET, HEAD, OPTIONS');
        assert.equal(JSON.parse(r.body).type, '/problems/method-not-allowed');
      }
    });

    await t.test('N-8 path and query errors', async () => {
      const cases: Array<[string, number]> = [
        ['/api/something.yaml', 404],
        ['/api/nothing', 404],
        ['/api/something/extra', 404],
        ['/nowhere', 404],
        ['/api/something?return_type=yaml', 400],
        ['/api/something?return_type=', 400],
        ['/api/something?return_type=json&return_type=json', 400],
        ['/api/something?param1=a&param1=b', 400],
        ['/api/something?param1=%E0%A4%A', 400],
        ['/api/something?param1=%FF', 400],
        ['/api/something.json?return_type=nope', 400],
        ['/api/something/', 200],
        ['/api/something.json/', 200],
        ['/api/some%74hing.json', 200],
        ['/api/something.Json', 200],
      ];
      for (const [path, status] of cases) {
        const r = await s.fetch(path);
        assert.equal(r.status, status, path);
        if (status >= 400) assert.match(String(r.headers['content-type']), /^application\/problem\+(json|xml)/, path);
      }
      const bad = await s.fetch('/api/something?return_type=yaml');
      assert.deepEqual(JSON.parse(bad.body).allowed, ['json', 'xml']);
    });

    await t.test('N-10 XML is well-formed for hostile input; JSON carries it exactly', async () => {
      const nasty = '<&>"\'\u0001\u0008\uFFFE\u{1F600}]]>\r\n';
      const q = encodeURIComponent(nasty);
      const x = await s.fetch(`/api/something.xml?param1=${q}`);
      const doc = parseXml(x.body);
      const param = doc.children[0];
      assert.equal(param?.name, 'param1');
      assert.equal(param?.text, '<&>"\'\uFFFD\uFFFD\uFFFD\u{1F600}]]>\r\n');
      const j = await s.fetch(`/api/something.json?param1=${q}`);
      assert.equal(JSON.parse(j.body).param1, nasty);
    });

    await t.test('N-13 Content-Location on negotiated 200s; Link rel=alternate everywhere', async () => {
      const r = await s.fetch('/api/something?param1=a%20b&return_type=json');
      assert.equal(r.headers['content-location'], undefined);
      assert.equal(r.headers['link'], '</api/something.xml?param1=a%20b>; rel="alternate"; type="application/xml"');
      const n = await s.fetch('/api/something?param1=a%20b', { headers: { accept: 'application/xml' } });
      assert.equal(n.headers['content-location'], '/api/something.xml?param1=a%20b');
      assert.equal(n.headers['link'], '</api/something.json?param1=a%20b>; rel="alternate"; type="application/json"');
    });

    await t.test('T-4 security headers and HSTS on HTTPS', async () => {
      const r = await s.fetch('/api/something');
      assert.equal(r.headers['strict-transport-security'], 'max-age=31536000');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.equal(r.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
      const e = await s.fetch('/nowhere');
      assert.equal(e.headers['x-content-type-options'], 'nosniff');
      assert.equal(e.headers['strict-transport-security'], 'max-age=31536000');
    });

    await t.test('E-1 problems follow the request’s XML choice', async () => {
      const byExt = await s.fetch('/api/something.xml?return_type=bogus');
      assert.equal(byExt.status, 400);
      assert.equal(byExt.headers['content-type'], 'application/problem+xml; charset=utf-8');
      const doc = parseXml(byExt.body);
      assert.equal(doc.name, 'problem');
      assert.equal(doc.ns, 'urn:ietf:rfc:7807');
      const allowed = doc.children.find((c) => c.name === 'allowed');
      assert.deepEqual(allowed?.children.map((c) => [c.name, c.text]), [['i', 'json'], ['i', 'xml']]);
      const byAccept = await s.fetch('/nowhere', { headers: { accept: 'application/problem+xml' } });
      assert.equal(byAccept.headers['content-type'], 'application/problem+xml; charset=utf-8');
      assert.match(String(byAccept.headers['vary']), /Accept/);
      const json = await s.fetch('/nowhere', { headers: { accept: '*/*' } });
      assert.equal(json.headers['content-type'], 'application/problem+json; charset=utf-8');
      // E-1 amended: a client that accepts only application/json gets that label (test/contract/errors.test.ts).
      const plain = await s.fetch('/nowhere', { headers: { accept: 'application/json' } });
      assert.equal(plain.headers['content-type'], 'application/json; charset=utf-8');
      const e3 = JSON.parse(json.body);
      assert.deepEqual(Object.keys(e3).sort(), ['status', 'title', 'type']);
    });

    await t.test('N-12 GET never changes state; C-6 one JSON log line per request, without the query', async () => {
      const before = s.logs.length;
      await s.fetch('/api/something?param1=secret-looking-value');
      await new Promise((r) => setTimeout(r, 20));
      const lines = s.logs.slice(before).map((l) => JSON.parse(l));
      const entry = lines.find((l) => l.msg === 'request');
      assert.ok(entry);
      for (const key of ['time', 'id', 'method', 'path', 'status', 'durationMs']) assert.ok(key in entry, key);
      assert.equal(entry.path, '/api/something');
      assert.ok(!s.logs.join('\n').includes('secret-looking-value'));
    });
  });
}
