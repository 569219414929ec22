// E-1 (amended) in a real browser: a browser must be able to show every error to its user.
// Regression test of the security issue: a navigation's Accept chose XML, the problem was labelled
// application/problem+xml, which a navigation does not accept, and Chromium showed "This site
// can't be reached" (ERR_INVALID_RESPONSE) instead of the error. Needs Debian's `chromium`
// (.ci/run installs it) and/or `firefox-esr`; each test skips with a message when its browser is
// missing, except under CI=true when neither is installed, where they fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService } from '../helpers/service.js';
import { findChromium, launchChromium } from '../helpers/chromium.js';
import { findFirefox, launchFirefox } from '../helpers/firefox.js';

const FIREFOX = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const chromium = await findChromium();
const firefox = await findFirefox();

/** Skips (true) when the browser is missing; fails instead under CI=true when no browser at all is. */
function missing(t: import('node:test').TestContext, found: string | undefined, message: string): found is undefined {
  if (found !== undefined) return false;
  if (process.env['CI'] === 'true' && chromium === undefined && firefox === undefined) {
    assert.fail(`no browser found (install Debian’s chromium or firefox-esr): under CI=true the browser tests must run`);
  }
  t.skip(message);
  return true;
}

test('E-1 a browser navigation shows the problem document of an error (real headless Chromium)', { timeout: 600_000 }, async (t) => {
  if (missing(t, chromium, 'no Chromium found (install Debian’s `chromium`, or set CHROMIUM=/path/to/chrome)')) return;
  const s = await startService(t, { httpPort: 0 });
  const browser = await launchChromium(t, chromium);
  // [what, URL, Accept (undefined: Chromium's own navigation header), status, label, strings the page must show]
  const cases = [
    ['404 over HTTPS', `${s.url}/api/nothing`, undefined, 404, 'application/xml', ['/problems/not-found', 'Not Found', '404']],
    ['404 over plain HTTP', `${s.httpUrl}/api/nothing`, undefined, 404, 'application/xml', ['/problems/not-found', 'Not Found']],
    ['405 (GET on a password path)', `${s.url}/user/alice/password`, undefined, 405, 'application/xml', ['/problems/method-not-allowed', 'Method Not Allowed', 'Allowed: PUT, OPTIONS.']],
    ['405 over plain HTTP', `${s.httpUrl}/user/alice/resetpassword/`, undefined, 405, 'application/xml', ['/problems/method-not-allowed', 'Allowed: POST, OPTIONS.']],
    ['400 (unknown return_type)', `${s.url}/api/something?return_type=yaml`, undefined, 400, 'application/xml', ['/problems/bad-request', 'return_type must be json or xml.']],
    ['400 on the .json form (JSON)', `${s.url}/api/something.json?return_type=yaml`, undefined, 400, 'application/problem+json', ['"type":"/problems/bad-request"', '"status":400']],
    ['404 with Firefox’s navigation Accept', `${s.url}/api/nothing`, FIREFOX, 404, 'application/xml', ['/problems/not-found', 'Not Found']],
    ['406 (an Accept that accepts nothing offered)', `${s.url}/api/something`, 'image/png', 406, 'application/problem+json', ['"type":"/problems/not-acceptable"', '"available":["application/json","application/xml","text/xml"]']],
    ['404 for an API-style Accept: application/json', `${s.url}/api/nothing`, 'application/json', 404, 'application/json', ['"title":"Not Found"']],
  ] as const;
  for (const [what, url, accept, status, label, shown] of cases) {
    await t.test(`E-1 ${what}: ${new URL(url).pathname}`, async () => {
      const page = await browser.show(url, accept);
      assert.equal(page.errorText, undefined, `Chromium refused the response: ${page.errorText}; the page says ${JSON.stringify(page.text.slice(0, 300))}`);
      assert.equal(page.status, status);
      assert.equal(page.contentType, `${label}; charset=utf-8`);
      for (const expected of shown) assert.ok(page.text.includes(expected), `the page shows ${JSON.stringify(expected)}; it shows: ${JSON.stringify(page.text.slice(0, 500))}`);
    });
  }
  await t.test('E-1 control: the label an API client asks for (application/problem+xml) is still sent, and Chromium refuses to show it', async () => {
    const page = await browser.show(`${s.url}/api/nothing`, 'application/problem+xml');
    assert.equal(page.contentType, 'application/problem+xml; charset=utf-8');
    assert.equal(page.errorText, 'net::ERR_INVALID_RESPONSE', 'the failure the negotiated label avoids for navigations');
  });
});

test('E-1 a browser navigation shows the problem document of an error (real headless Firefox)', { timeout: 600_000 }, async (t) => {
  if (missing(t, firefox, 'no Firefox found (install Debian’s `firefox-esr`, or set FIREFOX=/path/to/firefox)')) return;
  const s = await startService(t, { httpPort: 0 });
  const browser = await launchFirefox(t, firefox);
  // [what, URL, the document type Firefox shows, strings the page must show]
  const cases = [
    ['404 over HTTPS', `${s.url}/api/nothing`, 'application/xml', ['/problems/not-found', 'Not Found', '404']],
    ['404 over plain HTTP', `${s.httpUrl}/api/nothing`, 'application/xml', ['/problems/not-found', 'Not Found']],
    ['405 (GET on a password path)', `${s.url}/user/alice/password`, 'application/xml', ['/problems/method-not-allowed', 'Allowed: PUT, OPTIONS.']],
    ['400 (unknown return_type)', `${s.url}/api/something?return_type=yaml`, 'application/xml', ['/problems/bad-request', 'return_type must be json or xml.']],
    ['400 on the .json form (JSON viewer)', `${s.url}/api/something.json?return_type=yaml`, undefined, ['/problems/bad-request', 'return_type must be json or xml.']],
  ] as const;
  for (const [what, url, type, shown] of cases) {
    await t.test(`E-1 ${what}: ${new URL(url).pathname}`, async () => {
      const page = await browser.show(url);
      assert.equal(page.errorText, undefined, `Firefox showed an error page: ${page.errorText}`);
      if (type !== undefined) assert.equal(page.contentType, type);
      for (const expected of shown) assert.ok(page.text.includes(expected), `the page shows ${JSON.stringify(expected)}; it shows: ${JSON.stringify(page.text.slice(0, 500))}`);
    });
  }
  await t.test('E-1 control: Firefox refuses an application/problem+xml page (what its navigations used to get)', async () => {
    const asking = await launchFirefox(t, firefox, 'application/problem+xml');
    const page = await asking.show(`${s.url}/api/nothing`);
    assert.match(String(page.errorText), /about:neterror/);
  });
});
