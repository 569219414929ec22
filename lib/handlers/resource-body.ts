// a resource's request body. TEMPORARY until lib/http/json-body.ts (readJsonBody) and
// lib/resources/merge-patch.ts arrive from the lib-bodies branch; then this module only adapts.
import { parseContentType } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import { HttpError, problem } from '../http/problem.js';
import { decodeUtf8Strict } from '../users/prepare.js';

export interface ResourceBodyOptions {
  readonly limit: number;
  readonly types: readonly string[];
  /** `accept-post` / `accept-patch`: sent with a 415, naming `types`. */
  readonly acceptHeader?: 'accept-post' | 'accept-patch';
}

export async function readResourceBody(ctx: RequestContext, o: ResourceBodyOptions): Promise<unknown> {
  const type = parseContentType(ctx.headers['content-type']);
  if (type === undefined || !o.types.includes(type.type) || (type.charset !== undefined && type.charset !== 'utf-8')) {
    throw new HttpError(problem(415, 'unsupported-media-type', { detail: `Send ${o.types.join(' or ')} (UTF-8).` }), o.acceptHeader === undefined ? {} : { [o.acceptHeader]: o.types.join(', ') });
  }
  const text = decodeUtf8Strict(await ctx.readBody(o.limit));
  if (text === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The body is not valid UTF-8.' }));
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(problem(400, 'bad-request', { detail: `The body is not valid JSON: ${(error as Error).message}` }));
  }
}

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}
