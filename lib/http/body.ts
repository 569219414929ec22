import { Buffer } from 'node:buffer';
import { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { createMemo } from '../memo.js';
import { HttpError, problem } from './problem.js';
import { isHttp2Request, type HttpRequest } from './messages.js';

/**
 * Where a body is read from: an HTTP/1.1 request, node:http2's compatibility request, or an HTTP/2
 * stream itself (`complete` is the first two's "the whole message arrived").
 */
export type BodySource = Readable & { readonly complete?: boolean };

/**
 * Reads a request body up to `limit` bytes. A declared or actual size past the limit is a 413 and the
 * rest is not read (the reply closes the connection, or over HTTP/2 the stream). A client that
 * aborts mid-body rejects with 400.
 */
export function readBody(source: BodySource, declaredLength: string | undefined, limit: number, contentEncoding?: string | readonly string[]): Promise<Buffer> {
  if (declaredLength !== undefined && Number(declaredLength) > limit) return Promise.reject(tooLarge(limit));
  // An HTTP/2 request whose HEADERS frame ended the stream (no body) has already emitted 'end'
  // before anyone listened: nothing is left to read, and waiting for 'end' would wait for ever.
  // An HTTP/1.1 request that announced a body and has none left was read by someone else: a body
  // parser (express.json()) mounted before service.middleware. What it parsed is taken; anything
  // else is said to be the mount's fault, rather than read as an empty body.
  if (source.readableEnded) {
    if (!announcesBody(source, declaredLength)) return Promise.resolve(EMPTY);
    const parsed = parsedElsewhere(source);
    if (parsed === undefined) return Promise.reject(readElsewhere());
    return parsed.length > limit ? Promise.reject(tooLarge(limit)) : Promise.resolve(parsed);
  }
  // Nothing here decodes a content coding: such a body is refused, never taken as its bytes (after
  // a body parser that decoded it, above, it is plain). Before 100 Continue: the client sends nothing.
  if (contentEncoding !== undefined && !identityOnly(contentEncoding)) return Promise.reject(unsupportedCoding(contentEncoding));
  continueNow(source);
  // The body is read after authentication (P-0), so the client may already be gone (a stream that
  // ended first and was then destroyed, as every Readable is after 'end', was read: above).
  if (source.destroyed || source.readableAborted) return Promise.reject(unreadable());
  // HTTP/1.1: the parser has seen the whole message, which waits in the stream's buffer (a small
  // body comes with its headers): taken in one read, with no listeners and no flowing mode; read()
  // ends the stream. (node:http2's `complete` also means "closed", possibly with a body cut short.)
  if (source instanceof IncomingMessage && source.complete && source.readableFlowing !== true && source.readableObjectMode === false && source.readableEncoding === null) {
    if (source.readableLength > limit) return Promise.reject(tooLarge(limit));
    const buffered = source.read() as Buffer | null;
    return Promise.resolve(buffered ?? EMPTY);
  }
  // An HTTP/2 stream's progress is counted for the session guard (http2-sessions.ts).
  const counted = (source as { readonly session?: unknown }).session !== undefined;
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      source.off('aborted', onAborted);
      source.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (counted) taken.set(source, size);
      if (size > limit) {
        cleanup();
        source.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (): void => {
      cleanup();
      reject(unreadable());
    };
    const onAborted = onError;
    const onClose = (): void => {
      if (source.complete !== true && !source.readableEnded) onError();
    };
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    source.on('aborted', onAborted);
    source.on('close', onClose);
  });
}

const EMPTY = Buffer.alloc(0);

/** Requests that asked `Expect: 100-continue` and have not been told to go on, with the response to tell them by. */
const awaitingContinue = new WeakMap<object, { writeContinue(): void }>();

/** HTTP/2 streams whose body is being read, with the bytes taken so far. */
const taken = new WeakMap<object, number>();

/**
 * L-2, for the HTTP/2 session guard's view of a request still arriving: the bytes of its body read
 * so far (what waits unread is the stream's `readableLength`), and whether the service itself holds
 * back the 100 Continue the client waits for before it sends any.
 */
export function bodyBytesTaken(source: object): number {
  return taken.get(source) ?? 0;
}

export function awaitsContinue(source: object): boolean {
  return awaitingContinue.has(source);
}

/**
 * RFC 9110 §10.1.1: a request that says `Expect: 100-continue` gets `100 Continue` only when its
 * body is about to be read, that is after routing, authentication and the checks that need no body:
 * a refusal (401, 403, 404, 412, 429…) comes instead, and the client never sends a body for nothing.
 * For node:http's and node:http2's 'checkContinue' (the server then sends nothing by itself).
 */
export function continueWhenRead(req: object, res: { writeContinue(): void }): void {
  awaitingContinue.set(req, res);
}

/** Sends the 100 `continueWhenRead` held back, once, as the body is about to be read. */
function continueNow(source: BodySource): void {
  const res = awaitingContinue.get(source);
  if (res === undefined) return;
  awaitingContinue.delete(source);
  res.writeContinue();
}

