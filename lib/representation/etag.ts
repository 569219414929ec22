import { createHash } from 'node:crypto';

/**
 * A strong entity tag for one representation (N-7): a hash of its media type and bytes, so JSON,
 * application/xml and text/xml never share a tag even when their bodies are equal.
 */
export function strongEtag(mediaType: string, body: string): string {
  return `"${createHash('sha256').update(mediaType).update('\0').update(body).digest('base64url').slice(0, 27)}"`;
}
