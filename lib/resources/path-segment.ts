import { parseFormat } from '../representation/select.js';

/**
 * An id (or name) as one path segment of a URL the service writes (A-5's Location, U-2): percent-
 * encoded; an ending that would read as an extension (`a.json`) has its dot encoded, and so do
 * `.` and `..` (RFC 3986 §5.2.4 would remove them as dot-segments), so the path names the item.
 */
export function pathSegment(id: string): string {
  const encoded = encodeURIComponent(id);
  if (encoded === '.' || encoded === '..') return encoded.replaceAll('.', '%2E');
  const dot = encoded.lastIndexOf('.');
  if (dot >= 0 && parseFormat(encoded.slice(dot + 1)) !== undefined) return `${encoded.slice(0, dot)}%2E${encoded.slice(dot + 1)}`;
  return encoded;
}
