import type { HttpRequest } from './messages.js';
import { HttpError, problem } from './problem.js';

/**
 * Reads a request body up to `limit` bytes. A declared or actual size past the limit is a 413 and the
 * rest is not read (the reply closes the connection). A client that aborts mid-body rejects with 400.
 */
export function readBody(req: HttpRequest, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  // The body is read after authentication (P-0), so the client may already be gone.
  if (req.destroyed || req.readableAborted) return Promise.reject(unreadable());
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
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
      if (!req.complete) onError();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
    req.on('close', onClose);
  });
}

function unreadable(): HttpError {
  return new HttpError(problem(400, 'bad-request', { detail: 'The request body could not be read.' }));
}

function tooLarge(limit: number): HttpError {
  return new HttpError(problem(413, 'payload-too-large', { detail: `The request body must be at most ${limit} bytes.`, limit }), {
    connection: 'close',
  });
}

/** Media type of a Content-Type header, lowercased, and its charset parameter (lowercased) if any. */
export function parseContentType(header: string | undefined): { readonly type: string; readonly charset: string | undefined } | undefined {
  if (header === undefined) return undefined;
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
    if (name === 'charset') charset = value.toLowerCase();
  }
  return { type, charset };
}
