// A lean open-loop HTTPS/1.1 keep-alive client for the load generator (load.ts, `paced` with
// `raw: true`): fixed request bytes on raw TLS sockets, responses framed by Content-Length. The
// node:https Agent of `paced` needs about as much CPU per request as the server it drives, so one
// core sends at most some 2,500 requests/s with it; this one sends several times that, which lets
// logshare.ts drive two servers at once at rates nearer what they can serve.
import { connect, type TLSSocket } from 'node:tls';
import type { LoadResult } from './load.js';
import { percentile } from './stats.js';

export interface PacedTlsRequest {
  readonly url: string;
  readonly ratePerSecond: number;
  readonly seconds: number;
  readonly sockets: number;
  readonly keep?: boolean;
}

/** A connection kept open for the next run, with a way to take this run's listeners off it. */
export interface KeptSocket {
  readonly socket: TLSSocket;
  readonly off: () => void;
}

interface Connection {
  readonly socket: TLSSocket;
  buffer: string;
  /** When the request in flight was sent; undefined when the connection is idle. */
  sentAt: number | undefined;
}

function open(url: URL): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * `ratePerSecond` × `seconds` GETs, each sent when it falls due (a 1 ms tick) on an idle connection
 * or, when all `sockets` are busy, as soon as one is free. One request per connection goes first,
 * to open them (they count, as in `paced`). `kept` holds connections asked to stay open between runs.
 */
export async function pacedTls(cmd: PacedTlsRequest, kept: Map<string, KeptSocket[]>): Promise<LoadResult> {
  const url = new URL(cmd.url);
  const head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: application/json\r\n\r\n`;
  const before = kept.get(cmd.url);
  kept.delete(cmd.url);
  for (const k of before ?? []) k.off();
  const sockets = before?.map((k) => k.socket) ?? (await Promise.all(Array.from({ length: cmd.sockets }, () => open(url))));
  const connections: Connection[] = sockets.map((socket) => ({ socket, buffer: '', sentAt: undefined }));
  const idle: Connection[] = [];
  const latencies: number[] = [];
  let failed = 0;
  let queued = 0;
  let sent = 0;
  const total = Math.round(cmd.seconds * cmd.ratePerSecond) + connections.length;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const done = (): void => {
    if (latencies.length + failed === total) finish();
  };
  const send = (c: Connection): void => {
    c.sentAt = performance.now();
    sent++;
    c.socket.write(head);
  };
  const next = (c: Connection): void => {
    if (queued > 0) {
      queued--;
      send(c);
    } else idle.push(c);
  };
  const listeners = connections.map((c): KeptSocket => {
    c.socket.setEncoding('latin1');
    const onData = (chunk: string): void => {
      c.buffer += chunk;
      for (;;) {
        const end = c.buffer.indexOf('\r\n\r\n');
        if (end === -1 || c.sentAt === undefined) return;
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(c.buffer.slice(0, end));
        if (length === null) {
          // No framing this client reads: the connection is of no further use.
          c.socket.destroy();
          return;
        }
        const size = end + 4 + Number(length[1]);
        if (c.buffer.length < size) return;
        if (c.buffer.startsWith('HTTP/1.1 200 ')) latencies.push(performance.now() - c.sentAt);
        else failed++;
        c.buffer = c.buffer.slice(size);
        c.sentAt = undefined;
        done();
        next(c);
      }
    };
    const onError = (): void => {};
    const onClose = (): void => {
      // The request in flight and those no connection is left to send fail.
      if (c.sentAt !== undefined) failed++;
      c.sentAt = undefined;
      const i = idle.indexOf(c);
      if (i !== -1) idle.splice(i, 1);
      if (connections.every((other) => other.socket.destroyed)) failed += total - sent;
      done();
    };
    c.socket.on('data', onData).on('error', onError).on('close', onClose);
    return { socket: c.socket, off: () => void c.socket.off('data', onData).off('error', onError).off('close', onClose) };
  });
  for (const c of connections) send(c);
  const start = performance.now();
  while (sent + queued < total) {
    const due = Math.min(total, connections.length + Math.floor(((performance.now() - start) / 1000) * cmd.ratePerSecond) + 1);
    for (; sent + queued < due; ) {
      const c = idle.pop();
      if (c === undefined) queued++;
      else send(c);
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await finished;
  const seconds = (performance.now() - start) / 1000;
  if (cmd.keep === true) kept.set(cmd.url, listeners);
  else for (const socket of sockets) socket.destroy();
  return { ok: latencies.length, failed, seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}
