// Diagnostic server: the ceiling with httpskit's full response header set (constant values), so the
// cost of the headers alone shows between the ceiling and httpskit.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_BODY, XML_BODY, type ServerArgs } from './bodies.js';
import { serveBare } from './bare.js';

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

await serveBare(args, handler);
