// Operations: CONTRACT H-3 (health, readiness), H-4 (OpenAPI), H-5 (metrics) and C-6's log levels,
// over real sockets, with real parsers: promtool for the exposition format, an OpenAPI 3.1
// validator for the document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { METRIC_NAMES } from '../../lib/ops/metrics.js';
import { exited, run, serve } from '../helpers/cli.js';
import { PROTOCOLS, request } from '../helpers/https.js';
import { createChecker } from '../helpers/openapi-check.js';
import { createService } from '../../lib/index.js';
import { basic, startService, testCertificate, type Started } from '../helpers/service.js';
import { parseXml } from '../helpers/xml-parse.js';
import { tempDir } from '../helpers/tmp.js';

const requestLines = (logs: readonly string[]) => logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
/** Log lines are written when a response finishes, a moment after the client has it. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
/** The listeners a test reads from: HTTPS over `protocol`, and the plain one (HTTP/1.1 whatever the loop's protocol: checked in the h1 run only). */
const listeners = (s: Started) => [['https', s.fetch], ...(s.protocol === 'h1' ? [['http', s.fetchPlain] as const] : [])] as const;

// H-1: health, readiness, metrics and the OpenAPI document are served alike over HTTP/1.1 and HTTP/2.
for (const protocol of PROTOCOLS) test(`H-3 /healthz and /readyz answer 200 on HTTPS and plain HTTP, negotiated like any resource (${protocol})`, async (t) => {
  const s = await startService(t, { httpPort: 0 }, protocol);
  for (const [name, fetch] of listeners(s)) {
    for (const path of ['/healthz', '/readyz']) {
      const json = await fetch(path);
      assert.equal(json.status, 200, `${name} ${path}`);
      assert.equal(json.headers['content-type'], 'application/json; charset=utf-8');
      assert.deepEqual(JSON.parse(json.body), { status: 'ok' });
      assert.equal(json.headers['vary'], 'Accept', 'N-5: chosen by default');
      assert.equal(json.headers['strict-transport-security'] !== undefined, name === 'https', 'T-4');

      const xml = await fetch(`${path}.xml`);
      assert.equal(xml.headers['content-type'], 'application/xml; charset=utf-8');
      assert.equal(xml.headers['vary'], undefined, 'N-5: the extension decided');
      const root = parseXml(xml.body);
      assert.equal(root.name, path.slice(1));
      assert.equal(root.children[0]?.text, 'ok');

      assert.equal((await fetch(`${path}?return_type=XML`)).headers['content-type'], 'application/xml; charset=utf-8');
      assert.equal((await fetch(path, { headers: { accept: 'text/xml' } })).headers['content-type'], 'text/xml; charset=utf-8');
      const refused = await fetch(path, { headers: { accept: 'image/png' } });
      assert.equal(refused.status, 406);
      assert.deepEqual(JSON.parse(refused.body).available, ['application/json', 'application/xml', 'text/xml']);
      assert.equal((await fetch(path, { headers: { 'if-none-match': json.headers['etag'] as string } })).status, 304, 'N-7');
      const head = await fetch(path, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(head.headers['etag'], json.headers['etag']);
      const options = await fetch(path, { method: 'OPTIONS' });
      assert.equal(options.status, 204);
      assert.equal(options.headers['allow'], 'GET, HEAD, OPTIONS');
      const post = await fetch(path, { method: 'POST' });
      assert.equal(post.status, 405);
      assert.equal(post.headers['allow'], 'GET, HEAD, OPTIONS');
      assert.equal((await fetch(`${path}.yaml`)).status, 404, 'N-8: unknown extension');
      assert.equal((await fetch(`${path}?return_type=yaml`)).status, 400, 'N-8: unknown return_type');
    }
  }
  assert.equal((await s.fetch('/healthzx')).status, 404, 'only the resource and its extensions');
  await settle();
  const logged = requestLines(s.logs).map((l) => `${l.method} ${l.path} ${l.status}`);
  assert.ok(!logged.some((l) => / \/(healthz|readyz)[^ ]* [23]\d\d$/.test(l)), `H-3: no line for a success: ${logged.join('; ')}`);
  assert.ok(logged.includes('GET /healthz.yaml 404'), 'H-3: a failure is logged');
  assert.ok(logged.includes('POST /readyz 405'));
});

for (const protocol of PROTOCOLS) test(`H-3 /readyz answers 503 overloaded with Retry-After while the store cannot be read, and 200 again after (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const storeDir = join(dir, 'store');
  await mkdir(storeDir);
  const s = await startService(t, { store: join(storeDir, 'users.json'), httpPort: 0 }, protocol);
  assert.equal((await s.fetch('/readyz')).status, 200);
  // The store's directory is replaced by a file: nothing in it can be read or locked.
  await rename(storeDir, join(dir, 'away'));
  await writeFile(storeDir, 'not a directory');
  // L-2: readiness keeps a check's answer about a second (a flood of probes asks the store once).
  await untilReady(s, 503);
  for (const [, fetch] of listeners(s)) {
    const down = await fetch('/readyz');
    assert.equal(down.status, 503);
    assert.equal(down.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(JSON.parse(down.body).type, '/problems/overloaded');
    assert.match(String(down.headers['retry-after']), /^\d+$/);
    assert.equal(down.headers['vary'], 'Accept');
    const xml = await fetch('/readyz.xml');
    assert.equal(xml.status, 503);
    assert.equal(xml.headers['content-type'], 'application/problem+xml; charset=utf-8', 'E-1: the extension chose XML');
    assert.equal((await fetch('/healthz')).status, 200, 'liveness does not depend on the store');
  }
  await settle();
  const lines = s.logs.map((l) => JSON.parse(l));
  assert.ok(requestLines(s.logs).some((l) => l.path === '/readyz' && l.status === 503), 'H-3: the failure is logged');
  assert.ok(lines.some((l) => l.level === 'warn' && /not ready/.test(l.msg)), 'with its cause');
  assert.ok(!JSON.stringify(lines).includes('"/healthz"'), 'the liveness successes are not');

  await rm(storeDir);
  await rename(join(dir, 'away'), storeDir);
  await untilReady(s, 200);
});

/** Waits (past readiness's short cache) until /readyz answers `status`; fails after 5 s. */
async function untilReady(s: Started, status: number): Promise<void> {
  const deadline = performance.now() + 5_000;
  while ((await s.fetch('/readyz')).status !== status) {
    if (performance.now() > deadline) assert.fail(`/readyz never answered ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

for (const protocol of PROTOCOLS) test(`H-3 / L-2 /readyz never waits behind writes: it answers 200 at once while another process holds the store's lock (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  assert.equal((await s.fetch('/readyz')).status, 200);
  // A lock without a readable owner is another process's until it is old (U-1): nothing can be written.
  await writeFile(`${s.store}.lock`, 'held by another process');
  await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the cached answer: a new check
  const started = performance.now();
  const ready = await s.fetch('/readyz');
  assert.equal(ready.status, 200, ready.body);
  assert.ok(performance.now() - started < 1_000, `answered in ${performance.now() - started} ms`);
  await rm(`${s.store}.lock`);
});

/** `promtool check metrics` on the text; skipped without promtool, except under CI. */
async function promtool(t: { skip: (message: string) => void }, text: string): Promise<void> {
  const result = await new Promise<{ code: number | null; output: string } | undefined>((resolve) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', () => resolve(undefined));
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
  if (result === undefined) {
    if (process.env['CI'] === 'true') assert.fail('promtool is not installed (Debian package "prometheus"): .ci/run installs it');
    t.skip('promtool is not installed (apt-get install prometheus): the exposition format was not checked by a real parser');
    return;
  }
  assert.equal(result.code, 0, `promtool check metrics: ${result.output}`);
  assert.equal(result.output.trim(), '', 'no lint findings');
}

/** The value of one sample line, or 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

for (const protocol of PROTOCOLS) test(`H-5 --metrics-port serves the text exposition format: promtool accepts it, counters count, no user name ever (${protocol})`, async (t) => {
  const s = await startService(t, { metricsPort: 0 }, protocol);
  const line = s.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'listening');
  assert.match(line.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  const scrape = async () => {
    const r = await request(line.metricsUrl);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    return r.body;
  };
  await s.service.users.add('alice-in-metrics', 'lemon-initial-passphrase-1');
  const before = await scrape();
  await promtool(t, before);
  for (const name of METRIC_NAMES) assert.ok(before.includes(`# TYPE ${name} `), name);

  await s.fetch('/api/something?param1=alice-in-metrics');
  const wrong = { authorization: basic('alice-in-metrics', 'wrong-passphrase-000'), 'content-type': 'text/plain' };
  // P-8: five failures are free, the sixth within the window is refused with 429.
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await s.fetch('/user/alice-in-metrics/password', { method: 'PUT', headers: wrong, body: 'x' })).status);
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  await s.fetch('/user/bob-never-shown/password', { method: 'GET' });
  await s.fetch('/no/such/path/carol-never-shown');
  await settle();
  const after = await scrape();
  await promtool(t, after);

  const route = (r: string, method: string, status: number) => `httpskit_http_requests_total{route="${r}",method="${method}",status="${status}"}`;
  assert.equal(sample(after, route('/user/{name}/password', 'PUT', 401)) - sample(before, route('/user/{name}/password', 'PUT', 401)), 5);
  assert.equal(sample(after, route('/user/{name}/password', 'PUT', 429)), 1);
  assert.equal(sample(after, route('/user/{name}/password', 'GET', 405)), 1);
  // one label per route of the table: each resource its own (bounded by the configuration).
  assert.equal(sample(after, route('/api/something', 'GET', 200)), 1);
  assert.equal(sample(after, route('unmatched', 'GET', 404)), 1);
  // A request the HTTP parser refuses (here a header block over the limit) is answered, so counted:
  // no route, no method it could be sure of, and no duration.
  assert.equal(sample(before, route('unmatched', 'other', 431)), 0);
  const big = await request(`${s.url}/api/something`, { ca: s.ca, protocol, headers: { 'x-big': 'b'.repeat(17_000) }, unchecked: true });
  assert.equal(big.status, 431);
  await settle();
  const refusedScrape = await scrape();
  assert.equal(sample(refusedScrape, route('unmatched', 'other', 431)), 1);
  assert.equal(sample(refusedScrape, 'httpskit_http_request_duration_seconds_count{route="unmatched"}'), sample(after, 'httpskit_http_request_duration_seconds_count{route="unmatched"}'));
  assert.equal(sample(after, 'httpskit_http_request_duration_seconds_count{route="/user/{name}/password"}'), 7);
  assert.equal(sample(after, 'httpskit_throttle_refusals_total{kind="locked"}'), 1);
  assert.equal(sample(after, 'httpskit_password_hashes_running'), 0);
  assert.equal(sample(after, 'httpskit_password_hashes_queued'), 0);
  assert.ok(sample(after, 'httpskit_store_operation_duration_seconds_count{operation="update"}') >= 1, 'the user add was timed');
  // Issue 20: a login's read comes with its reservation, one store operation.
  assert.ok(sample(after, 'httpskit_store_operation_duration_seconds_count{operation="reserveAndGet"}') >= 5, 'each verification reads the store');
  for (const name of ['alice', 'bob', 'carol', 'never-shown']) assert.ok(!after.includes(name), `H-5: no user name (${name}) in a scrape`);

  const other = new URL(line.metricsUrl);
  other.pathname = '/';
  assert.equal((await request(other.href)).status, 404);
  const post = await request(line.metricsUrl, { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal(post.headers['allow'], 'GET, HEAD');
  const head = await request(line.metricsUrl, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal((await s.fetch('/metrics')).status, 404, 'not on the HTTPS listener');
});

test('H-5 metrics are off by default', async (t) => {
  const s = await startService(t);
  const line = s.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'listening');
  assert.equal(line.metricsUrl, undefined);
});

for (const protocol of PROTOCOLS) test(`H-4 /openapi.json is a valid OpenAPI 3.1 document describing every route and problem type (${protocol})`, async (t) => {
  const s = await startService(t, {}, protocol);
  const r = await s.fetch('/openapi.json');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal((await s.fetch('/openapi.json', { headers: { 'if-none-match': r.headers['etag'] as string } })).status, 304);
  const document = JSON.parse(r.body);
  const validator = new Validator();
  const result = await validator.validate(document);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, '3.1');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(document.info.version, pkg.version, 'V-1: the interface is versioned with the package');

  const expected: Record<string, readonly string[]> = {
    '/api/something': ['get', 'head', 'options'],
    '/api/something.json': ['get', 'head', 'options'],
    '/api/something.xml': ['get', 'head', 'options'],
    '/healthz': ['get', 'head', 'options'],
    '/readyz': ['get', 'head', 'options'],
    '/openapi.json': ['get', 'head', 'options'],
    '/user/{name}/password': ['put', 'options'],
    '/user/{name}/resetpassword/': ['post', 'options'],
    '/user/{name}': ['get', 'head', 'patch', 'delete', 'options'],
    '/user/': ['get', 'head', 'post', 'options'],
  };
  // what this service does not serve is not described: P-12 without a channel, the scrape
  // listener when off, and no catch-all for resources that are not registered.
  for (const path of ['/user/{name}/resettoken', '/metrics', '/api/{resource}']) assert.equal(document.paths[path], undefined, path);
  for (const [path, methods] of Object.entries(expected)) {
    assert.ok(document.paths[path] !== undefined, path);
    for (const method of methods) assert.ok(document.paths[path][method] !== undefined, `${method} ${path}`);
  }
  const slugs = ['not-found', 'method-not-allowed', 'not-acceptable', 'bad-request', 'https-required', 'unauthorized', 'forbidden', 'invalid-credentials',
    'unsupported-media-type', 'payload-too-large', 'password-policy', 'too-many-requests', 'overloaded', 'internal', 'uri-too-long', 'conflict', 'precondition-failed',
    'unprocessable', 'precondition-required'];
  const documented: string[] = document.components.schemas.Problem.properties.type.enum;
  for (const slug of slugs) assert.ok(documented.includes(`/problems/${slug}`), `E-2: ${slug}`);
  for (const slug of slugs) assert.ok(document.info.description.includes(`/problems/${slug}`), slug);
  const served = await s.fetch('/openapi.json', { method: 'HEAD' });
  assert.equal(served.headers['etag'], r.headers['etag']);
});

