// A realm is programmer input that ends up inside a quoted-string of a
// WWW-Authenticate header (RFC 9110 §11.6.1) and inside the Digest hashes
// (RFC 7616 §3.4.2). Refusing '"' and '\' means it never needs escaping;
// refusing non-ASCII avoids the Latin-1 vs UTF-8 ambiguity of header bytes,
// where a client would hash different octets than the server does.
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Throws a TypeError unless `realm` can be sent verbatim as a quoted-string. */
export function assertRealm(realm: string): void {
  if (typeof realm !== 'string' || !PRINTABLE_ASCII.test(realm) || realm.includes('"') || realm.includes('\\')) {
    throw new TypeError(
      `realm must be non-empty printable ASCII without '"' or '\\', got ${JSON.stringify(realm)}`,
    );
  }
}
