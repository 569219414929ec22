// End-to-end: CONTRACT H-1 (HTTP/2 on the HTTPS port, its limits and time-outs) and C-5 over
// HTTP/2, with Node's http2 client, curl and nghttp (nghttp2-client) as independent clients.
// Floods of streams, resets, pings and settings are in test/security/http2-floods.test.ts; the
// other contract files run over both protocols through the helpers' `protocol` parameter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect as http2Connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { createService, ServiceError } from '../../lib/index.js';
import { hasCurl, serve } from '../helpers/cli.js';
import { openH2Session } from '../helpers/https.js';
import { tempDir } from '../helpers/tmp.js';
import { startService, type Started } from '../helpers/service.js';
import { ERROR, errorCode, FRAME, headersFrame, RawH2 } from '../security/helpers/h2-frames.js';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Asynchronous on purpose: the server runs in this process and must keep answering. */
function run(command: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

const curl = (await hasCurl()) ? (await run('curl', ['--version'])).stdout.includes('HTTP2') : false;
const noCurl = curl ? false : 'curl with HTTP/2 support is not installed: the curl --http2 checks are skipped';
const nghttp = (await run('nghttp', ['--version'])).code === 0;
const noNghttp = nghttp ? false : 'nghttp is not installed (Debian: apt-get install nghttp2-client; .ci/run installs it): the nghttp checks are skipped';

async function caFile(s: Started): Promise<string> {
  const path = join(s.dir, 'ca.pem');
  await writeFile(path, s.ca);
  return path;
}

const session = (s: Started): Promise<ClientHttp2Session> => openH2Session(s.url, { ca: s.ca });

interface StreamResult {
  readonly status: number | undefined;
  readonly body: string;
  readonly rstCode: number | undefined;
}

/** Collects a client stream's response (if any) and how it ended. */
function result(stream: ClientHttp2Stream): Promise<StreamResult> {
  return new Promise((resolve) => {
    let status: number | undefined;
    let body = '';
    stream.on('response', (headers) => (status = Number(headers[constants.HTTP2_HEADER_STATUS])));
    stream.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    stream.on('error', () => {});
    stream.on('close', () => resolve({ status, body, rstCode: stream.rstCode }));
  });
}

test('H-1 curl --http2 negotiates h2 and gets the representation; curl --http1.1 still gets HTTP/1.1', { skip: noCurl }, async (t) => {
  const s = await startService(t);
  const ca = await caFile(s);
  const port = new URL(s.url).port;
  const base = ['-s', '--cacert', ca, '--resolve', `localhost:${port}:127.0.0.1`, '-w', '\n%{http_version} %{http_code}'];
  const h2 = await run('curl', [...base, '--http2', `https://localhost:${port}/api/something.xml?param1=curl`]);
  assert.equal(h2.code, 0, h2.stderr);
  assert.equal(h2.stdout, '<?xml version="1.0" encoding="UTF-8"?><something><param1>curl</param1></something>\n2 200');
  const h1 = await run('curl', [...base, '--http1.1', `https://localhost:${port}/api/something.json?param1=curl`]);
  assert.equal(h1.stdout, '{"param1":"curl"}\n1.1 200');
  const verbose = await run('curl', ['-sv', '-o', '/dev/null', '--cacert', ca, '--resolve', `localhost:${port}:127.0.0.1`, '--http2', `https://localhost:${port}/api/something`]);
  assert.match(verbose.stderr, /ALPN: server accepted h2|ALPN, server accepted to use h2/, verbose.stderr);
});

test('H-1 nghttp (nghttp2-client) gets the representations, a problem and a HEAD over h2', { skip: noNghttp }, async (t) => {
  const s = await startService(t);
  const port = new URL(s.url).port;
  // nghttp does not verify the certificate; the TLS and h2 layers are what is under test here.
  const get = await run('nghttp', ['-v', `https://127.0.0.1:${port}/api/something.json?param1=nghttp`]);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /recv \(stream_id=13\) :status: 200/);
  assert.match(get.stdout, /recv \(stream_id=13\) content-type: application\/json; charset=utf-8/);
  assert.match(get.stdout, /\{"param1":"nghttp"\}/);
  assert.doesNotMatch(get.stdout, /recv \(stream_id=13\) connection:/, 'no Connection field over h2 (RFC 9113 §8.2.2)');
  const missing = await run('nghttp', ['-v', '-H', 'accept: application/xml', `https://127.0.0.1:${port}/nowhere`]);
  assert.match(missing.stdout, /:status: 404/);
  // E-1 (amended): the label is the XML type the request accepts (application/xml), the body a problem.
  assert.match(missing.stdout, /content-type: application\/xml; charset=utf-8/);
  assert.match(missing.stdout, /urn:ietf:rfc:7807/);
  // Many requests on one connection, some in parallel.
  const many = await run('nghttp', ['-n', '-s', '-m', '50', `https://127.0.0.1:${port}/api/something.xml`]);
  assert.equal(many.code, 0, many.stderr);
  assert.equal((many.stdout.match(/ 200 /g) ?? []).length, 50, many.stdout);
  const head = await run('nghttp', ['-v', '-H', ':method: HEAD', `https://127.0.0.1:${port}/api/something.json`]);
  assert.match(head.stdout, /:status: 200/);
  assert.match(head.stdout, /content-length: 15\b/);
});