for (const protocol of PROTOCOLS) test(`H-4 every documented path answers OPTIONS with exactly the documented methods (${protocol})`, async (t) => {
  const s = await startService(t, { onResetToken: () => {}, resources: { books: { get: () => [], post: () => ({ id: 1, value: {} }), item: { get: () => undefined, put: () => ({}) } } } }, protocol);
  const document = s.service.openapi() as { paths: Record<string, Record<string, unknown>> };
  for (const [path, item] of Object.entries(document.paths)) {
    if (item['servers'] !== undefined) continue; // /metrics: the scrape listener's (H-5 test)
    const concrete = path.replace('{name}', 'alice').replace('{id}', '42');
    const r = await s.fetch(concrete, { method: 'OPTIONS' });
    assert.equal(r.status, 204, path);
    const documented = Object.keys(item).filter((k) => k !== 'parameters').map((m) => m.toUpperCase()).sort();
    assert.deepEqual(String(r.headers['allow']).split(', ').sort(), documented, path);
  }
});

test('H-4 the response check of the test helpers refuses what the document does not describe', () => {
  const check = createChecker(createService({ log: false, onResetToken: () => {}, resources: { other: () => [1, 2] } }).openapi());
  const json = { 'content-type': 'application/json; charset=utf-8' };
  const problemJson = { 'content-type': 'application/problem+json; charset=utf-8' };
  const problem = (status: number, slug: string) => JSON.stringify({ type: `/problems/${slug}`, title: 'x', status });
  const url = (path: string) => new URL(`https://127.0.0.1:1${path}`);
  const good: ReadonlyArray<readonly [string, string, number, Record<string, string>, string]> = [
    ['GET', '/api/something', 200, json, '{"param1":null}'],
    ['GET', '/api/something.xml', 200, { 'content-type': 'application/xml; charset=utf-8' }, '<something/>'],
    ['GET', '/api/other.json', 200, json, '[1,2]'],
    ['HEAD', '/healthz', 200, json, ''],
    ['GET', '/healthz', 304, {}, ''],
    ['GET', '/readyz', 503, problemJson, problem(503, 'overloaded')],
    ['PUT', '/user/alice/password', 204, {}, ''],
    ['POST', '/user/alice/resetpassword', 204, {}, ''],
    ['PUT', '/user/alice/password', 422, problemJson, JSON.stringify({ type: '/problems/password-policy', title: 't', status: 422, violations: ['too-short'] })],
    ['DELETE', '/api/something', 405, problemJson, problem(405, 'method-not-allowed')],
    ['GET', '/nowhere', 404, problemJson, problem(404, 'not-found')],
  ];
  for (const [method, path, status, headers, body] of good) {
    assert.doesNotThrow(() => check.check(method, url(path), { status, headers, body }), `${method} ${path} ${status}`);
  }
  const bad: ReadonlyArray<readonly [string, string, number, Record<string, string>, string, RegExp]> = [
    ['GET', '/api/something', 500, problemJson, problem(500, 'internal'), /status not documented/],
    ['GET', '/api/something', 200, { 'content-type': 'text/html' }, '<p>', /content type text\/html not documented/],
    ['GET', '/api/something', 200, json, '{"param1":1}', /does not match the documented schema/],
    ['GET', '/api/something', 200, json, '{"param1":null,"extra":true}', /does not match/],
    ['GET', '/healthz', 200, json, '', /not JSON/],
    ['GET', '/healthz', 200, {}, '', /documented with a body/],
    ['PUT', '/user/alice/password', 204, json, '{}', /documented without a body/],
    ['GET', '/nowhere', 200, json, '{}', /not documented/],
    ['GET', '/nowhere', 404, { 'content-type': 'text/plain' }, 'no', /problem document/],
    ['GET', '/readyz', 503, problemJson, '{"type":"/problems/made-up","title":"x","status":503}', /does not match/],
    ['PUT', '/user/alice/password', 422, problemJson, JSON.stringify({ type: '/problems/password-policy', title: 't', status: 422, violations: ['too-simple'] }), /does not match/],
  ];
  for (const [method, path, status, headers, body, message] of bad) {
    assert.throws(() => check.check(method, url(path), { status, headers, body }), message, `${method} ${path} ${status}`);
  }
});

