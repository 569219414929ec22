// The Accept scanner shared by parseAccept(), negotiate() and the reading of offered types (a media
// type is an Accept entry without a weight): one grammar, one linear pass. Internal: not exported
// from lib/index.ts.

/** Entries past this many non-empty list elements are ignored (bounded work per request). */
export const MAX_ACCEPT_ENTRIES = 64;
/**
 * Only the first 8 KiB of the header is read; an entry not finished within it is ignored
 * (a cut `application/json;q=0.5` must not turn into `application/json`). The server limits whole
 * header blocks to 16 KiB (L-1), so real headers are never cut.
 */
export const MAX_ACCEPT_LENGTH = 8192;

const SP = 0x20;
const HTAB = 0x09;
const COMMA = 0x2c;
const SEMI = 0x3b;
const SLASH = 0x2f;
const EQUALS = 0x3d;
const DQUOTE = 0x22;
const BACKSLASH = 0x5c;
const STAR = 0x2a;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

// tchar (RFC 9110 §5.6.2): "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
// A lookup table: the scanner tests every character of the header against it.
const TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const TCHAR: Readonly<Uint8Array> = Uint8Array.from({ length: 128 }, (_, c) => (TCHARS.includes(String.fromCharCode(c)) ? 1 : 0));

function isTchar(c: number): boolean {
  return c < 128 && TCHAR[c] === 1;
}

// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text; quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
function isQuotedPairChar(c: number): boolean {
  return c === HTAB || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}

/**
 * A cursor over the valid entries of one `Accept` header, shared by `parseAccept`, `negotiate` and
 * `parseOfferedTypes` so that all read media types by one grammar. Internal: not exported from lib/index.ts.
 * It allocates nothing for ranges without parameters, hence the fields instead of objects.
 *
 * ```
 * Accept      = #( media-range [ weight ] )                        ; RFC 9110 §12.5.1
 * media-range = ( "*" "/" "*" / ( type "/" "*" ) / ( type "/" subtype ) ) parameters
 * parameters  = *( OWS ";" OWS [ parameter ] )                       ; §5.6.6
 * parameter   = parameter-name "=" ( token / quoted-string )
 * weight      = OWS ";" OWS "q=" qvalue                              ; §12.4.2
 * qvalue      = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
 * accept-ext  = OWS ";" OWS token [ "=" ( token / quoted-string ) ] ; RFC 7231, after q: ignored
 * ```
 * Leniencies: empty list elements are skipped (§5.6.1); whitespace around "=" is tolerated; the
 * legacy qvalue form ".5" is read as 0.5. An entry that breaks the grammar is skipped up to the
 * next comma outside a quoted-string, and the other entries still count.
 * Each character is visited a bounded number of times, so the work is linear in the (capped) length.
 */
export class AcceptScanner {
  /** Type and subtype of the current entry, as index ranges into `header` (not lowercased). */
  typeStart = 0;
  typeEnd = 0;
  subtypeStart = 0;
  subtypeEnd = 0;
  /** Weight in thousandths (0..1000), so comparisons are exact. */
  qMillis = 1000;
  position = 0;
  /** The current entry has a `charset` parameter naming UTF-8 (the first one counts) and no other parameter. */
  charsetUtf8 = false;
  /** The current entry has a parameter other than `charset=utf-8`, so it needs that parameter on an offered type. */
  foreign = false;
  /** Parameters of the current entry, only when created with `collect` and the entry has any. */
  params: Map<string, string> | undefined = undefined;
  /** The current entry has a weight (`q`): an offered type must not. */
  weighted = false;
  /** Non-empty list elements met so far, valid or not (at most MAX_ACCEPT_ENTRIES). */
  seen = 0;

  /** The header being read (empty after `reset(undefined)`). */
  header = '';
  #index = 0;
  #limit = 0;
  #truncated = false;
  readonly #collect: boolean;

  constructor(collect: boolean) {
    this.#collect = collect;
  }

  /** Starts over on a new header; `undefined` reads as an empty one. */
  reset(header: string | undefined): void {
    const text = header ?? '';
    this.header = text;
    this.#index = 0;
    this.#truncated = text.length > MAX_ACCEPT_LENGTH;
    this.#limit = this.#truncated ? MAX_ACCEPT_LENGTH : text.length;
    this.seen = 0;
  }

  /** Index just past the current entry (its ending comma, or the end of what is read). */
  get end(): number {
    return this.#index;
  }