test('H-1 http2: false serves HTTP/1.1 only: ALPN never selects h2 and HTTP/2 clients are refused', async (t) => {
  const s = await startService(t, { http2: false });
  const port = Number(new URL(s.url).port);
  const alpn = await negotiated(port, s.ca);
  assert.notEqual(alpn, 'h2');
  await assert.rejects(s.fetch('/api/something.json', { protocol: 'h2' }));
  const h1 = await s.fetch('/api/something.json');
  assert.equal(h1.status, 200);
  assert.equal(h1.httpVersion, '1.1');

  const on = await startService(t);
  const offered = await negotiated(Number(new URL(on.url).port), on.ca);
  assert.equal(offered, 'h2', 'by default h2 is selected when offered');
});

test('H-1 the http2 option takes true or false only', () => {
  for (const http2 of ['yes', 1, 0]) {
    assert.throws(() => createService({ http2 } as never), (e: unknown) => e instanceof ServiceError && e.code === 'ERR_INVALID_OPTION', String(http2));
  }
});

/** The protocol ALPN selects when a client offers h2 and http/1.1. */
function negotiated(port: number, ca: string | Buffer): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      resolve(socket.alpnProtocol ?? false);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

test('H-1 the command: h2 by default; --no-http2 and HTTPSKIT_NO_HTTP2=true serve HTTP/1.1 only', async (t) => {
  const dir = await tempDir(t);
  const cases: ReadonlyArray<readonly [label: string, args: readonly string[], env: NodeJS.ProcessEnv, expected: string]> = [
    ['default', [], {}, 'h2'],
    ['--no-http2', ['--no-http2'], {}, 'http/1.1'],
    ['HTTPSKIT_NO_HTTP2=true', [], { HTTPSKIT_NO_HTTP2: 'true' }, 'http/1.1'],
    ['HTTPSKIT_NO_HTTP2=false', [], { HTTPSKIT_NO_HTTP2: 'false' }, 'h2'],
  ];
  for (const [i, [label, args, env, expected]] of cases.entries()) {
    const certDir = join(dir, `certs-${i}`);
    await mkdir(certDir);
    const { child, url } = await serve(['--port', '0', '--cert-dir', certDir, '--store', join(dir, `users-${i}.json`), ...args], { env });
    t.after(() => child.kill('SIGKILL'));
    const ca = await readFile(join(certDir, 'localhost-cert.pem'));
    assert.equal(await negotiated(Number(new URL(url).port), ca), expected, label);
    child.kill('SIGTERM');
  }
});

test('H-1 the server announces at most 100 concurrent streams and a 16 KiB header list', async (t) => {
  const s = await startService(t);
  const client = await session(s);
  t.after(() => client.destroy());
  assert.equal(client.remoteSettings.maxConcurrentStreams, 100);
  assert.equal(client.remoteSettings.maxHeaderListSize, 16_384);
  assert.equal(client.remoteSettings.enablePush, false);
});

test('H-1 150 requests at once on one connection: 100 run concurrently, the rest are refused (REFUSED_STREAM); other clients are served', async (t) => {
  let running = 0;
  let peak = 0;
  const s = await startService(t, {
    resources: {
      wait: () => {
        running++;
        peak = Math.max(peak, running);
        return new Promise((resolve) => setTimeout(() => resolve((running--, 'done')), 1_000));
      },
    },
  });
  const raw = await RawH2.open(Number(new URL(s.url).port), s.ca);
  t.after(() => raw.close());
  // A raw client: it does not wait for the server's SETTINGS, as a hostile one would not.
  await raw.write(...Array.from({ length: 150 }, (_, i) => headersFrame(1 + 2 * i, { path: '/api/wait.json' })));
  const other = await s.fetch('/api/something.json?param1=meanwhile', { protocol: 'h2' });
  assert.equal(other.status, 200);
  await raw.waitFor(() => raw.frames.filter((f) => f.type === FRAME.HEADERS).length === 100, 10_000);
  const refused = raw.frames.filter((f) => f.type === FRAME.RST_STREAM && errorCode(f) === ERROR.REFUSED_STREAM);
  const answered = raw.frames.filter((f) => f.type === FRAME.HEADERS);
  t.diagnostic(`${answered.length} answered, ${refused.length} refused, at most ${peak} in the handler at once`);
  assert.equal(peak, 100);
  assert.equal(answered.length, 100);
  assert.equal(refused.length, 50);
  assert.ok(refused.every((f) => f.streamId > 199), 'the streams past the first 100 are the refused ones');
});