for (const protocol of PROTOCOLS) test(`C-6 --log-level: info logs every request, warn 4xx and 5xx, error and off none of these; the startup line always (${protocol})`, async (t) => {
  const dir = await tempDir(t);
  const certDir = join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  const levels: ReadonlyArray<readonly [args: string[], env: NodeJS.ProcessEnv, expected: string[]]> = [
    [[], {}, ['/api/something 200', '/api/nothing 404']],
    [['--log-level', 'warn'], {}, ['/api/nothing 404']],
    [[], { HTTPSKIT_LOG_LEVEL: 'warn' }, ['/api/nothing 404']],
    [['--log-level', 'error'], {}, []],
    [['--log-level', 'off'], {}, []],
    [['--log-level', 'silent'], {}, []],
  ];
  // Over h2 two levels (a process start each) show the request lines are the same; the option parsing is protocol-free.
  for (const [args, env, expected] of protocol === 'h1' ? levels : levels.slice(0, 2)) {
    const { child, url, output } = await serve(['--port', '0', '--cert-dir', certDir, '--store', join(dir, 'users.json'), '--metrics-port', '0', ...args], { env });
    t.after(() => child.kill('SIGKILL'));
    const ca = await readFile(join(certDir, 'localhost-cert.pem'));
    assert.equal((await request(`${url}/api/something`, { ca, protocol })).status, 200);
    assert.equal((await request(`${url}/api/nothing`, { ca, protocol })).status, 404);
    assert.equal((await request(`${url}/healthz`, { ca, protocol })).status, 200);
    await settle();
    child.kill('SIGTERM');
    assert.equal(await exited(child), 0);
    const lines = output().stdout.trim().split('\n').map((l) => JSON.parse(l));
    const listening = lines.find((l) => l.msg === 'listening');
    assert.equal(listening.url, url, `${args.join(' ')}: the startup line`);
    assert.match(listening.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, '--metrics-port');
    const logged = lines.filter((l) => l.msg === 'request').map((l) => `${l.path} ${l.status}`);
    assert.deepEqual(logged, expected, `${args.join(' ')} ${JSON.stringify(env)}`);
    const notFound = lines.find((l) => l.msg === 'request' && l.status === 404);
    if (notFound !== undefined) assert.equal(notFound.level, 'warn', 'a 4xx line is a warning');
  }
  const bad = await run(['--log-level', 'loud', '--port', '0']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--log-level must be one of info, warn, error, off, silent/);
  assert.equal((await run(['--metrics-port', '70000'])).code, 2);
  const help = await run(['--help']);
  for (const s of ['--metrics-port', 'HTTPSKIT_METRICS_PORT', '--log-level', 'HTTPSKIT_LOG_LEVEL']) assert.ok(help.stdout.includes(s), s);
});

