// JSON keys → XML element names and back (N-11): lossless and deterministic; see xml.ts for the mapping.

import { argumentError } from '../validate.js';

const EMPTY_NAME = '_x_';

/** Map a JSON key to an XML element name, losslessly (see the mapping above). */
export function encodeXmlName(key: string): string {
  if (typeof key !== 'string') throw argumentError(`encodeXmlName expects a string, got ${typeof key}`);
  return encodeName(key);
}

/** encodeXmlName without the argument check, for the serializer's hot path. */
export function encodeName(key: string): string {
  if (isPlainName(key)) return key;
  if (key === '') return EMPTY_NAME;
  const length = key.length;
  let out = '';
  for (let i = 0; i < length; ) {
    let cp = key.charCodeAt(i);
    let width = 1;
    if (cp >= 0xd800 && cp <= 0xdbff) {
      const next = key.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        cp = ((cp - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
        width = 2;
      }
    }
    const keep =
      i === 0
        ? isNameStartChar(cp) && !startsWithXml(key)
        : isNameStartChar(cp) || isNameOnlyChar(cp);
    if (keep && !(cp === 0x5f && key.charCodeAt(i + 1) === 0x78)) out += key.slice(i, i + width);
    else out += cp > 0xffff ? `_x${hex(cp, 6)}_` : `_x${hex(cp, 4)}_`;
    i += width;
  }
  return out;
}

/** The exact inverse of encodeXmlName; an `_x` that is not a well-formed escape is kept as text. */
export function decodeXmlName(name: string): string {
  if (typeof name !== 'string') throw argumentError(`decodeXmlName expects a string, got ${typeof name}`);
  if (name === EMPTY_NAME) return '';
  let at = name.indexOf('_x');
  if (at < 0) return name;
  let out = '';
  let from = 0;
  while (at >= 0) {
    let end = -1;
    if (isHexRun(name, at + 2, 4) && name.charCodeAt(at + 6) === 0x5f) end = at + 7;
    else if (isHexRun(name, at + 2, 6) && name.charCodeAt(at + 8) === 0x5f) end = at + 9;
    const cp = end < 0 ? -1 : Number.parseInt(name.slice(at + 2, end - 1), 16);
    if (cp >= 0 && cp <= 0x10ffff) {
      out += name.slice(from, at) + String.fromCodePoint(cp);
      from = end;
      at = name.indexOf('_x', end);
    } else {
      at = name.indexOf('_x', at + 1);
    }
  }
  return out + name.slice(from);
}

/** Fast path: ASCII letters, `_`, and after the first place digits, `-`, `.`; no `_x`, no `xml…`. */
function isPlainName(key: string): boolean {
  const length = key.length;
  if (length === 0 || startsWithXml(key)) return false;
  for (let i = 0; i < length; i++) {
    const c = key.charCodeAt(i);
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) continue;
    if (c === 95) {
      if (key.charCodeAt(i + 1) === 120) return false;
      continue;
    }
    if (i > 0 && ((c >= 48 && c <= 57) || c === 45 || c === 46)) continue;
    return false;
  }
  return true;
}

function startsWithXml(key: string): boolean {
  return (
    key.length >= 3 &&
    (key.charCodeAt(0) | 0x20) === 0x78 &&
    (key.charCodeAt(1) | 0x20) === 0x6d &&
    (key.charCodeAt(2) | 0x20) === 0x6c
  );
}

// Checks an option value, so names starting with 'xml' (reserved, yet well-formed) pass.
export function isNCName(name: unknown): name is string {
  if (typeof name !== 'string' || name === '') return false;
  let first = true;
  for (const char of name) {
    const cp = char.codePointAt(0)!;
    if (!(isNameStartChar(cp) || (!first && isNameOnlyChar(cp)))) return false;
    first = false;
  }
  return true;
}

// XML 1.0 (5th ed.) §2.3 NameStartChar, without ':' (Namespaces in XML 1.0 §3, NCName).
function isNameStartChar(c: number): boolean {
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f;
  return (
    (c >= 0xc0 && c <= 0xd6) ||
    (c >= 0xd8 && c <= 0xf6) ||
    (c >= 0xf8 && c <= 0x2ff) ||
    (c >= 0x370 && c <= 0x37d) ||
    (c >= 0x37f && c <= 0x1fff) ||
    c === 0x200c ||
    c === 0x200d ||
    (c >= 0x2070 && c <= 0x218f) ||
    (c >= 0x2c00 && c <= 0x2fef) ||
    (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) ||
    (c >= 0xfdf0 && c <= 0xfffd) ||
    (c >= 0x10000 && c <= 0xeffff)
  );
}

// The rest of §2.3 NameChar: allowed after the first character only.
function isNameOnlyChar(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2d ||
    c === 0x2e ||
    c === 0xb7 ||
    (c >= 0x300 && c <= 0x36f) ||
    c === 0x203f ||
    c === 0x2040
  );
}

function isHexRun(text: string, start: number, count: number): boolean {
  if (start + count > text.length) return false;
  for (let i = start; i < start + count; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46))) return false;
  }
  return true;
}

function hex(cp: number, digits: number): string {
  return cp.toString(16).toUpperCase().padStart(digits, '0');
}
