// where a JSON text (RFC 8259) goes wrong, for a 400 that shows the client the place, and how
// deep it nests. JSON.parse does the parsing; its messages differ between engine versions, echo the
// input and often give no position, so the position is found here, by a scan of the grammar:
//
//   JSON-text = ws value ws
//   value     = false / null / true / object / array / number / string
//   object    = "{" ws [ member *( ws "," ws member ) ] ws "}"      member = string ws ":" ws value
//   array     = "[" ws [ value *( ws "," ws value ) ] ws "]"
//   number    = [ "-" ] ( "0" / %x31-39 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "-" / "+" ] 1*DIGIT ]
//   string    = %x22 *( %x20-21 / %x23-5B / %x5D-10FFFF / "\" ( %x22 / "\" / "/" / "b" / "f" / "n" / "r" / "t" / "u" 4HEXDIG ) ) %x22
//   ws        = *( %x20 / %x09 / %x0A / %x0D )
//
// Both scans keep their containers on an explicit stack: a deeply nested body cannot overflow the call stack.

/** The first place where a text stops being JSON: a UTF-16 offset into it, and what was expected there. */
export interface JsonSyntaxError {
  readonly offset: number;
  readonly expected: string;
}

const ARRAY = 0;
const OBJECT = 1;

/** Where `text` first breaks RFC 8259's grammar, or `undefined` when it is a JSON text. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  const n = text.length;
  const stack: number[] = [];
  let i = 0;
  const fail = (expected: string): JsonSyntaxError => ({ offset: i, expected });
  const skipWs = (): void => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  };
  /** A member name and its colon; returns an error or undefined. */
  const memberName = (): JsonSyntaxError | undefined => {
    if (text.charCodeAt(i) !== 0x22) return fail('a member name (a string)');
    const end = scanString(text, i);
    if (typeof end !== 'number') return end;
    i = end;
    skipWs();
    if (text.charCodeAt(i) !== 0x3a) return fail("':'");
    i++;
    return undefined;
  };
  for (;;) {
    // A value is expected at i.
    skipWs();
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      i++;
      skipWs();
      if (text.charCodeAt(i) === (c === 0x7b ? 0x7d : 0x5d)) {
        i++;
      } else {
        if (c === 0x7b) {
          const error = memberName();
          if (error !== undefined) return error;
        }
        stack.push(c === 0x7b ? OBJECT : ARRAY);
        continue;
      }
    } else if (c === 0x22) {
      const end = scanString(text, i);
      if (typeof end !== 'number') return end;
      i = end;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const end = scanNumber(text, i);
      if (end < 0) return { offset: -end - 1, expected: 'a digit' };
      i = end;
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
      for (let k = 0; k < word.length; k++, i++) if (text.charCodeAt(i) !== word.charCodeAt(k)) return fail(`'${word}'`);
    } else {
      return fail('a value');
    }
    // A value ended at i: close containers, or go on to the next member or entry.
    for (;;) {
      skipWs();
      const top = stack[stack.length - 1];
      if (top === undefined) return i === n ? undefined : fail('the end of the body');
      const d = text.charCodeAt(i);
      if (d === 0x2c) {
        i++;
        if (top === OBJECT) {
          skipWs();
          const error = memberName();
          if (error !== undefined) return error;
        }
        break;
      }
      if (d === (top === OBJECT ? 0x7d : 0x5d)) {
        stack.pop();
        i++;
        continue;
      }
      return fail(top === OBJECT ? "',' or '}'" : "',' or ']'");
    }
  }
}

/** Scans the string starting with the quote at `start`: the offset after its closing quote, or where it breaks. */
function scanString(text: string, start: number): number | JsonSyntaxError {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return { offset: i, expected: 'a control character to be escaped (\\n, \\t, \\u0000 …)' };
    if (c === 0x5c) {
      const e = text.charCodeAt(i + 1);
      if (e === 0x75) {
        for (let k = i + 2; k < i + 6; k++) if (!isHex(text.charCodeAt(k))) return { offset: k, expected: 'a hexadecimal digit' };
        i += 5;
      } else if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i++;
      } else {
        return { offset: i + 1, expected: 'an escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)' };
      }
    }
  }
  return { offset: text.length, expected: "a closing '\"'" };
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Scans a number at `start`: the offset after it, or `-(offset + 1)` where a digit was needed. */
function scanNumber(text: string, start: number): number {
  let i = start;
  if (text.charCodeAt(i) === 0x2d) i++;
  if (text.charCodeAt(i) === 0x30) i++;
  else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
  else return -(i + 1);
  if (text.charCodeAt(i) === 0x2e) {
    i++;
    if (!isDigit(text.charCodeAt(i))) return -(i + 1);
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    if (!isDigit(text.charCodeAt(i))) return -(i + 1);
    while (isDigit(text.charCodeAt(i))) i++;
  }
  return i;
}

/**
 * The offset of the first `[` or `{` that opens a container nested deeper than `max` in a JSON
 * text (one that JSON.parse accepted), or -1. The top-level value is at depth 1.
 */
export function nestingTooDeep(text: string, max: number): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: a backslash escapes the next character, and JSON.parse vouched for the rest.
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return -1;
}
