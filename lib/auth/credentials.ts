// The generic grammar of an Authorization header value (RFC 9110 §11.4):
//
//   credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//   auth-param  = token BWS "=" BWS ( token / quoted-string )
//   token68     = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//
// Everything here scans left to right once (no regex backtracking) and never
// throws: the input came off the wire. Node hands header values over as
// Latin-1 strings (one char per octet), so a char above U+00FF cannot have
// come from the wire and is refused wherever octets are expected.

/** An Authorization value split into its scheme (lower-cased) and the rest (trimmed). */
export interface SplitCredentials {
  readonly scheme: string;
  readonly rest: string;
}

/** One auth-param value, unquoted; `quoted` says which form it arrived in. */
export interface AuthParam {
  readonly value: string;
  readonly quoted: boolean;
}

/**
 * Splits `Scheme rest` at the first whitespace. The scheme is compared
 * case-insensitively (RFC 9110 §11.1), so it comes back lower-cased.
 */
export function splitCredentials(header: string): SplitCredentials {
  let start = 0;
  while (start < header.length && isWhitespace(header.charCodeAt(start))) start++;
  let end = start;
  while (end < header.length && !isWhitespace(header.charCodeAt(end))) end++;
  const scheme = header.slice(start, end).toLowerCase();
  let restStart = end;
  while (restStart < header.length && isWhitespace(header.charCodeAt(restStart))) restStart++;
  let restEnd = header.length;
  while (restEnd > restStart && isWhitespace(header.charCodeAt(restEnd - 1))) restEnd--;
  return { scheme, rest: header.slice(restStart, restEnd) };
}

/** True when `value` matches token68 (RFC 9110 §11.2), which is also RFC 6750's b64token. */
export function isToken68(value: string): boolean {
  let i = 0;
  while (i < value.length && isToken68Char(value.charCodeAt(i))) i++;
  if (i === 0) return false;
  while (i < value.length && value.charCodeAt(i) === 0x3d /* = */) i++;
  return i === value.length;
}

/**
 * Parses a comma-separated auth-param list. Names are lower-cased (RFC 9110
 * §11.2: case-insensitive). Returns undefined on any syntax error and on a
 * repeated name (RFC 7616 §3.4 and RFC 9110 §11.2: each may occur only once).
 * Empty list elements (", ,") are allowed, as RFC 9110 §5.6.1 asks recipients to.
 */
export function parseAuthParams(input: string): ReadonlyMap<string, AuthParam> | undefined {
  const params = new Map<string, AuthParam>();
  const length = input.length;
  let i = 0;
  for (;;) {
    // Skip OWS and empty list elements.
    while (i < length && (isWhitespace(input.charCodeAt(i)) || input.charCodeAt(i) === 0x2c)) i++;
    if (i >= length) return params;

    const nameStart = i;
    while (i < length && isTokenChar(input.charCodeAt(i))) i++;
    if (i === nameStart) return undefined;
    const name = input.slice(nameStart, i).toLowerCase();

    while (i < length && isWhitespace(input.charCodeAt(i))) i++;
    if (input.charCodeAt(i) !== 0x3d /* = */) return undefined; // a bare token or token68: not a param list
    i++;
    while (i < length && isWhitespace(input.charCodeAt(i))) i++;

    let param: AuthParam;
    if (input.charCodeAt(i) === 0x22 /* " */) {
      const parsed = readQuotedString(input, i);
      if (parsed === undefined) return undefined;
      param = { value: parsed.value, quoted: true };
      i = parsed.end;
    } else {
      const valueStart = i;
      while (i < length && isTokenChar(input.charCodeAt(i))) i++;
      if (i === valueStart) return undefined;
      param = { value: input.slice(valueStart, i), quoted: false };
    }

    if (params.has(name)) return undefined;
    params.set(name, param);

    while (i < length && isWhitespace(input.charCodeAt(i))) i++;
    if (i < length && input.charCodeAt(i) !== 0x2c /* , */) return undefined;
  }
}

// quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE   (RFC 9110 §5.6.4)
// qdtext        = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
// quoted-pair   = "\" ( HTAB / SP / VCHAR / obs-text )
function readQuotedString(input: string, open: number): { value: string; end: number } | undefined {
  const parts: string[] = [];
  let runStart = open + 1;
  let i = open + 1;
  while (i < input.length) {
    const c = input.charCodeAt(i);
    if (c === 0x22) {
      parts.push(input.slice(runStart, i));
      return { value: parts.join(''), end: i + 1 };
    }
    if (c === 0x5c /* \ */) {
      const next = input.charCodeAt(i + 1);
      if (!isQuotableChar(next)) return undefined;
      parts.push(input.slice(runStart, i));
      runStart = i + 1; // keep the escaped char, drop the backslash
      i += 2;
      continue;
    }
    if (!isQuotableChar(c)) return undefined;
    i++;
  }
  return undefined; // unterminated
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

// HTAB / SP / VCHAR / obs-text; NaN (past the end) is false.
function isQuotableChar(c: number): boolean {
  return c === 0x09 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}

// tchar (RFC 9110 §5.6.2): "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
function isTokenChar(c: number): boolean {
  if (isAlphaNumeric(c)) return true;
  switch (c) {
    case 0x21: case 0x23: case 0x24: case 0x25: case 0x26: case 0x27: case 0x2a: case 0x2b:
    case 0x2d: case 0x2e: case 0x5e: case 0x5f: case 0x60: case 0x7c: case 0x7e:
      return true;
    default:
      return false;
  }
}

function isToken68Char(c: number): boolean {
  return isAlphaNumeric(c) || c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e || c === 0x2b || c === 0x2f;
}

function isAlphaNumeric(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
