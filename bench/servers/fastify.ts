// Server under test: the peer a user would pick instead. Fastify with the same routes, the
// `negotiator` package, the same bodies and the same response headers as httpskit (security
// headers, request id, strong ETag, Link, Content-Location and Vary), so both do the same job.
// Logging: Fastify's default logger (pino, JSON lines on stdout) when args.log, else none.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { OFFERED, type ServerArgs } from './bodies.js';
import { serveControl } from './control.js';

const args = JSON.parse(process.argv[2] ?? '{}') as ServerArgs;
const SECURITY = { 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'" };
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  'application/json': 'application/json; charset=utf-8',
  'application/xml': 'application/xml; charset=utf-8',
  'text/xml': 'text/xml; charset=utf-8',
};

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function body(format: 'json' | 'xml', param1: string | undefined): string {
  if (format === 'json') return JSON.stringify({ param1: param1 ?? null });
  return param1 === undefined
    ? '<?xml version="1.0" encoding="UTF-8"?><something xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><param1 xsi:nil="true"/></something>'
    : `<?xml version="1.0" encoding="UTF-8"?><something><param1>${escapeXml(param1)}</param1></something>`;
}

function send(request: FastifyRequest, reply: FastifyReply, type: string, byAccept: boolean, secure: boolean): string {
  const format = type === 'application/json' ? 'json' : 'xml';
  const { param1 } = request.query as { param1?: string };
  const text = body(format, param1);
  const query = param1 === undefined ? '' : `?param1=${encodeURIComponent(param1)}`;
  reply.headers(SECURITY);
  if (secure) reply.header('strict-transport-security', 'max-age=31536000');
  reply.header('x-request-id', request.id);
  reply.header('content-type', CONTENT_TYPES[type]);
  reply.header('link', format === 'json' ? `</api/something.xml${query}>; rel="alternate"; type="application/xml"` : `</api/something.json${query}>; rel="alternate"; type="application/json"`);
  if (byAccept) {
    reply.header('content-location', `/api/something.${format}${query}`);
    reply.header('vary', 'Accept');
  }
  reply.header('etag', `"${createHash('sha256').update(type).update('\0').update(text).digest('base64url').slice(0, 27)}"`);
  return text;
}

function app(https: { cert: Buffer; key: Buffer } | undefined): FastifyInstance {
  const secure = https !== undefined;
  // args.http2: Fastify's HTTP/2 server (node:http2's createSecureServer), HTTP/1.1 allowed on the
  // same port as the service does (H-1).
  const fastify = (
    https === undefined
      ? Fastify({ logger: args.log })
      : args.http2 === true
        ? Fastify({ logger: args.log, http2: true, https: { ...https, allowHTTP1: true } })
        : Fastify({ logger: args.log, https })
  ) as unknown as FastifyInstance;
  fastify.get('/api/something.json', async (request, reply) => send(request, reply, 'application/json', false, secure));
  fastify.get('/api/something.xml', async (request, reply) => send(request, reply, 'application/xml', false, secure));
  fastify.get('/api/something', async (request, reply) => {
    const type = new Negotiator(request.raw).mediaType([...OFFERED]);
    if (type === undefined) {
      reply.code(406).header('vary', 'Accept').header('content-type', 'application/problem+json; charset=utf-8');
      return JSON.stringify({ type: '/problems/not-acceptable', title: 'Not Acceptable', status: 406, available: OFFERED });
    }
    return send(request, reply, type, true, secure);
  });
  return fastify;
}

const tls = app({ cert: readFileSync(args.certFile), key: readFileSync(args.keyFile) });
const plain = app(undefined);
const url = await tls.listen({ port: 0, host: '127.0.0.1' });
const httpUrl = await plain.listen({ port: 0, host: '127.0.0.1' });
serveControl({ kind: 'ready', url, httpUrl });
