// Diagnostic server: the ceiling with httpskit's full response header set (constant values), so the
// cost of the headers alone shows between the ceiling and httpskit.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { JSON_BODY, XML_BODY, type ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const EXTRA = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=31536000',
  'x-request-id': '7174eeb4-1',
  link: '</api/something.xml?param1=hello>; rel="alternate"; type="application/xml"',
  etag: '"aGXXdLL9aG5eKr1ziGnqOtm_eTC"',
};
const JSON_HEADERS = { ...EXTRA, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(JSON_BODY)) };
const XML_HEADERS = { ...EXTRA, 'content-location': '/api/something.xml?param1=hello', vary: 'Accept', 'content-type': 'application/xml; charset=utf-8', 'content-length': String(Buffer.byteLength(XML_BODY)) };

function write(req: IncomingMessage, res: ServerResponse): void {
  // One of two constants, so each scenario gets the same bytes as from the other servers.
  const json = (req.url ?? '').includes('.json');
  res.writeHead(200, json ? JSON_HEADERS : XML_HEADERS);
  res.end(json ? JSON_BODY : XML_BODY);
}

// args.async: answer from a microtask, as a promise-based pipeline does.
const handler = (args as { async?: boolean }).async === true ? (req: IncomingMessage, res: ServerResponse): void => queueMicrotask(() => write(req, res)) : write;

const https = createHttpsServer({ cert: readFileSync(args.certFile), key: readFileSync(args.keyFile) }, handler);
const http = createHttpServer(handler);
await Promise.all([https, http].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
serveControl({
  kind: 'ready',
  url: `https://127.0.0.1:${(https.address() as AddressInfo).port}`,
  httpUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
});
