// E-1 (amended) in a real browser: a browser's navigation must be able to show every error.
// Regression test of the security issue: a navigation's Accept chose XML, the problem was labelled
// application/problem+xml, which the browser does not accept, and Chromium showed "This site can't
// be reached" (ERR_INVALID_RESPONSE) instead of the error. Needs Debian's `chromium`
// (.ci/run installs it); skipped with a message without it, except under CI=true, where it fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService } from '../helpers/service.js';
import { dumpDom, findChromium, visibleText } from '../helpers/chromium.js';

const chromium = await findChromium();
const missing = 'no Chromium found (install Debian’s `chromium`, or set CHROMIUM=/path/to/chrome)';

test('E-1 a browser navigation shows the problem document of an error (real headless Chromium)', { timeout: 600_000 }, async (t) => {
  if (chromium === undefined) {
    if (process.env['CI'] === 'true') assert.fail(`${missing}: under CI=true the browser test must run`);
    t.skip(missing);
    return;
  }
  const s = await startService(t, { httpPort: 0 });
  const cases = [
    // [what, URL, strings the page must show]
    ['404 over HTTPS', `${s.url}/api/nothing`, ['/problems/not-found', 'Not Found', '404']],
    ['404 over plain HTTP', `${s.httpUrl}/api/nothing`, ['/problems/not-found', 'Not Found', '404']],
    ['405 (GET on a password path)', `${s.url}/user/alice/password`, ['/problems/method-not-allowed', 'Method Not Allowed', '405', 'Allowed: PUT, OPTIONS.']],
    ['400 (unknown return_type)', `${s.url}/api/something?return_type=yaml`, ['/problems/bad-request', 'return_type must be json or xml.', 'json', 'xml']],
    ['400 as JSON (the .json form)', `${s.url}/api/something.json?return_type=yaml`, ['"type":"/problems/bad-request"', '"status":400']],
    ['405 over plain HTTP (GET on a password path)', `${s.httpUrl}/user/alice/resetpassword/`, ['/problems/method-not-allowed', '405']],
  ] as const;
  for (const [what, url, shown] of cases) {
    await t.test(`E-1 ${what}: ${new URL(url).pathname}`, async () => {
      const text = visibleText(await dumpDom(t, chromium, url));
      for (const expected of shown) assert.ok(text.includes(expected), `the page shows ${JSON.stringify(expected)}; it shows: ${JSON.stringify(text.slice(0, 500))}`);
    });
  }
});
