// A minimal ASN.1 DER writer (ITU-T X.690 §8 and §10): just the types an X.509 v3
// certificate needs. Every function returns a complete TLV (tag, length, value), so a
// structure is built by nesting calls. Inputs come from our own code, so they are checked
// strictly and bad ones throw.
import { Buffer } from 'node:buffer';

const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

// IA5String is 7-bit ASCII.
const IA5 = /^[\x00-\x7f]*$/;

/** The length octets for a content of `length` bytes (X.690 §8.1.3, definite form; §10.1 shortest). */
function encodeLength(length: number): Buffer {
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`DER length must be a non-negative integer, got ${String(length)}`);
  if (length < 0x80) return Buffer.from([length]);
  const octets: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) octets.unshift(rest % 256);
  // 0xff as the first length octet is reserved (§8.1.3.5 c); 126 octets of length is far beyond us.
  return Buffer.from([0x80 | octets.length, ...octets]);
}

/** A TLV with an arbitrary single-octet tag. */
function tlv(tag: number, content: Uint8Array): Buffer {
  if (!Number.isInteger(tag) || tag < 0 || tag > 0xff || (tag & 0x1f) === 0x1f) {
    throw new RangeError(`only single-octet tags are supported, got ${String(tag)}`);
  }
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content]);
}

function sequence(...children: readonly Uint8Array[]): Buffer {
  return tlv(TAG.sequence, Buffer.concat(children));
}

/** SET OF: DER (§11.6) orders the encoded elements as octet strings. */
function set(...children: readonly Uint8Array[]): Buffer {
  const sorted = [...children].map((c) => Buffer.from(c)).sort(Buffer.compare);
  return tlv(TAG.set, Buffer.concat(sorted));
}

function boolean(value: boolean): Buffer {
  // §11.1: TRUE is all ones in DER.
  return tlv(TAG.boolean, Buffer.from([value ? 0xff : 0x00]));
}

/**
 * A non-negative INTEGER. A Uint8Array is read as an unsigned big-endian magnitude
 * (e.g. random serial-number bytes). §8.3.2: the shortest two's-complement form, so
 * redundant leading zeros go and a 0x00 is added when the high bit would read as a sign.
 */
function integer(value: number | bigint | Uint8Array): Buffer {
  let magnitude: Buffer;
  if (value instanceof Uint8Array) {
    magnitude = Buffer.from(value);
  } else {
    if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new RangeError(`INTEGER must be a safe integer, got ${String(value)}`);
    const big = BigInt(value);
    if (big < 0n) throw new RangeError(`only non-negative INTEGERs are supported, got ${big}`);
    const hex = big.toString(16);
    magnitude = Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
  }
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start += 1;
  let content = magnitude.subarray(start);
  if (content.length === 0) content = Buffer.from([0]);
  if ((content[0] ?? 0) & 0x80) content = Buffer.concat([Buffer.from([0]), content]);
  return tlv(TAG.integer, content);
}

/** BIT STRING from whole octets, with `unusedBits` (0–7) trailing bits of the last octet unused. */
function bitString(bytes: Uint8Array, unusedBits = 0): Buffer {
  if (!Number.isInteger(unusedBits) || unusedBits < 0 || unusedBits > 7 || (bytes.length === 0 && unusedBits !== 0)) {
    throw new RangeError(`BIT STRING unused bits must be 0–7 (0 when empty), got ${String(unusedBits)}`);
  }
  // §11.2.1: the unused bits are zero.
  const last = bytes[bytes.length - 1];
  if (last !== undefined && (last & ((1 << unusedBits) - 1)) !== 0) throw new RangeError('BIT STRING unused bits must be zero');
  return tlv(TAG.bitString, Buffer.concat([Buffer.from([unusedBits]), bytes]));
}

/**
 * A named-bit BIT STRING (such as KeyUsage) from the numbers of the bits that are set,
 * bit 0 being the most significant bit of the first octet. §11.2.2: trailing zero bits
 * are dropped.
 */
function namedBits(bits: readonly number[]): Buffer {
  if (bits.length === 0) return bitString(Buffer.alloc(0));
  for (const bit of bits) {
    if (!Number.isInteger(bit) || bit < 0 || bit > 255) throw new RangeError(`bit number must be an integer from 0 to 255, got ${String(bit)}`);
  }
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) | (0x80 >> (bit & 7));
  return bitString(bytes, 7 - (highest & 7));
}

