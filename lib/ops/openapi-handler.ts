// H-4: GET|HEAD /openapi.json. Served as `application/json` (the media type clients and tools
// expect from this well-known path; the document is JSON whatever the request's Accept, as RFC 9110
// §12.5.1 allows), with a strong ETag so a tool can poll it with If-None-Match.
import type { Reply } from '../http/reply.js';
import { createEtagMemo } from '../representation/etag.js';

/** `document` gives the service's document (A-12: read from its route table), built once. */
export function createOpenApiHandler(document: () => object): () => Reply {
  let reply: Reply | undefined;
  // Built at the first request: a service that is never asked pays nothing.
  return () =>
    (reply ??= (() => {
      const body = JSON.stringify(document());
      return {
        status: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' },
        body,
        etag: createEtagMemo(1)('application/json', body),
      };
    })());
}
