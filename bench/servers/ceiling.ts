// Server under test: the ceiling. A bare node:https / node:http handler that writes a constant
// body with the two headers a client needs; no routing, no parsing, no validators.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_BODY, XML_BODY, type ServerArgs } from './bodies.js';
import { serveBare } from './bare.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(JSON_BODY)) };
const XML_HEADERS = { 'content-type': 'application/xml; charset=utf-8', 'content-length': String(Buffer.byteLength(XML_BODY)) };

function handler(req: IncomingMessage, res: ServerResponse): void {
  // One of two constants, so each scenario gets the same bytes as from the other servers.
  const json = (req.url ?? '').includes('.json');
  res.writeHead(200, json ? JSON_HEADERS : XML_HEADERS);
  res.end(json ? JSON_BODY : XML_BODY);
}

await serveBare(args, handler);
