// The bodies every server under test sends for GET /api/something?param1=hello, byte for byte
// what httpskit sends (N-9), so the peers do the same work on the wire.
export const JSON_BODY = '{"param1":"hello"}';
export const XML_BODY = '<?xml version="1.0" encoding="UTF-8"?><something><param1>hello</param1></something>';

/** The library section's PUT /api/books/1 body (bench/servers/library.ts): about 1 KiB of JSON its schema accepts. */
export const BOOK_BODY = JSON.stringify({
  title: 'Dune',
  year: 1965,
  author: 'Frank Herbert',
  tags: ['science fiction', 'desert', 'politics', 'ecology'],
  summary: 'Set on the desert planet Arrakis, '.repeat(27).trim(),
});

/** The offered types in server order (N-3), for the peers that negotiate with `negotiator`. */
export const OFFERED = ['application/json', 'application/xml', 'text/xml'] as const;

/** Options a server child receives as JSON in argv[2]. */
export interface ServerArgs {
  readonly certFile: string;
  readonly keyFile: string;
  /** Log one JSON line per request to stdout (the parent points stdout at /dev/null). */
  readonly log: boolean;
  /** httpskit only: the store file. */
  readonly store?: string;
  /** httpskit only: scrypt cost (default: the service's default, N=2^17). */
  readonly scrypt?: { readonly ln: number; readonly r: number; readonly p: number };
  /** httpskit only: hashes in flight and waiting (default: the service's defaults). */
  readonly hashConcurrency?: number;
  readonly hashQueueLimit?: number;
  /** httpskit only: the log level (C-6) and whether the metrics listener is on (H-5). */
  readonly logLevel?: 'info' | 'off';
  readonly metrics?: boolean;
  /**
   * httpskit only: keep-alive time-out (the postgres section's password servers raise it: the
   * service also drops an HTTP/1.1 connection idle for headersTimeout + keepAliveTimeout, 15 s,
   * even with a request in flight, and a change queued for scrypt on a loaded machine can wait that long).
   */
  readonly keepAliveTimeoutMs?: number;
  /**
   * httpskit: HTTP/2 beside HTTP/1.1 on the HTTPS port (H-1; the service's default is on), false
   * for the node:https-only listener. fastify: true for Fastify's own `http2: true` server with
   * `allowHTTP1` on the HTTPS port (default: Fastify's node:https server).
   */
  readonly http2?: boolean;
  /** httpskit only: the process as `httpskit serve` runs it, its young generation held (lib/cli/young-generation.ts). */
  readonly cli?: boolean;
}
