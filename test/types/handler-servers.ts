// Type test (CONTRACT A-1, H-1): never run, only compiled by `npm run typecheck` (tsconfig.json
// includes test/). It stops compiling if `service.handler` no longer fits a server of node:http,
// node:https or node:http2 (the compatibility API, with or without allowHTTP1), which is how an
// embedder mounts it.
import { createServer as createHttpServer } from 'node:http';
import { createSecureServer, createServer as createHttp2Server } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import { createService, type RequestHandler, type Service } from '../../lib/index.js';

export function mount(service: Service): unknown[] {
  const handler: RequestHandler = service.handler;
  const h2 = createSecureServer({ allowHTTP1: true }, service.handler);
  h2.on('request', service.handler);
  return [
    h2,
    createSecureServer({}, handler),
    createHttp2Server(service.handler),
    createHttpsServer({}, service.handler),
    createHttpServer(service.handler),
    createService,
  ];
}
