// End-to-end: H-1's HTTP/2 requests as the service's own listener serves them (node:http2's
// stream API, not its compatibility objects): bodies read from the stream with the same limit and
// errors, streams the client gives up mid-body, CONNECT, Expect: 100-continue, and the access log
// and metrics of requests that came over h2. Node's http2 client, real TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { openH2Session, request } from '../helpers/https.js';
import { startService, type Started } from '../helpers/service.js';
import { HttpError, problem } from '../../lib/http/problem.js';

interface StreamResult {
  readonly status: number | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly rstCode: number | undefined;
}

/** A client stream's response (if any) and how it ended. */
function result(stream: ClientHttp2Stream): Promise<StreamResult> {
  return new Promise((resolve) => {
    let headers: Record<string, string | string[] | undefined> = {};
    let body = '';
    stream.on('response', (h) => (headers = h));
    stream.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    stream.on('error', () => {});
    stream.on('close', () => {
      const status = headers[constants.HTTP2_HEADER_STATUS];
      resolve({ status: status === undefined ? undefined : Number(status), headers, body, rstCode: stream.rstCode });
    });
  });
}

async function session(t: { after: (fn: () => void) => void }, s: Started): Promise<ClientHttp2Session> {
  const client = await openH2Session(s.url, { ca: s.ca });
  t.after(() => client.destroy());
  return client;
}

const lines = (s: Started): Array<Record<string, unknown>> => s.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