  /** Moves to the next valid entry; false when there is none left (or the caps are reached). */
  next(): boolean {
    const h = this.header;
    const limit = this.#limit;
    let i = this.#index;
    for (;;) {
      // OWS and empty list elements (RFC 9110 §5.6.1: a recipient ignores them).
      while (i < limit) {
        const c = h.charCodeAt(i);
        if (c !== SP && c !== HTAB && c !== COMMA) break;
        i++;
      }
      if (i >= limit || this.seen >= MAX_ACCEPT_ENTRIES) {
        this.#index = limit;
        return false;
      }
      const position = this.seen++;
      const ok = this.#entry(i);
      i = this.#index;
      // An entry running into the length cap may have lost its tail (its q, say): drop it.
      if (ok && (i < limit || !this.#truncated || h.charCodeAt(i) === COMMA)) {
        this.position = position;
        return true;
      }
    }
  }

  /** Parses one entry starting at a non-blank character; leaves #index at its ending comma (or the limit). */
  #entry(start: number): boolean {
    const h = this.header;
    const limit = this.#limit;
    let i = start;

    this.typeStart = i;
    while (i < limit && isTchar(h.charCodeAt(i))) i++;
    this.typeEnd = i;
    if (i === start || i >= limit || h.charCodeAt(i) !== SLASH) return this.#fail(i);
    i++;
    this.subtypeStart = i;
    while (i < limit && isTchar(h.charCodeAt(i))) i++;
    this.subtypeEnd = i;
    if (i === this.subtypeStart) return this.#fail(i);
    const starType = this.typeEnd - this.typeStart === 1 && h.charCodeAt(this.typeStart) === STAR;
    const starSubtype = this.subtypeEnd - this.subtypeStart === 1 && h.charCodeAt(this.subtypeStart) === STAR;
    if (starType && !starSubtype) return this.#fail(i); // "*/json" is not a media range

    this.qMillis = 1000;
    this.charsetUtf8 = false;
    this.foreign = false;
    this.params = undefined;
    this.weighted = false;
    let afterQ = false;
    let charsetSeen = false;

    for (;;) {
      while (i < limit && (h.charCodeAt(i) === SP || h.charCodeAt(i) === HTAB)) i++;
      if (i >= limit || h.charCodeAt(i) === COMMA) break;
      if (h.charCodeAt(i) !== SEMI) return this.#fail(i);
      i++;
      while (i < limit && (h.charCodeAt(i) === SP || h.charCodeAt(i) === HTAB)) i++;
      if (i >= limit) break;
      const first = h.charCodeAt(i);
      if (first === SEMI || first === COMMA) continue; // empty parameter: parameters = *( OWS ";" OWS [ parameter ] )

      const nameStart = i;
      while (i < limit && isTchar(h.charCodeAt(i))) i++;
      const nameEnd = i;
      if (nameEnd === nameStart) return this.#fail(i);
      while (i < limit && (h.charCodeAt(i) === SP || h.charCodeAt(i) === HTAB)) i++;
      if (i >= limit || h.charCodeAt(i) !== EQUALS) {
        if (afterQ) continue; // accept-ext may be a bare token
        return this.#fail(i);
      }
      i++;
      while (i < limit && (h.charCodeAt(i) === SP || h.charCodeAt(i) === HTAB)) i++;
      if (i >= limit) return this.#fail(i);

      const isQ = !afterQ && nameEnd - nameStart === 1 && (h.charCodeAt(nameStart) | 0x20) === 0x71;
      if (isQ) {
        const end = this.#qvalue(i);
        if (end < 0) return this.#fail(i);
        i = end;
        afterQ = true;
        this.weighted = true;
        continue;
      }

      const valueStart = i;
      let quoted = false;
      let escaped = false;
      if (h.charCodeAt(i) === DQUOTE) {
        quoted = true;
        i++;
        let valid = true;
        for (;;) {
          if (i >= limit) return this.#fail(i); // unterminated: the rest of the header is inside it
          const c = h.charCodeAt(i);
          if (c === DQUOTE) break;
          if (c === BACKSLASH) {
            escaped = true;
            i++;
            if (i >= limit) return this.#fail(i);
            if (!isQuotedPairChar(h.charCodeAt(i))) valid = false;
          } else if (c === 0x7f || (c < 0x20 && c !== HTAB) || c > 0xff) {
            valid = false;
          }
          i++;
        }
        i++; // closing quote
        if (!valid) return this.#fail(i);
      } else {
        while (i < limit && isTchar(h.charCodeAt(i))) i++;
        if (i === valueStart) return this.#fail(i);
      }
      if (afterQ) continue; // accept-ext: syntax checked, meaning ignored

      // Only the first `charset` counts, as only the first of any repeated name is kept in `params`.
      const charset = isCharset(h, nameStart, nameEnd) && !charsetSeen;
      if (charset) charsetSeen = true;
      else if (!isCharset(h, nameStart, nameEnd)) this.foreign = true;
      if (charset) {
        // N-2: the service only sends UTF-8; "utf8" is the WHATWG Encoding label for it.
        const utf8 = escaped ? isUtf8Label(unquote(h, valueStart, i, true, true), 0, -1) : quoted ? isUtf8Label(h, valueStart + 1, i - 1) : isUtf8Label(h, valueStart, i);
        if (utf8) this.charsetUtf8 = true;
        else this.foreign = true;
      }
      if (this.#collect) {
        const params = (this.params ??= new Map());
        const name = h.slice(nameStart, nameEnd).toLowerCase();
        if (!params.has(name)) params.set(name, unquote(h, valueStart, i, quoted, escaped));
      }
    }
    if (this.foreign) this.charsetUtf8 = false;
    this.#index = i;
    return true;
  }

