import { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createService } from '../../lib/index.js';
import { hashPassword } from '../../lib/users/password-hash.js';
import { createSelfSignedCertificate } from '../../lib/tls/dev-cert.js';

const dir = await mkdtemp(join(tmpdir(), 'inproc-'));
const store = join(dir, 'users.json');
const hash = await hashPassword('bench-initial-passphrase-1', { ln: 1, r: 8, p: 1 });
const now = Date.now();
await writeFile(store, '{"format":"httpskit-users","version":1,"generation":0,"users":[\n' + JSON.stringify({ name: 'u1', role: 'user', hash, createdAt: now, passwordChangedAt: now }) + '\n]}\n', { mode: 0o600 });
await writeFile(store + '.journal', '{"format":"httpskit-users-journal","version":1,"generation":0}\n', { mode: 0o600 });
const { cert, key } = createSelfSignedCertificate();
const service = createService({ port: 0, store, cert, key, scrypt: { ln: 1, r: 8, p: 1 }, log: false });
await service.listen();
const handler = service.handler as unknown as (req: IncomingMessage, res: ServerResponse) => void;
const auth = `Basic ${Buffer.from('u1:bench-initial-passphrase-1').toString('base64')}`;
function one(path: string): Promise<number> {
  const socket = new Duplex({ read() {}, write(_c, _e, cb) { cb(); } }) as Duplex & { remoteAddress: string; encrypted: boolean };
  Object.defineProperty(socket, 'remoteAddress', { value: '127.0.0.1' });
  socket.encrypted = true;
  const req = new IncomingMessage(socket as never);
  req.method = 'GET';
  req.url = path;
  req.headers = { host: 'localhost', authorization: auth, accept: '*/*' };
  req.httpVersion = '1.1';
  req.push(null);
  const res = new ServerResponse(req);
  res.assignSocket(socket as never);
  return new Promise((resolve) => {
    res.on('finish', () => resolve(res.statusCode));
    handler(req, res);
  });
}
const paths = (process.env.PATHS ?? '/api/something.json?param1=hello,/user/u1.json').split(',');
for (const p of paths) for (let i = 0; i < 3000; i++) if ((await one(p)) !== 200) throw new Error(p);
for (let round = 0; round < 5; round++) {
  const line: string[] = [];
  for (const p of paths) {
    const n = 20000;
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) await one(p);
    const u = process.cpuUsage(before);
    line.push(`${p} ${((u.user + u.system) / n).toFixed(1)}`);
  }
  console.log(line.join('  |  '));
}
await service.close(0);
process.exit(0);
