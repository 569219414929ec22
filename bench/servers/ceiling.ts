// Server under test: the ceiling. A bare node:https / node:http handler that writes a constant
// body with the two headers a client needs; no routing, no parsing, no validators.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { JSON_BODY, XML_BODY, type ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(JSON_BODY)) };
const XML_HEADERS = { 'content-type': 'application/xml; charset=utf-8', 'content-length': String(Buffer.byteLength(XML_BODY)) };

function handler(req: IncomingMessage, res: ServerResponse): void {
  // One of two constants, so each scenario gets the same bytes as from the other servers.
  const json = (req.url ?? '').includes('.json');
  res.writeHead(200, json ? JSON_HEADERS : XML_HEADERS);
  res.end(json ? JSON_BODY : XML_BODY);
}

const https = createHttpsServer({ cert: readFileSync(args.certFile), key: readFileSync(args.keyFile) }, handler);
const http = createHttpServer(handler);
await Promise.all([https, http].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
serveControl({
  kind: 'ready',
  url: `https://127.0.0.1:${(https.address() as AddressInfo).port}`,
  httpUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
});
