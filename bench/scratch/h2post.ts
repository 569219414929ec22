import http2 from 'node:http2';
import { createService } from '../../lib/index.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const { cert, key } = createSelfSignedCertificate();
const dir = await mkdtemp(join(tmpdir(), 'h2p-'));
const events: unknown[] = [];
const service = createService({ port: 0, cert, key, store: join(dir, 'u.json'), scrypt: { ln: 1, r: 8, p: 1 }, log: (l) => console.log('LOG', l), onResetToken: (e) => void events.push(e) });
const { url } = await service.listen();
await service.users.add('gina', 'quartz-initial-passphrase-1');
const client = http2.connect(url, { ca: cert });
for (const [path, body] of [['/user/gina/resettoken', undefined], ['/user/gina/resettoken', 'x']] as const) {
  const started = Date.now();
  await new Promise<void>((resolve) => {
    const req = client.request({ ':method': 'POST', ':path': path, ...(body ? { 'content-type': 'text/plain' } : {}) });
    const timer = setTimeout(() => { console.log('TIMEOUT', path, body); resolve(); }, 3000);
    req.on('response', (h) => console.log('status', h[':status'], Date.now() - started, 'ms'));
    req.on('data', () => {});
    req.on('end', () => { clearTimeout(timer); resolve(); });
    req.end(body);
  });
}
client.close();
await service.close(0);
console.log('events', events.length);
