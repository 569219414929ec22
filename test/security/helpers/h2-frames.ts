// A deliberately dumb HTTP/2 client (RFC 9113) for hostile tests: it writes whatever frames it is
// told to, in any number, without waiting for acknowledgements or honouring the server's
// SETTINGS, and records the frames that come back. Node's own client would refuse to misbehave.
import { connect, type TLSSocket } from 'node:tls';

export const FRAME = { DATA: 0x0, HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, PING: 0x6, GOAWAY: 0x7, WINDOW_UPDATE: 0x8 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;
/** RFC 9113 §7 error codes. */
export const ERROR = { NO_ERROR: 0x0, PROTOCOL_ERROR: 0x1, CANCEL: 0x8, REFUSED_STREAM: 0x7, ENHANCE_YOUR_CALM: 0xb } as const;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

export function settingsFrame(entries: ReadonlyArray<readonly [id: number, value: number]> = []): Buffer {
  const payload = Buffer.alloc(entries.length * 6);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FRAME.SETTINGS, 0, 0, payload);
}

export function pingFrame(n: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(n >>> 0, 4);
  return frame(FRAME.PING, 0, 0, payload);
}

/** WINDOW_UPDATE: `bytes` more for stream `streamId` (0: the connection). */
export function windowUpdateFrame(streamId: number, bytes: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(bytes, 0);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, payload);
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code, 0);
  return frame(FRAME.RST_STREAM, 0, streamId, payload);
}

/** HPACK integer with an n-bit prefix (RFC 7541 §5.1). */
function hpackInteger(value: number, prefixBits: number, firstByte: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByte | value];
  const out = [firstByte | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** A literal field without indexing, name from the static table (RFC 7541 §6.2.2), raw octets. */
function literal(nameIndex: number, value: string): Buffer {
  const bytes = Buffer.from(value, 'latin1');
  return Buffer.concat([Buffer.from(hpackInteger(nameIndex, 4, 0x00)), Buffer.from(hpackInteger(bytes.length, 7, 0x00)), bytes]);
}

/** A literal field without indexing with a new name. */
function literalNew(name: string, value: string): Buffer {
  const n = Buffer.from(name, 'latin1');
  const v = Buffer.from(value, 'latin1');
  return Buffer.concat([Buffer.from([0x00]), Buffer.from(hpackInteger(n.length, 7, 0)), n, Buffer.from(hpackInteger(v.length, 7, 0)), v]);
}

/**
 * A request's HEADERS frame: `:method` from the static table (GET 2, POST 3) or literal, `:scheme
 * https` (7), `:path` (index 4), `:authority` (index 1), then any extra fields.
 */
export function headersFrame(
  streamId: number,
  { method = 'GET', path = '/', endStream = true, extra = [] }: { method?: string; path?: string; endStream?: boolean; extra?: ReadonlyArray<readonly [string, string]> } = {},
): Buffer {
  const methodField = method === 'GET' ? Buffer.from([0x82]) : method === 'POST' ? Buffer.from([0x83]) : literal(2, method);
  const block = Buffer.concat([methodField, Buffer.from([0x87]), literal(4, path), literal(1, 'localhost'), ...extra.map(([n, v]) => literalNew(n, v))]);
  return frame(FRAME.HEADERS, FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0), streamId, block);
}

/** One raw HTTP/2 connection over TLS (ALPN h2) that records the server's frames. */
export class RawH2 {
  readonly frames: Frame[] = [];
  readonly #socket: TLSSocket;
  #buffer = Buffer.alloc(0);
  #closed = false;
  readonly closed: Promise<void>;

  private constructor(socket: TLSSocket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      while (this.#buffer.length >= 9) {
        const length = this.#buffer.readUIntBE(0, 3);
        if (this.#buffer.length < 9 + length) break;
        this.frames.push({
          type: this.#buffer.readUInt8(3),
          flags: this.#buffer.readUInt8(4),
          streamId: this.#buffer.readUInt32BE(5) & 0x7fffffff,
          payload: this.#buffer.subarray(9, 9 + length),
        });
        this.#buffer = this.#buffer.subarray(9 + length);
      }
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => (this.#closed = true));
  }

  /** Connects, negotiates h2 and sends the connection preface with an empty SETTINGS frame. */
  static open(port: number, ca: string | Buffer): Promise<RawH2> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] }, () => {
        if (socket.alpnProtocol !== 'h2') {
          socket.destroy();
          reject(new Error(`the server did not negotiate h2 (ALPN: ${String(socket.alpnProtocol)})`));
          return;
        }
        socket.off('error', reject);
        socket.write(Buffer.concat([PREFACE, settingsFrame()]));
        resolve(new RawH2(socket));
      });
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  /** Writes frames; resolves once they are handed to the kernel (or the socket is gone). */
  write(...frames: Buffer[]): Promise<void> {
    return new Promise((resolve) => {
      if (this.#socket.destroyed || !this.#socket.writable) {
        resolve();
        return;
      }
      this.#socket.write(Buffer.concat(frames), () => resolve());
    });
  }

  /** Stops reading what the server sends (its writes back up), or resumes. */
  reading(on: boolean): void {
    if (on) this.#socket.resume();
    else this.#socket.pause();
  }

  /** Waits until a recorded frame matches, or `ms` pass; resolves with it or undefined. */
  async waitFor(match: (f: Frame) => boolean, ms: number): Promise<Frame | undefined> {
    const started = performance.now();
    for (;;) {
      const found = this.frames.find(match);
      if (found !== undefined || performance.now() - started > ms) return found;
      if (this.#closed) return this.frames.find(match);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export function errorCode(f: Frame): number {
  return f.type === FRAME.GOAWAY ? f.payload.readUInt32BE(4) : f.payload.readUInt32BE(0);
}
