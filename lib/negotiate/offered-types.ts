// The offered side of negotiation: the caller's list of media types, read once. Internal.
import { AcceptScanner } from './accept-scanner.js';
import { argumentError } from '../validate.js';

/**
 * The valid entries of an offered list, one slot per entry (struct of arrays: the negotiation loop
 * reads `keys` and `slash` for every range of every request).
 */
export interface OfferedTypes {
  /** Lowercase `type/subtype`: the offered string itself when it is already that. */
  readonly keys: readonly string[];
  /** Index of the slash in the key, that is the length of the type. */
  readonly slash: readonly number[];
  /** Media-type parameters, names lowercased, values unquoted; `undefined` when there are none. */
  readonly params: ReadonlyArray<ReadonlyMap<string, string> | undefined>;
  /** Index of the entry in the caller's list, increasing (server order is slot order). */
  readonly index: readonly number[];
  /** Some entry has parameters, so ranges with parameters must be read in full. */
  readonly anyParams: boolean;
}

const SLASH = 0x2f;
const STAR = 0x2a;
const SP = 0x20;
const HTAB = 0x09;

/**
 * Reads an offered list. An entry must be a concrete media type (RFC 9110 §8.3.1):
 * `type "/" subtype *( OWS ";" OWS parameter )`, any case, parameter values as token or
 * quoted-string. A malformed entry (`'boom'`, `'text/html;level'`, `'a, b'`) is skipped, so a list
 * with no valid entry accepts nothing. Not a string, not an array, or a wildcard (`text/*`,
 * `*\/*`): refused (ERR_INVALID_ARGUMENT), since an offer is something the server can send.
 */
export function parseOfferedTypes(offered: readonly string[]): OfferedTypes {
  if (!Array.isArray(offered)) throw argumentError('offered must be an array of media types');
  const keys: string[] = [];
  const slash: number[] = [];
  const params: (ReadonlyMap<string, string> | undefined)[] = [];
  const index: number[] = [];
  let anyParams = false;
  let scanner: AcceptScanner | undefined;
  for (let k = 0; k < offered.length; k++) {
    const text: unknown = offered[k];
    if (typeof text !== 'string') throw argumentError(`offered media types must be strings, got ${typeof text}`);
    const plain = plainSlash(text);
    if (plain > 0) {
      keys.push(text);
      slash.push(plain);
      params.push(undefined);
      index.push(k);
      continue;
    }
    checkNotWildcard(text);
    scanner ??= new AcceptScanner(true);
    scanner.reset(text);
    const last = text.charCodeAt(text.length - 1);
    // One entry, from the first character to the last, without a weight: a media type, not a range list.
    if (!scanner.next() || scanner.typeStart !== 0 || scanner.end !== text.length || scanner.weighted || last === SP || last === HTAB) continue;
    keys.push(text.slice(0, scanner.subtypeEnd).toLowerCase());
    slash.push(scanner.typeEnd);
    params.push(scanner.params);
    index.push(k);
    anyParams ||= scanner.params !== undefined;
  }
  return { keys, slash, params, index, anyParams };
}

// The common case, lowercase "type/subtype" tokens without parameters: the slash index, or -1 to
// send the entry to the full reader. One pass, since negotiate() reads its list on every call.
function plainSlash(text: string): number {
  let slash = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === SLASH && slash < 0) slash = i;
    else if (c >= 128 || LOWER_TCHAR[c] !== 1) return -1;
  }
  if (slash <= 0 || slash === text.length - 1) return -1;
  if ((slash === 1 && text.charCodeAt(0) === STAR) || (slash === text.length - 2 && text.charCodeAt(slash + 1) === STAR)) checkNotWildcard(text);
  return slash;
}

// "*" as the type or the subtype, whatever else is wrong with the entry.
function checkNotWildcard(text: string): void {
  const slash = text.indexOf('/');
  if (slash < 0) return;
  const type = text.slice(0, slash).trim();
  const subtype = text.slice(slash + 1).split(';', 1)[0]?.trim();
  if (type === '*' || subtype === '*') {
    throw argumentError(`offered media types must be concrete types, not ranges, got ${JSON.stringify(text)}`);
  }
}

// tchar (RFC 9110 §5.6.2) without upper-case letters.
const LOWER_TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz";
const LOWER_TCHAR: Readonly<Uint8Array> = Uint8Array.from({ length: 128 }, (_, c) => (LOWER_TCHARS.includes(String.fromCharCode(c)) ? 1 : 0));