function octetString(bytes: Uint8Array): Buffer {
  return tlv(TAG.octetString, bytes);
}

/** OBJECT IDENTIFIER from dotted text (§8.19): first two arcs folded as 40·a + b, then base 128. */
function oid(dotted: string): Buffer {
  if (!/^[0-2](\.(0|[1-9][0-9]*))+$/.test(dotted)) throw new RangeError(`not a dotted OID: ${JSON.stringify(dotted)}`);
  const arcs = dotted.split('.').map((arc) => BigInt(arc));
  const [first = 0n, second = 0n, ...rest] = arcs;
  if (first < 2n && second > 39n) throw new RangeError(`second arc must be below 40 under arc ${first}: ${dotted}`);
  const octets: number[] = [];
  for (const arc of [first * 40n + second, ...rest]) {
    const chunk: number[] = [Number(arc & 0x7fn)];
    for (let rest7 = arc >> 7n; rest7 > 0n; rest7 >>= 7n) chunk.unshift(Number(rest7 & 0x7fn) | 0x80);
    octets.push(...chunk);
  }
  return tlv(TAG.oid, Buffer.from(octets));
}

function utf8String(text: string): Buffer {
  if (/\p{Cs}/u.test(text)) throw new RangeError('UTF8String cannot hold lone surrogates');
  return tlv(TAG.utf8String, Buffer.from(text, 'utf8'));
}

function ia5String(text: string): Buffer {
  if (!IA5.test(text)) throw new RangeError(`not an IA5String: ${JSON.stringify(text)}`);
  return tlv(TAG.ia5String, Buffer.from(text, 'latin1'));
}

function timeParts(date: Date): { year: number; rest: string } {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('invalid Date');
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) throw new RangeError(`year ${year} cannot be encoded`);
  const two = (n: number): string => String(n).padStart(2, '0');
  // §11.7/§11.8: seconds always present, no fraction when it is zero, 'Z' for UTC.
  const rest = `${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}Z`;
  return { year, rest };
}

/** UTCTime YYMMDDHHMMSSZ; RFC 5280 §4.1.2.5.1 reads YY as 1950–2049. Fractions of a second are dropped. */
function utcTime(date: Date): Buffer {
  const { year, rest } = timeParts(date);
  if (year < 1950 || year > 2049) throw new RangeError(`UTCTime holds 1950–2049 only, got ${year}`);
  return tlv(TAG.utcTime, Buffer.from(`${String(year % 100).padStart(2, '0')}${rest}`, 'latin1'));
}

/** GeneralizedTime YYYYMMDDHHMMSSZ (RFC 5280 §4.1.2.5.2). Fractions of a second are dropped. */
function generalizedTime(date: Date): Buffer {
  const { year, rest } = timeParts(date);
  return tlv(TAG.generalizedTime, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'latin1'));
}

/** X.509 Time: RFC 5280 §4.1.2.5 wants UTCTime through 2049 and GeneralizedTime from 2050. */
function time(date: Date): Buffer {
  const year = date.getUTCFullYear();
  return year >= 1950 && year <= 2049 ? utcTime(date) : generalizedTime(date);
}

function contextNumber(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 30) throw new RangeError(`context tag number must be 0–30, got ${String(n)}`);
  return n;
}

/** [n] EXPLICIT: a constructed context-specific wrapper around complete TLVs. */
function explicit(n: number, ...children: readonly Uint8Array[]): Buffer {
  return tlv(0xa0 | contextNumber(n), Buffer.concat(children));
}

/** [n] IMPLICIT for a primitive type: the raw content bytes under a context-specific tag. */
function implicit(n: number, content: Uint8Array): Buffer {
  return tlv(0x80 | contextNumber(n), content);
}

/** The DER encoders, as one frozen namespace. */
export const der = Object.freeze({
  encodeLength,
  tlv,
  sequence,
  set,
  boolean,
  integer,
  bitString,
  namedBits,
  octetString,
  oid,
  utf8String,
  ia5String,
  utcTime,
  generalizedTime,
  time,
  explicit,
  implicit,
});