test('H-5 the operations guide lists every metric; the README names health, OpenAPI and the ops flags (H-3/H-4)', async () => {
  const operations = await readFile(new URL('../../docs/guides/operations.md', import.meta.url), 'utf8');
  for (const name of METRIC_NAMES) assert.ok(operations.includes(name), name);
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  for (const s of ['/healthz', '/readyz', '/openapi.json', '--metrics-port', '--log-level']) assert.ok(readme.includes(s), s);
});

test('H-5/C-6 options: metricsPort and logLevel are checked when the service is created', async (t) => {
  for (const options of [{ metricsPort: -1 }, { metricsPort: 70_000 }, { metricsPort: 1.5 }, { logLevel: 'loud' }, { logLevel: 3 }]) {
    assert.throws(() => createService(options as never), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(options));
  }
  // A metrics port that cannot be bound stops listen() and leaves nothing listening.
  const first = await startService(t, { metricsPort: 0 });
  const taken = Number(new URL(first.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'listening').metricsUrl).port);
  const dir = await tempDir(t);
  const second = createService({ port: 0, metricsPort: taken, store: join(dir, 'users.json'), ...testCertificate(), log: false });
  await assert.rejects(second.listen(), { code: 'EADDRINUSE' });
  await second.close();
});

test('H-3 / L-2 a file store that goes away or stops parsing while serving: /readyz 503 and user requests 503 with Retry-After (never 500), both well again once it is back', async (t) => {
  const dir = await tempDir(t);
  const lines: string[] = [];
  const service = createService({ store: join(dir, 'data', 'users.json'), scrypt: { ln: 10 }, log: (line) => lines.push(line) });
  t.after(() => service.close());
  await service.users.add('ann', 'velvet-harbor-lantern-42');
  const auth = { authorization: basic('ann', 'velvet-harbor-lantern-42') };
  const ready = async () => (await service.fetch('/readyz')).status;
  const user = () => service.fetch('/user/ann.json', { headers: auth });
  /** /readyz keeps its answer for a second. */
  const pastCache = () => new Promise((resolve) => setTimeout(resolve, 1_100));
  const unavailable = async (what: string) => {
    await pastCache();
    assert.equal(await ready(), 503, `${what}: /readyz`);
    const res = await user();
    assert.equal(res.status, 503, `${what}: a user request`);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal(((await res.json()) as { type: string }).type, '/problems/overloaded');
  };
  const well = async (what: string) => {
    await pastCache();
    assert.equal(await ready(), 200, `${what}: /readyz`);
    assert.equal((await user()).status, 200, `${what}: a user request`);
  };
  await well('at first');

  await rename(join(dir, 'data'), join(dir, 'moved'));
  await unavailable('its directory moved away');
  await rename(join(dir, 'moved'), join(dir, 'data'));
  await well('moved back');

  const journal = join(dir, 'data', 'users.json.journal');
  const kept = await readFile(journal);
  await writeFile(journal, '{bad\n');
  await unavailable('its journal unreadable');
  const logged = lines.map((l) => JSON.parse(l) as { msg: string; level: string; code?: string; message?: string }).find((l) => l.msg === 'store unreadable' && l.code === 'ERR_STORE_CORRUPT');
  assert.match(logged?.message ?? '', /users\.json\.journal cannot be read/, 'the log says which file and why');
  assert.equal(logged?.level, 'error', 'for the operator to act on');
  assert.equal(lines.some((l) => l.includes('unhandled error')), false);
  await writeFile(journal, kept);
  await well('repaired');
});