  // qvalue, with the legacy ".5" form; returns the index after it, or -1.
  #qvalue(start: number): number {
    const h = this.header;
    const limit = this.#limit;
    let i = start;
    let whole = 0;
    const c = h.charCodeAt(i);
    if (c === ZERO || c === ZERO + 1) {
      whole = c - ZERO;
      i++;
      if (i >= limit || h.charCodeAt(i) !== DOT) {
        this.qMillis = whole * 1000;
        return i;
      }
      i++;
    } else if (c === DOT) {
      i++;
      if (i >= limit || h.charCodeAt(i) < ZERO || h.charCodeAt(i) > NINE) return -1;
    } else {
      return -1;
    }
    let digits = 0;
    let fraction = 0;
    while (i < limit) {
      const d = h.charCodeAt(i);
      if (d < ZERO || d > NINE) break;
      if (digits === 3) return -1; // "0.0001"
      fraction = fraction * 10 + (d - ZERO);
      digits++;
      i++;
    }
    for (let k = digits; k < 3; k++) fraction *= 10;
    if (whole === 1 && fraction !== 0) return -1; // "1.5"
    this.qMillis = whole * 1000 + fraction;
    return i;
  }

  // Skips the rest of a broken entry: to the next comma that is not inside a quoted-string.
  #fail(from: number): false {
    const h = this.header;
    const limit = this.#limit;
    let i = from;
    while (i < limit) {
      const c = h.charCodeAt(i);
      if (c === COMMA) break;
      if (c === DQUOTE) {
        i++;
        while (i < limit) {
          const d = h.charCodeAt(i);
          if (d === DQUOTE) break;
          i += d === BACKSLASH ? 2 : 1;
        }
      }
      i++;
    }
    this.#index = i < limit ? i : limit;
    return false;
  }
}

function isCharset(h: string, start: number, end: number): boolean {
  if (end - start !== 7) return false;
  const word = 'charset';
  for (let k = 0; k < 7; k++) {
    if ((h.charCodeAt(start + k) | 0x20) !== word.charCodeAt(k)) return false;
  }
  return true;
}

/** "utf-8" or "utf8", any case, in s[start, end) (end -1: to the end of s); no allocation. */
export function isUtf8Label(s: string, start: number, end: number): boolean {
  const stop = end < 0 ? s.length : end;
  const length = stop - start;
  if (length !== 5 && length !== 4) return false;
  if ((s.charCodeAt(start) | 0x20) !== 0x75 || (s.charCodeAt(start + 1) | 0x20) !== 0x74 || (s.charCodeAt(start + 2) | 0x20) !== 0x66) return false;
  return length === 5 ? s.charCodeAt(start + 3) === 0x2d && s.charCodeAt(start + 4) === 0x38 : s.charCodeAt(start + 3) === 0x38;
}

function unquote(h: string, start: number, end: number, quoted: boolean, escaped: boolean): string {
  if (!quoted) return h.slice(start, end);
  if (!escaped) return h.slice(start + 1, end - 1);
  let out = '';
  for (let i = start + 1; i < end - 1; i++) {
    if (h.charCodeAt(i) === BACKSLASH) i++;
    out += h.charAt(i);
  }
  return out;
}