/**
 * An HTTP/1.1 message off a socket with a body (RFC 9112 §6.3: Content-Length > 0, or
 * Transfer-Encoding). service.fetch's request without a body is no stream: its headers may say
 * what they like, it has nothing to read, and "empty" is the truth.
 */
function announcesBody(source: BodySource, declaredLength: string | undefined): boolean {
  const message = source as BodySource & { readonly httpVersionMajor?: number; readonly headers?: Readonly<Record<string, unknown>> };
  // An HTTP/2 stream has no version; through the compatibility API it says 2 (isHttp2Request).
  if (!(message instanceof Readable) || message.httpVersionMajor === undefined || isHttp2Request(message as HttpRequest)) return false;
  return Number(declaredLength) > 0 || message.headers?.['transfer-encoding'] !== undefined;
}

/**
 * The body a parser mounted before the service left on `req.body`, as bytes again: express.raw()'s
 * Buffer, express.text()'s string, express.json()'s value (as JSON: what it parsed is what the
 * service would have; a bare JSON string, from `strict: false`, is taken as text). Undefined for
 * anything else (a form's fields: no route here takes a form).
 */
function parsedElsewhere(source: BodySource): Buffer | undefined {
  const { body, headers } = source as BodySource & { readonly body?: unknown; readonly headers?: Readonly<Record<string, string | string[] | undefined>> };
  if (body === undefined) return undefined;
  if (Buffer.isBuffer(body)) return body;
  // Text a parser left as text (express.text(), whatever the type) is the body's own text.
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  // A value express.json() parsed (an object, an array; without `strict`, a number, true, null) is JSON again.
  const type = parseContentType(typeof headers?.['content-type'] === 'string' ? headers['content-type'] : undefined)?.type ?? '';
  return type === 'application/json' || type.endsWith('+json') ? Buffer.from(JSON.stringify(body), 'utf8') : undefined;
}

function readElsewhere(): HttpError {
  return new HttpError(problem(500, 'internal', {
    detail: 'The request body was read before this service saw it, and left in no form it takes: mount service.middleware before that body parser.',
  }));
}

function unreadable(): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail: 'The request body could not be read.' }));
}

function tooLarge(limit: number): HttpError {
  return new HttpError(problem(413, 'payload-too-large', { detail: `The request body must be at most ${limit} bytes.`, limit }), {
    connection: 'close',
  });
}

export interface ContentType {
  readonly type: string;
  readonly charset: string | undefined;
}

/**
 * What a 415's detail says was sent: `Content-Type "text/plain;charset=UTF-8"` (cut at 100
 * characters), or `no Content-Type`. A fetch() of a string body without a type sends that one.
 */
export function sentContentType(header: string | undefined): string {
  return header === undefined ? 'no Content-Type' : `Content-Type ${quoted(header)}`;
}

/** A header's value as a detail quotes it: JSON, cut at 100 characters. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

/** Content-Encoding naming no coding but `identity` (RFC 9110 §8.4: the codings applied, in order). */
function identityOnly(header: string | readonly string[]): boolean {
  const list = typeof header === 'string' ? header : header.join(',');
  return list.split(',').every((coding) => {
    const name = coding.trim().toLowerCase();
    return name === '' || name === 'identity';
  });
}

/** RFC 9110 §15.5.16: 415 for a content coding, with Accept-Encoding saying which the server takes (none but identity). */
function unsupportedCoding(header: string | readonly string[]): HttpError {
  const sent = typeof header === 'string' ? header : header.join(', ');
  return new HttpError(problem(415, 'unsupported-media-type', { detail: `The body was sent with Content-Encoding ${quoted(sent)}: send it without a content coding.` }), { 'accept-encoding': 'identity' });
}

/** A 415 for a body of another type: what was sent, then `hint`, what to send. */
export function unsupportedBody(header: string | undefined, hint: string): HttpError {
  return new HttpError(problem(415, 'unsupported-media-type', { detail: `The body was sent with ${sentContentType(header)}. ${hint}` }));
}

/** Media type of a Content-Type header, lowercased, and its charset parameter (lowercased) if any. */
export function parseContentType(header: string | undefined): ContentType | undefined {
  return header === undefined ? undefined : contentTypeOf(header);
}

// Clients send the same few Content-Types: each parsed at most twice (a frozen result, shared; lib/memo.ts).
const contentTypeOf = createMemo(parseContentTypeOnce, { size: 64, maxKeyLength: 256 });

function parseContentTypeOnce(header: string): ContentType | undefined {
  const parts = header.split(';');
  const type = (parts[0] ?? '').trim().toLowerCase();
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/.test(type)) return undefined;
  let charset: string | undefined;
  for (const p of parts.slice(1)) {
    const eq = p.indexOf('=');
    if (eq < 0) {
      if (p.trim() === '') continue;
      return undefined;
    }
    const name = p.slice(0, eq).trim().toLowerCase();
    let value = p.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    // `utf8` names UTF-8 too (the WHATWG Encoding Standard's label), as an Accept range's charset does.
    if (name === 'charset') charset = value.toLowerCase() === 'utf8' ? 'utf-8' : value.toLowerCase();
  }
  return Object.freeze({ type, charset });
}
