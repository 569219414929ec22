// Diagnostic server: httpskit's listeners and request pipeline (context, router, dispatcher, reply
// writer with the common headers) around a handler that returns a constant reply with httpskit's
// headers. Between ceiling+headers and httpskit: separates the pipeline's cost from the
// representation handler's (query, negotiation, serialization, ETag, Link).
import { readFileSync } from 'node:fs';
import { createDispatcher, type Handler } from '../../lib/http/dispatch.js';
import type { Reply } from '../../lib/http/reply.js';
import { createRouter } from '../../lib/http/router.js';
import { startListeners } from '../../lib/http/server.js';
import { parseTrustProxy } from '../../lib/http/trust-proxy.js';
import { createLogger } from '../../lib/log.js';
import { createSelector } from '../../lib/representation/select.js';
import { JSON_BODY, XML_BODY, type ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
// The same headers as httpskit's answers, as constants (so only the pipeline differs).
const JSON_REPLY: Reply = {
  status: 200,
  headers: { 'content-type': 'application/json; charset=utf-8', link: '</api/something.xml?param1=hello>; rel="alternate"; type="application/xml"' },
  body: JSON_BODY,
  etag: '"aGXXdLL9aG5eKr1ziGnqOtm_eTC"',
};
const XML_REPLY: Reply = {
  status: 200,
  headers: {
    'content-type': 'application/xml; charset=utf-8',
    link: '</api/something.json?param1=hello>; rel="alternate"; type="application/json"',
    'content-location': '/api/something.xml?param1=hello',
  },
  body: XML_BODY,
  etag: '"3nCLuHLUVUr1RyIfhbWznG4FmxB"',
  vary: ['Accept'],
};
// Synchronous, like httpskit's representation handler with a plain-value loader.
const constant: Handler = (_ctx, params) => ((params['resource'] ?? '').includes('.json') ? JSON_REPLY : XML_REPLY);
const security = { 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'" };
const handler = createDispatcher({
  router: createRouter<Handler>({ '/api/:resource': { GET: constant } }),
  selector: createSelector(),
  trust: parseTrustProxy([]),
  log: createLogger(false),
  maxTargetLength: 8192,
  plainHeaders: security,
  secureHeaders: { ...security, 'strict-transport-security': 'max-age=31536000' },
});
const listeners = await startListeners(
  {
    host: '127.0.0.1',
    port: 0,
    httpPort: 0,
    http2: false,
    cert: readFileSync(args.certFile),
    key: readFileSync(args.keyFile),
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 5_000,
    maxHeaderBytes: 16_384,
  },
  handler,
);
serveControl({ kind: 'ready', url: listeners.url, httpUrl: listeners.httpUrl ?? '' });