/** Log lines are written once per event-loop turn. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));

const JSON_FORM = { ':method': 'POST', ':path': '/user/alice/resetpassword', 'content-type': 'application/json' };

test('H-1 over h2, a body streamed past the limit without Content-Length is answered 413 and the stream ended; the connection goes on', async (t) => {
  const s = await startService(t, { maxBodyBytes: 1_024 });
  const client = await session(t, s);
  const stream = client.request(JSON_FORM);
  const outcome = result(stream);
  // Never ended by the client: the server stops reading at the limit and answers at once.
  for (let i = 0; i < 3; i++) stream.write('x'.repeat(1_000));
  const big = await outcome;
  assert.equal(big.status, 413);
  assert.equal(big.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.equal(big.headers['connection'], undefined, 'no connection-specific field over HTTP/2 (RFC 9113 §8.2.2)');
  assert.equal((JSON.parse(big.body) as { type: string; limit: number }).type, '/problems/payload-too-large');
  // RFC 9113 §8.1: the rest of the body is refused with RST_STREAM(NO_ERROR) after the response.
  assert.equal(big.rstCode, constants.NGHTTP2_NO_ERROR);
  const next = await result(client.request({ ':path': '/api/something.json?param1=after' }).end());
  assert.equal(next.status, 200);
  assert.equal(next.body, '{"param1":"after"}');
  await settle();
  assert.ok(lines(s).some((l) => l['msg'] === 'request' && l['status'] === 413 && l['path'] === '/user/alice/resetpassword'), 'the 413 is in the access log');
});

test('H-1 over h2, a body within the limit in many DATA frames is read whole', async (t) => {
  const s = await startService(t, { maxBodyBytes: 4_096 });
  const client = await session(t, s);
  const stream = client.request(JSON_FORM);
  const outcome = result(stream);
  const form = JSON.stringify({ oldpasswd: 'o'.repeat(1_500), newpasswd: 'n'.repeat(1_500) });
  for (let i = 0; i < form.length; i += 100) stream.write(form.slice(i, i + 100));
  stream.end();
  // No such user: the whole form was read and parsed, then the old password checked (P-5).
  const answer = await outcome;
  assert.equal(answer.status, 403);
  assert.equal((JSON.parse(answer.body) as { type: string }).type, '/problems/invalid-credentials');
});

// A resource that answers after 300 ms: the client can give up while the handler works.
const slow = { slow: () => new Promise((resolve) => setTimeout(() => resolve({ done: true }), 300)) };

for (const [name, code] of [
  ['CANCEL', constants.NGHTTP2_CANCEL],
  ['INTERNAL_ERROR', constants.NGHTTP2_INTERNAL_ERROR],
] as const) {
  for (const midBody of [true, false]) {
    const when = midBody ? 'mid-body' : 'while its handler works';
    test(`H-1 a stream the client resets ${when} (RST_STREAM ${name}) gets no answer and no error; the connection and the server go on`, async (t) => {
      const s = await startService(t, { resources: slow });
      const client = await session(t, s);
      const stream = midBody ? client.request(JSON_FORM) : client.request({ ':path': '/api/slow.json' }).end();
      if (midBody) stream.write('{"oldpasswd": "half');
      const outcome = result(stream);
      // Reset once the server has the stream and is waiting (for the rest of the body, or the resource).
      await new Promise((resolve) => setTimeout(resolve, 100));
      stream.close(code);
      const reset = await outcome;
      assert.equal(reset.status, undefined);
      // The slow resource answers after the reset: nothing is written on the gone stream.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const next = await result(client.request({ ':path': '/api/something.json?param1=next' }).end());
      assert.equal(next.status, 200);
      assert.equal(next.body, '{"param1":"next"}');
      const fresh = await request(`${s.url}/api/something.json?param1=fresh`, { ca: s.ca, protocol: 'h2' });
      assert.equal(fresh.status, 200);
      await settle();
      assert.deepEqual(
        lines(s).filter((l) => l['level'] === 'error'),
        [],
        'a client that gives up is not a server error',
      );
    });
  }
}

test('H-1 CONNECT over h2 is refused with 405, Allow and the T-4 headers (RFC 9113 §8.5)', async (t) => {
  const s = await startService(t);
  const client = await session(t, s);
  const answer = await result(client.request({ ':method': 'CONNECT', ':authority': 'example.com:443' }));
  assert.equal(answer.status, 405);
  assert.equal(answer.headers['allow'], 'GET, HEAD, OPTIONS, PUT, POST');
  assert.equal(answer.headers['x-content-type-options'], 'nosniff');
  assert.match(String(answer.headers['strict-transport-security']), /^max-age=\d+$/);
  assert.equal((JSON.parse(answer.body) as { status: number }).status, 405);
});

test('H-1 Expect: 100-continue over h2 gets a 100 before the body is sent, then the answer (RFC 9110 §10.1.1)', async (t) => {
  const s = await startService(t);
  const client = await session(t, s);
  const stream = client.request({ ...JSON_FORM, expect: '100-continue' });
  const outcome = result(stream);
  await new Promise<void>((resolve) => stream.once('continue', () => resolve()));
  stream.end(JSON.stringify({ oldpasswd: 'old-passphrase-0001', newpasswd: 'new-passphrase-0001' }));
  const answer = await outcome;
  assert.equal(answer.status, 403, 'the body was read: no such user');
});

test('H-1 / C-6 / H-5 requests over h2 are logged and counted like HTTP/1.1 ones; HEAD has the GET headers and no body', async (t) => {
  const s = await startService(t, { metricsPort: 0 });
  const client = await session(t, s);
  const get = await result(client.request({ ':path': '/api/something.json?param1=logged' }).end());
  const head = await result(client.request({ ':method': 'HEAD', ':path': '/api/something.json?param1=logged' }).end());
  const missing = await result(client.request({ ':path': '/no/such/thing' }).end());
  assert.equal(get.status, 200);
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal(head.headers['content-length'], get.headers['content-length']);
  assert.equal(head.headers['etag'], get.headers['etag']);
  assert.match(String(get.headers['date']), /GMT$/);
  assert.equal(missing.status, 404);
  // N-7 over h2: the ETag gives a 304 without a body.
  const etag = String(get.headers['etag']);
  const cached = await result(client.request({ ':path': '/api/something.json?param1=logged', 'if-none-match': etag }).end());
  assert.equal(cached.status, 304);
  assert.equal(cached.body, '');
  await settle();
  const requests = lines(s).filter((l) => l['msg'] === 'request');
  assert.deepEqual(
    requests.map((l) => [l['method'], l['path'], l['status']]),
    [
      ['GET', '/api/something.json', 200],
      ['HEAD', '/api/something.json', 200],
      ['GET', '/no/such/thing', 404],
      ['GET', '/api/something.json', 304],
    ],
  );
  for (const l of requests) {
    assert.equal(l['address'], '127.0.0.1');
    assert.equal(typeof l['durationMs'], 'number');
  }
  assert.equal(requests[0]?.['id'], get.headers['x-request-id']);
  const listening = lines(s).find((l) => l['msg'] === 'listening') as { metricsUrl: string };
  const metrics = (await request(listening.metricsUrl)).body;
  assert.match(metrics, /^httpskit_http_requests_total\{route="\/api\/something",method="GET",status="200"\} 1$/m);
  assert.match(metrics, /^httpskit_http_requests_total\{route="\/api\/something",method="HEAD",status="200"\} 1$/m);
  assert.match(metrics, /^httpskit_http_requests_total\{route="\/api\/something",method="GET",status="304"\} 1$/m);
});

test('H-1 over h2, a request whose HEADERS frame ends the stream (no body) is answered by a route that reads the body', { timeout: 20_000 }, async (t) => {
  const s = await startService(t, { onResetToken: () => {} });
  await s.service.users.add('alice', 'cobalt-initial-passphrase-12');
  const client = await session(t, s);
  // P-12 reads (and ignores) the body: with END_STREAM on HEADERS there is none, and the stream has
  // ended before the handler listens. It once waited for an 'end' that had already been emitted.
  const noBody = await result(client.request({ ':method': 'POST', ':path': '/user/alice/resettoken' }, { endStream: true }));
  assert.equal(noBody.status, 202);
  // The same with an empty DATA frame ending the stream, and a wrong-length password body.
  const emptyData = await result(client.request({ ':method': 'POST', ':path': '/user/alice/resettoken' }).end(''));
  assert.equal(emptyData.status, 202);
  const put = await result(client.request({ ':method': 'PUT', ':path': '/user/alice/password', authorization: `Basic ${Buffer.from('alice:cobalt-initial-passphrase-12').toString('base64')}`, 'content-type': 'text/plain' }, { endStream: true }));
  assert.equal(put.status, 422, 'an empty new password is refused by the policy, not left unanswered');
});

test('H-1 over h2, every connection-specific field of a loader\'s HttpError is dropped (TE, HTTP2-Settings too): its status is sent, not a 500 (RFC 9113 §8.2.2)', async (t) => {
  const fields = { Connection: 'close', 'Keep-Alive': 'timeout=5', 'Proxy-Connection': 'close', Upgrade: 'h2c', TE: 'gzip', 'HTTP2-Settings': 'AAMAAABkAAQAAP__', 'Set-Cookie': ['a=1', 'b=2'] };
  const busy = () => {
    throw new HttpError(problem(503, 'overloaded'), fields);
  };
  const s = await startService(t, { resources: { busy } });
  const client = await session(t, s);
  const answer = await result(client.request({ ':path': '/api/busy.json' }).end());
  assert.equal(answer.status, 503);
  assert.equal((JSON.parse(answer.body) as { status: number }).status, 503);
  for (const name of ['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'http2-settings']) assert.equal(answer.headers[name], undefined, name);
  assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2'], 'a field with several values keeps them all');
  await settle();
  assert.deepEqual(lines(s).filter((l) => l['level'] === 'error' && l['msg'] !== 'request'), [], 'the response was written as it was');
});