test('H-1 a header block over 16 KiB is refused with 431 or a stream reset, never a 5xx; the connection goes on', async (t) => {
  const s = await startService(t);
  // Twice: the first request races the client's acknowledgement of our SETTINGS; the second comes after it.
  for (const when of ['first', 'after SETTINGS']) {
    const client = when === 'first' ? http2Connect(s.url, { ca: s.ca, servername: 'localhost' }) : await session(s);
    t.after(() => client.destroy());
    client.on('error', () => {});
    const big = await result(client.request({ ':path': '/api/something.json', 'x-big': 'b'.repeat(17_000) }).end());
    t.diagnostic(`${when}: status ${String(big.status)}, RST_STREAM code ${String(big.rstCode)}`);
    assert.ok(big.status === 431 || (big.status === undefined && big.rstCode !== constants.NGHTTP2_NO_ERROR), `${when}: ${JSON.stringify(big)}`);
    if (big.status === 431) {
      assert.deepEqual(JSON.parse(big.body), { type: '/problems/request-header-fields-too-large', title: 'Request Header Fields Too Large', status: 431 });
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(s.logs.some((l) => l.includes('"request refused by the HTTP parser"') && l.includes('"status":431')), `${when}: C-6, the refusal is logged`);
    }
    const fits = await result(client.request({ ':path': '/api/something.json', 'x-fits': 'f'.repeat(15_000) }).end());
    assert.equal(fits.status, 200, `${when}: a 15 KB field still fits, on the same connection`);
  }
});

test('H-1 a :path with octets outside visible ASCII is a 400 problem, as HTTP/1.1\'s parser answers it, or a stream reset; never served', async (t) => {
  const s = await startService(t);
  const client = await session(s);
  t.after(() => client.destroy());
  client.on('error', () => {});
  // The UTF-8 octets of 'é' sent raw (node:http2 writes a string's characters as octets), DEL, and a raw é in a user name.
  for (const path of ['/api/something.json?param1=\u00c3\u00a9', '/api/something.json?param1=\u007f', '/user/\u00c3\u00a9.json', '/api/som\u00e9thing']) {
    const r = await result(client.request({ ':path': path }).end());
    t.diagnostic(`${JSON.stringify(path)}: status ${String(r.status)}, RST_STREAM code ${String(r.rstCode)}`);
    assert.ok(r.status === 400 || (r.status === undefined && r.rstCode !== constants.NGHTTP2_NO_ERROR), `${JSON.stringify(path)}: ${JSON.stringify(r)}`);
    if (r.status === 400) {
      assert.deepEqual(JSON.parse(r.body), { type: '/problems/bad-request', title: 'Bad Request', status: 400, detail: 'The request target must be visible ASCII: percent-encode other octets (RFC 3986 §2.1).' });
    }
  }
  const encoded = await result(client.request({ ':path': '/api/something.json?param1=%C3%A9' }).end());
  assert.equal(encoded.status, 200);
  assert.deepEqual(JSON.parse(encoded.body), { param1: 'é' }, 'percent-encoded, the same octets are the character');
});

test('RFC 9113 §8.3.1: an HTTP/2 request whose Host names another host or port than :authority is a 400 problem (logged); a Host that agrees is served', async (t) => {
  const s = await startService(t);
  const client = await session(s);
  t.after(() => client.destroy());
  const port = new URL(s.url).port;
  const detail = 'Host, when sent over HTTP/2, must appear once and name the same host and port as :authority (RFC 9113 §8.3.1).';
  // (A Host that is no host[:port] never reaches the server: nghttp2 drops the field.)
  for (const host of ['evil.example', `localhost:${Number(port) + 1}`, 'localhost']) {
    const r = await result(client.request({ ':path': '/api/something.json', ':authority': `localhost:${port}`, host }).end());
    assert.equal(r.status, 400, host);
    assert.deepEqual(JSON.parse(r.body), { type: '/problems/bad-request', title: 'Bad Request', status: 400, detail }, host);
  }
  // The same entity, as RFC 3986 §6.2 normalises it: case, and the default port of https.
  for (const [authority, host] of [[`localhost:${port}`, `LocalHost:${port}`], ['localhost', 'localhost:443'], ['LOCALHOST:443', 'localhost:']]) {
    const r = await result(client.request({ ':path': '/api/something.json?param1=x', ':authority': authority, host }).end());
    assert.equal(r.status, 200, `${authority} / ${host}`);
    assert.deepEqual(JSON.parse(r.body), { param1: 'x' });
  }
  const plain = await result(client.request({ ':path': '/api/something.json' }).end());
  assert.equal(plain.status, 200, 'no Host beside :authority, as clients send it');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refused = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request refused by the HTTP parser');
  assert.deepEqual(refused.map((l) => [l['status'], l['code'], l['level']]), Array.from({ length: 3 }, () => [400, 'host', 'warn']));
});

