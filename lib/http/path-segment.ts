// One path segment of a URL the service writes (Location, Content-Location, Link): the text
// percent-encoded so that it stays one segment and names exactly that text.

import { parseFormat } from '../representation/select.js';

const DOT_SEGMENT = /^\.\.?$/;

/** `.` or `..`: a segment RFC 3986 §5.2.4 removes from a path, unless its dots are percent-encoded. */
export function isDotSegment(segment: string): boolean {
  return DOT_SEGMENT.test(segment);
}

/**
 * `text` as a path segment: percent-encoded as `encodeURIComponent` does, and a dot-only result
 * (`.`, `..`) with its dots as `%2E` (U-2, amended 2026-11-27), which RFC 3986 clients (curl)
 * send as they are. (WHATWG URL parsers, browsers and `fetch`, treat `%2E%2E` as `..` too: no
 * spelling of such a segment survives them.)
 */
export function pathSegment(text: string): string {
  const encoded = encodeURIComponent(text);
  return isDotSegment(encoded) ? encoded.replaceAll('.', '%2E') : encoded;
}

/**
 * `text` as a path segment where a literal `.json`/`.xml` ending chooses a representation (N-1,
 * U-2, A-5's `/api/<name>/<id>`): `pathSegment`, and an ending that would read as an extension
 * has its dot as `%2E`, so the path names `text` itself (`a.json` → `a%2Ejson`).
 */
export function bareSegment(text: string): string {
  const encoded = pathSegment(text);
  const dot = encoded.lastIndexOf('.');
  return dot >= 0 && parseFormat(encoded.slice(dot + 1)) !== undefined ? `${encoded.slice(0, dot)}%2E${encoded.slice(dot + 1)}` : encoded;
}
