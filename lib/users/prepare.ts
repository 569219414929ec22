// Password preparation (CONTRACT U-4): RFC 8265 §4.2 OpaqueString enforcement, plus
// the strict decoding that keeps ill-formed text from ever reaching it.

// RFC 8265 §4.2.2 step 2: "non-ASCII space … any Unicode code point having a
// Unicode general category of "Zs" (with the exception of U+0020)".
const NON_ASCII_SPACE = /(?! )\p{Zs}/gu;

/**
 * Prepares a password as RFC 8265 §4.2.2 orders: no width mapping, non-ASCII
 * spaces (Zs) to U+0020, no case mapping, then NFC. Idempotent. Nothing is
 * trimmed or removed: controls are left for the policy to refuse (P-6).
 * @example preparePassword('e\u0301t\u00e9') === '\u00e9t\u00e9'
 */
export function preparePassword(password: string): string {
  return password.replace(NON_ASCII_SPACE, ' ').normalize('NFC');
}

// Buffer#toString would substitute U+FFFD; the default TextDecoder would drop a BOM. Without
// { stream: true } a decode keeps no state between calls, so one decoder serves every request.
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decodes wire bytes as UTF-8, refusing rather than repairing: overlong forms,
 * encoded surrogates, truncated sequences and stray continuation bytes give
 * `undefined`. A leading BOM is kept as U+FEFF (it is part of what was sent).
 */
export function decodeUtf8Strict(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * True when a JS string holds a UTF-16 surrogate without its partner (JSON
 * "\ud800" escapes make these). Such a string is not Unicode text, and UTF-8
 * encoding would turn every one into U+FFFD, so different inputs would collide.
 */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1); // NaN past the end: not a low surrogate
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return true;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return true;
    }
  }
  return false;
}
