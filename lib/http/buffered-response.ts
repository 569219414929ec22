/**
 * A WHATWG Response whose body is bytes already in memory (A-8's `service.fetch`).
 *
 * The class is made on the first `service.fetch`, not when the library is imported: naming the
 * global `Response` loads Node's fetch implementation (undici), about 3.5 MiB of memory that a
 * server which never answers in-process requests should not carry. It extends Node's Response
 * (`nodeResponse`), not whatever class is in the global's place by then.
 *
 * Node's `new Response(body)` builds a web ReadableStream for every body, which costs more CPU
 * than the whole request through the service (about 10 µs to build and as much again to read, on
 * Node 20). A caller of `service.fetch` mostly reads the body once with `text()` or `json()`, so
 * this Response keeps the bytes and builds the stream only when someone asks for `body` (a
 * framework piping it on, `new Response(res.body, res)`): from then on every body member is the
 * real Response's, so the two paths never disagree about what was read.
 *
 * It is a `Response` (instanceof, status, headers, `clone()`); reading the body twice is the
 * same TypeError, and `bodyUsed` turns true as it does on the standard one.
 */
const defineBufferedResponse = (Base: typeof Response) => class BufferedResponse extends (Base as unknown as ResponseBase) {
  readonly #bytes: Uint8Array;
  #used = false;
  /** The standard Response with the same body, once `body` has been asked for. */
  #streamed: Response | undefined;

  /** `bytes` is the body (never empty of meaning: a null-body Response is a plain `new Response(null)`). */
  constructor(bytes: Uint8Array, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  get body(): ReadableStream<Uint8Array> {
    return this.#standard().body as ReadableStream<Uint8Array>;
  }

  get bodyUsed(): boolean {
    return this.#streamed === undefined ? this.#used : this.#streamed.bodyUsed;
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#read(
      (r) => r.arrayBuffer(),
      (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer,
    );
  }

  bytes(): Promise<Uint8Array> {
    return this.#read(
      (r) => r.arrayBuffer().then((b) => new Uint8Array(b)),
      (b) => new Uint8Array(b),
    );
  }

  text(): Promise<string> {
    return this.#read((r) => r.text(), decodeUtf8);
  }

  json(): Promise<unknown> {
    return this.#read(
      (r) => r.json(),
      (b) => JSON.parse(decodeUtf8(b)) as unknown,
    );
  }

  blob(): Promise<Blob> {
    const type = this.headers.get('content-type') ?? '';
    return this.#read(
      (r) => r.blob(),
      (b) => new Blob([b], { type }),
    );
  }

  formData(): Promise<FormData> {
    return this.#standard().formData();
  }

  clone(): Response {
    if (this.#streamed !== undefined) return this.#streamed.clone();
    if (this.#used) throw new TypeError('Response.clone: Body has already been consumed.');
    return bufferedResponse(this.#bytes, { status: this.status, statusText: this.statusText, headers: this.headers });
  }

  /**
   * The body read once, as the standard's "consume body" (a second read is a rejected TypeError):
   * from the bytes, or by the standard Response once `body` has made one.
   */
  #read<T>(standard: (response: Response) => Promise<T>, fromBytes: (bytes: Uint8Array) => T): Promise<T> {
    if (this.#streamed !== undefined) return standard(this.#streamed);
    if (this.#used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    this.#used = true;
    try {
      return Promise.resolve(fromBytes(this.#bytes));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  #standard(): Response {
    if (this.#streamed === undefined) {
      const streamed = new Base(this.#bytes, { status: this.status, statusText: this.statusText, headers: this.headers });
      // A body already read stays read: the stream is taken, as the standard one's would be.
      if (this.#used) void streamed.arrayBuffer();
      this.#streamed = streamed;
    }
    return this.#streamed;
  }
};

/**
 * Response's constructor, typed as what this class takes of it: the DOM typings declare the body
 * members as properties, so a class that overrides them with methods cannot name Response as its
 * base in TypeScript (at run time it is Response's subclass like any other).
 */
type ResponseBase = new (body: null, init: ResponseInit) => { readonly status: number; readonly statusText: string; readonly headers: Headers };

/** A Response with `bytes` as its body, typed as the Response it is. */
export function bufferedResponse(bytes: Uint8Array, init: ResponseInit): Response {
  BufferedResponse ??= defineBufferedResponse(nodeResponse());
  return new BufferedResponse(bytes, init) as unknown as Response;
}

/**
 * Node's own Response, even where a framework has put its class in the global's place since this
 * module was loaded: `serve()` of @hono/node-server does by default, and its class keeps the body
 * given to its constructor (here none: the bytes are this class's), so every answer would go out
 * with its headers and no body. The global is read as it was at load, without loading undici
 * then: Node defines it as a getter that loads undici and puts the class in the global's place,
 * so the getter is kept, and a class put there by someone else since is put back after it ran.
 */
const nodeResponse: () => typeof Response = (() => {
  const atLoad = Object.getOwnPropertyDescriptor(globalThis, 'Response');
  const getter = atLoad?.get;
  if (getter === undefined) {
    const value = (atLoad?.value as typeof Response | undefined) ?? Response;
    return () => value;
  }
  return () => {
    const now = Object.getOwnPropertyDescriptor(globalThis, 'Response');
    const value = getter.call(globalThis) as typeof Response;
    if (now !== undefined && now.get !== getter) Object.defineProperty(globalThis, 'Response', now);
    return value;
  };
})();

let BufferedResponse: ReturnType<typeof defineBufferedResponse> | undefined;

const UTF8 = new TextDecoder();

/** UTF-8 decode as the Fetch standard's "UTF-8 decode": a leading BOM dropped, bad bytes replaced. */
function decodeUtf8(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}
