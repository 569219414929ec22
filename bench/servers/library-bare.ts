// The library section's reference: a bare node:https handler doing an item's GET and PUT by hand
// (JSON.stringify of the stored value; PUT reads the body, JSON.parse, stores it, answers it), with
// no routing, negotiation, validation or headers beyond the two a client needs. Its PUT ÷ GET is
// what the transport alone makes of a 1 KiB request body: the floor under httpskit's own ratio.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BOOK_BODY, type ServerArgs } from './bodies.js';
import { serveBare } from './bare.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
let stored: unknown = JSON.parse(BOOK_BODY);

function answer(res: ServerResponse): void {
  const body = JSON.stringify(stored);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function handler(req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'PUT') {
    answer(res);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    stored = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    answer(res);
  });
}

await serveBare(args, handler);
