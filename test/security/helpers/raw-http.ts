// A deliberately dumb HTTP/1.1 client over TLS for hostile tests: it writes whatever bytes it is
// given (no header validation, no framing of its own) and parses what comes back by hand, so a
// malformed request can reach the server and an odd response cannot hide behind a client library.
import { connect, type TLSSocket } from 'node:tls';

export interface RawTarget {
  readonly host: string;
  readonly port: number;
  readonly ca: string | Buffer;
}

export interface RawResponse {
  readonly status: number;
  /** Status line and header lines as received (latin1). */
  readonly head: string;
  /** Header values by lowercase name, in order of arrival. */
  readonly headers: ReadonlyMap<string, readonly string[]>;
  readonly body: Buffer;
}

export interface Parsed {
  readonly responses: RawResponse[];
  /** Bytes used by the complete responses (1xx interim responses included). */
  readonly consumed: number;
  /** Set when the bytes cannot be a valid response stream. */
  readonly error?: string;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Parses every complete response in `bytes`. `methods[i]` is the method of the i-th request (a HEAD
 * response has no body). With `closed`, the connection has ended: a body without a length ends
 * here and a partial response is an error.
 */
export function parseResponses(bytes: Buffer, methods: readonly string[], closed: boolean): Parsed {
  const responses: RawResponse[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const end = bytes.indexOf(CRLFCRLF, offset);
    if (end < 0) return closed ? { responses, consumed: offset, error: 'connection closed inside a response head' } : { responses, consumed: offset };
    const head = bytes.subarray(offset, end).toString('latin1');
    const lines = head.split('\r\n');
    const statusLine = /^HTTP\/1\.[01] ([1-5][0-9]{2})(?: [^\r\n]*)?$/.exec(lines[0] ?? '');
    if (statusLine === null) return { responses, consumed: offset, error: `bad status line ${JSON.stringify(lines[0])}` };
    const status = Number(statusLine[1]);
    const headers = new Map<string, string[]>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) return { responses, consumed: offset, error: `bad header line ${JSON.stringify(line)}` };
      const name = line.slice(0, colon).toLowerCase();
      const list = headers.get(name) ?? [];
      list.push(line.slice(colon + 1).trim());
      headers.set(name, list);
    }
    const bodyStart = end + CRLFCRLF.length;
    if (status < 200) {
      offset = bodyStart; // interim (100 Continue): the final response follows
      continue;
    }
    const method = methods[responses.length] ?? 'GET';
    let body: Buffer;
    let next: number;
    const length = headers.get('content-length');
    const chunked = (headers.get('transfer-encoding') ?? []).join(',').toLowerCase().includes('chunked');
    const closing = (headers.get('connection') ?? []).some((v) => v.toLowerCase() === 'close');
    if (method === 'HEAD' && closed && closing && length?.length === 1 && bytes.length - bodyStart === Number(length[0])) {
      // A request that did not parse gets its 400 with a body even when it looked like a HEAD:
      // the server cannot trust a method it could not read, and closes right after.
      body = bytes.subarray(bodyStart);
      next = bytes.length;
    } else if (method === 'HEAD' || status === 204 || status === 304) {
      body = Buffer.alloc(0);
      next = bodyStart;
    } else if (chunked) {
      const decoded = decodeChunked(bytes, bodyStart);
      if (decoded === 'incomplete') return closed ? { responses, consumed: offset, error: 'connection closed inside a chunked body' } : { responses, consumed: offset };
      if (decoded === 'invalid') return { responses, consumed: offset, error: 'invalid chunked body' };
      ({ body, next } = decoded);
    } else if (length !== undefined) {
      if (length.length !== 1 || !/^[0-9]+$/.test(length[0] ?? '')) return { responses, consumed: offset, error: `bad Content-Length ${JSON.stringify(length)}` };
      const n = Number(length[0]);
      if (bytes.length < bodyStart + n) return closed ? { responses, consumed: offset, error: 'connection closed inside a body' } : { responses, consumed: offset };
      body = bytes.subarray(bodyStart, bodyStart + n);
      next = bodyStart + n;
    } else {
      if (!closed) return { responses, consumed: offset };
      body = bytes.subarray(bodyStart);
      next = bytes.length;
    }
    responses.push({ status, head, headers, body });
    offset = next;
  }
  return { responses, consumed: offset };
}

function decodeChunked(bytes: Buffer, start: number): { body: Buffer; next: number } | 'incomplete' | 'invalid' {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return 'incomplete';
    const size = /^([0-9a-fA-F]+)(?:;.*)?$/.exec(bytes.subarray(at, lineEnd).toString('latin1'));
    if (size === null) return 'invalid';
    const n = parseInt(size[1] ?? '', 16);
    at = lineEnd + 2;
    if (n === 0) {
      // Trailer section: lines until an empty one.
      for (;;) {
        const e = bytes.indexOf('\r\n', at);
        if (e < 0) return 'incomplete';
        const empty = e === at;
        at = e + 2;
        if (empty) return { body: Buffer.concat(parts), next: at };
      }
    }
    if (bytes.length < at + n + 2) return 'incomplete';
    parts.push(bytes.subarray(at, at + n));
    at += n + 2;
  }
}

/** One TLS connection used for one request at a time (keep-alive, no pipelining). */
export class RawConnection {
  readonly #socket: TLSSocket;
  #buffer: Buffer = Buffer.alloc(0);
  #closed = false;
  #waiter: (() => void) | undefined;

  private constructor(socket: TLSSocket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#waiter?.();
    });
    const onGone = (): void => {
      this.#closed = true;
      this.#waiter?.();
    };
    socket.on('close', onGone);
    socket.on('end', onGone);
    socket.on('error', onGone);
  }

  static open(target: RawTarget): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: target.host, port: target.port, ca: target.ca, servername: 'localhost' }, () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** False once the peer has closed (or announced it will). */
  get usable(): boolean {
    return !this.#closed && !this.#socket.destroyed && this.#socket.writable;
  }

  /**
   * Sends one request and resolves with its response, or 'closed' when the server closed the
   * connection without answering. Rejects when nothing happens within `timeoutMs` (a hang).
   */
  send(request: Buffer, method: string, timeoutMs: number): Promise<RawResponse | { closed: true; error?: string }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        this.close();
        reject(new Error(`no response within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = (): void => {
        const parsed = parseResponses(this.#buffer, [method], this.#closed);
        const response = parsed.responses[0];
        if (response === undefined && parsed.error === undefined && !this.#closed) return;
        clearTimeout(timer);
        this.#waiter = undefined;
        this.#buffer = this.#buffer.subarray(parsed.consumed);
        if (response !== undefined) {
          if ((response.headers.get('connection') ?? []).some((v) => v.toLowerCase() === 'close')) this.#closed = true;
          resolve(response);
        } else {
          this.#closed = true;
          resolve(parsed.error === undefined ? { closed: true } : { closed: true, error: parsed.error });
        }
      };
      this.#waiter = check;
      this.#socket.write(request);
      check();
    });
  }

  close(): void {
    this.#closed = true;
    this.#socket.destroy();
  }
}

/**
 * A fresh connection: writes `request`, half-closes, and collects everything until the server
 * closes. Resolves with the parsed responses; rejects when the server keeps the connection open
 * past `timeoutMs`.
 */
export function exchangeOnce(target: RawTarget, request: Buffer, methods: readonly string[], timeoutMs: number): Promise<Parsed> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: target.host, port: target.port, ca: target.ca, servername: 'localhost' }, () => socket.end(request));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponses(Buffer.concat(chunks), methods, true));
    });
  });
}
