// The listeners of the bare servers (ceiling, ceiling+headers): plain node:https and node:http on
// free loopback ports, reported to the parent when ready.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

export async function serveBare(args: ServerArgs, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<void> {
  const https = createHttpsServer({ cert: readFileSync(args.certFile), key: readFileSync(args.keyFile) }, handler);
  const http = createHttpServer(handler);
  await Promise.all([https, http].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  serveControl({
    kind: 'ready',
    url: `https://127.0.0.1:${(https.address() as AddressInfo).port}`,
    httpUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
  });
}