test('H-1 a silent HTTP/2 connection gets GOAWAY and is closed at the header time-out', async (t) => {
  const headersTimeoutMs = 1_000;
  const s = await startService(t, { headersTimeoutMs });
  const raw = await RawH2.open(Number(new URL(s.url).port), s.ca);
  t.after(() => raw.close());
  const started = performance.now();
  await Promise.race([raw.closed, new Promise((resolve) => setTimeout(resolve, headersTimeoutMs + 5_000))]);
  const after = performance.now() - started;
  assert.ok(raw.isClosed, 'the server closed the connection');
  assert.ok(after >= headersTimeoutMs - 100 && after <= headersTimeoutMs + 2_000 + 1_000, `closed after ${after.toFixed(0)} ms`);
  const goaway = raw.frames.find((f) => f.type === FRAME.GOAWAY);
  assert.ok(goaway !== undefined && errorCode(goaway) === ERROR.NO_ERROR, 'a graceful GOAWAY (NO_ERROR) first');
});

test('H-1 an HTTP/2 connection idle after its requests is closed after the keep-alive time-out', async (t) => {
  const keepAliveTimeoutMs = 500;
  const s = await startService(t, { keepAliveTimeoutMs });
  const client = await session(s);
  t.after(() => client.destroy());
  const goaway = new Promise<number>((resolve) => client.once('goaway', (code: number) => resolve(code)));
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  const first = await result(client.request({ ':path': '/api/something.json' }).end());
  assert.equal(first.status, 200);
  const started = performance.now();
  await closed;
  const after = performance.now() - started;
  assert.equal(await goaway, constants.NGHTTP2_NO_ERROR);
  assert.ok(after <= keepAliveTimeoutMs + 2_000 + 1_000, `closed ${after.toFixed(0)} ms after the last response`);
});

test('H-1 a stream whose request does not complete within the request time-out is reset; the connection serves others', async (t) => {
  const requestTimeoutMs = 1_000;
  const s = await startService(t, { requestTimeoutMs, keepAliveTimeoutMs: 10_000 });
  const client = await session(s);
  t.after(() => client.destroy());
  // A form whose body never ends: the handler waits for it (P-5 reads the body first).
  const stalled = client.request({ ':method': 'POST', ':path': '/user/alice/resetpassword/', 'content-type': 'application/json' });
  stalled.write('{"oldpasswd": "');
  const started = performance.now();
  const outcome = await result(stalled);
  const after = performance.now() - started;
  t.diagnostic(`reset after ${after.toFixed(0)} ms with code ${String(outcome.rstCode)}`);
  assert.equal(outcome.status, undefined, 'no response: the request never completed');
  assert.equal(outcome.rstCode, constants.NGHTTP2_CANCEL);
  assert.ok(after >= requestTimeoutMs - 100 && after <= requestTimeoutMs + 2_000 + 1_000, `reset after ${after.toFixed(0)} ms`);
  const next = await result(client.request({ ':path': '/api/something.json?param1=next' }).end());
  assert.equal(next.status, 200);
  assert.equal(next.body, '{"param1":"next"}');
});

test('C-5 close() sends GOAWAY on HTTP/2: the in-flight request finishes, the session closes, close() resolves', async (t) => {
  const s = await startService(t, { resources: { slow: () => new Promise((resolve) => setTimeout(() => resolve({ done: true }), 400)) } });
  const client = await session(s);
  t.after(() => client.destroy());
  const goaway = new Promise<number>((resolve) => client.once('goaway', (code: number) => resolve(code)));
  const sessionClosed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  const inFlight = result(client.request({ ':path': '/api/slow.json' }).end());
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = performance.now();
  const closing = s.service.close(5_000);
  assert.equal(await goaway, constants.NGHTTP2_NO_ERROR);
  const r = await inFlight;
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { done: true });
  await closing;
  await sessionClosed;
  assert.ok(performance.now() - started < 3_000, 'close() did not wait for the grace period');
  await assert.rejects(s.fetch('/api/something.json', { protocol: 'h2' }));
});
