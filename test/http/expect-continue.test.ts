// RFC 9110 §10.1.1 with P-0: a request that says `Expect: 100-continue` is told to send its body
// only once the service is about to read it, after authentication: a refused password change gets
// its 401 without a 100, so the client never sends the new password for nothing. Over HTTP/1.1 (a
// raw TLS socket, to see every status line) and HTTP/2 (node:http2's 'continue' event).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { openH2Session } from '../helpers/https.js';
import { basic, startService, type Started } from '../helpers/service.js';

const PASSWORD = 'velvet-harbor-lantern-42';

/** HTTP/1.1: the headers of a PUT with Expect: 100-continue; the body is sent only after a 100. Resolves with every status line seen, in order. */
function h1Put(s: Started, authorization: string, body: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(s.url).port), ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
      socket.write(
        `PUT /user/ann/password HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${authorization}\r\nContent-Type: text/plain\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
      );
    });
    let text = '';
    let sent = false;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (!sent && text.startsWith('HTTP/1.1 100 ')) {
        sent = true;
        socket.write(body);
      }
      const statuses = [...text.matchAll(/^HTTP\/1\.1 (\d{3}) /gm)].map((m) => m[1] as string);
      if (statuses.some((status) => status !== '100')) {
        socket.destroy();
        resolve(statuses);
      }
    });
    socket.on('error', reject);
  });
}

test('RFC 9110 §10.1.1 over HTTP/1.1: a refused password change gets its 401 without a 100; an authorised one gets the 100, then 204', async (t) => {
  const s = await startService(t, {}, 'h1');
  await s.service.users.add('ann', PASSWORD);
  assert.deepEqual(await h1Put(s, basic('ann', 'a-wrong-passphrase'), 'copper-meadow-violin-77'), ['401']);
  assert.deepEqual(await h1Put(s, basic('ann', PASSWORD), 'copper-meadow-violin-77'), ['100', '204']);
  assert.equal(await s.service.users.verify('ann', 'copper-meadow-violin-77'), true);
});

test('RFC 9110 §10.1.1 over HTTP/2: no 100 before a refusal; the 100 comes when the body is read', async (t) => {
  const s = await startService(t, {}, 'h2');
  await s.service.users.add('ann', PASSWORD);
  const client = await openH2Session(s.url, { ca: s.ca });
  t.after(() => client.close());
  const put = (authorization: string): Promise<{ status: number; continued: boolean }> =>
    new Promise((resolve, reject) => {
      const stream = client.request({ ':method': 'PUT', ':path': '/user/ann/password', authorization, 'content-type': 'text/plain', expect: '100-continue' });
      let continued = false;
      stream.once('continue', () => {
        continued = true;
        stream.end('copper-meadow-violin-77');
      });
      stream.once('response', (headers) => {
        stream.resume();
        stream.once('end', () => resolve({ status: Number(headers[':status']), continued }));
      });
      stream.once('error', reject);
    });
  assert.deepEqual(await put(basic('ann', 'a-wrong-passphrase')), { status: 401, continued: false });
  assert.deepEqual(await put(basic('ann', PASSWORD)), { status: 204, continued: true });
});
