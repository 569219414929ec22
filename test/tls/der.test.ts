import { test } from 'node:test';
import assert from 'node:assert/strict';
import { der } from '../../lib/tls/der.js';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

// X.690 §8.1.3: short form below 0x80, then 0x80|n followed by n length octets.
const lengths: ReadonlyArray<readonly [length: number, header: string]> = [
  [0, '00'],
  [1, '01'],
  [0x7f, '7f'],
  [0x80, '8180'],
  [0xff, '81ff'],
  [0x100, '820100'],
  [0xffff, '82ffff'],
  [0x10000, '83010000'],
];

for (const [length, header] of lengths) {
  test(`T-2 DER: length ${length} → ${header}`, () => {
    assert.equal(hex(der.encodeLength(length)), header);
    const encoded = der.octetString(Buffer.alloc(length, 0xaa));
    assert.equal(hex(encoded.subarray(0, 1 + header.length / 2)), `04${header}`);
    assert.equal(encoded.length, 1 + header.length / 2 + length);
  });
}

test('T-2 DER: negative or fractional lengths are refused', () => {
  assert.throws(() => der.encodeLength(-1), RangeError);
  assert.throws(() => der.encodeLength(1.5), RangeError);
});

// §8.3.2: minimal two's complement; a set high bit needs a 0x00 in front to stay positive.
const integers: ReadonlyArray<readonly [value: number | bigint | Uint8Array, encoded: string]> = [
  [0, '020100'],
  [1, '020101'],
  [2, '020102'],
  [0x7f, '02017f'],
  [0x80, '02020080'],
  [0xff, '020200ff'],
  [0x100, '02020100'],
  [0x8000, '0203008000'],
  [2n ** 64n, '0209010000000000000000'],
  [Buffer.from('00', 'hex'), '020100'],
  [Buffer.from('80', 'hex'), '02020080'],
  [Buffer.from('ff01', 'hex'), '020300ff01'],
  [Buffer.from('000080', 'hex'), '02020080'], // redundant leading zeros dropped
  [Buffer.from('00007f', 'hex'), '02017f'],
  [Buffer.alloc(0), '020100'],
];

for (const [value, encoded] of integers) {
  const label = value instanceof Uint8Array ? `bytes ${hex(value) || '(empty)'}` : String(value);
  test(`T-2 DER: INTEGER ${label} → ${encoded}`, () => {
    assert.equal(hex(der.integer(value)), encoded);
  });
}

test('T-2 DER: INTEGER refuses negatives and unsafe numbers', () => {
  assert.throws(() => der.integer(-1), RangeError);
  assert.throws(() => der.integer(-1n), RangeError);
  assert.throws(() => der.integer(2 ** 53), RangeError);
  assert.throws(() => der.integer(0.5), RangeError);
});

// §8.19: the first two arcs become 40·a + b; every arc is base 128, high bit = "more follows".
const oids: ReadonlyArray<readonly [dotted: string, encoded: string]> = [
  ['1.2.840.10045.4.3.2', '06082a8648ce3d040302'], // ecdsa-with-SHA256
  ['1.2.840.10045.2.1', '06072a8648ce3d0201'], // id-ecPublicKey
  ['2.5.29.17', '0603551d11'], // subjectAltName
  ['2.5.4.3', '0603550403'], // commonName
  ['1.3.6.1.5.5.7.3.1', '06082b06010505070301'], // serverAuth
  ['0.0', '060100'],
  ['2.999.3', '0603883703'], // first subidentifier 1079 spans two octets (X.690 §8.19.5 example)
  ['1.2.16383', '06032aff7f'],
  ['1.2.16384', '06042a818000'],
];

for (const [dotted, encoded] of oids) {
  test(`T-2 DER: OID ${dotted} → ${encoded}`, () => {
    assert.equal(hex(der.oid(dotted)), encoded);
  });
}

for (const bad of ['', '1', '3.1', '1.40', '0.40', '1.2.', '1..2', '1.02', 'a.b', '1.2.-3']) {
  test(`T-2 DER: OID ${JSON.stringify(bad)} is refused`, () => {
    assert.throws(() => der.oid(bad), RangeError);
  });
}

const misc: ReadonlyArray<readonly [name: string, encode: () => Buffer, encoded: string]> = [
  ['BOOLEAN TRUE is 0xff', () => der.boolean(true), '0101ff'],
  ['BOOLEAN FALSE', () => der.boolean(false), '010100'],
  ['empty SEQUENCE', () => der.sequence(), '3000'],
  ['SEQUENCE of two INTEGERs', () => der.sequence(der.integer(1), der.integer(2)), '3006020101020102'],
  ['SET OF sorts its elements (§11.6)', () => der.set(der.integer(2), der.integer(1)), '3106020101020102'],
  ['BIT STRING with no unused bits', () => der.bitString(Buffer.from('0102', 'hex')), '0303000102'],
  ['named bits: digitalSignature only', () => der.namedBits([0]), '03020780'],
  ['named bits: digitalSignature + keyCertSign', () => der.namedBits([0, 5]), '03020284'],
  ['named bits: bit 8 spills into a second octet', () => der.namedBits([0, 8]), '0303078080'],
  ['named bits: none', () => der.namedBits([]), '030100'],
  ['UTF8String', () => der.utf8String('é'), '0c02c3a9'],
  ['IA5String', () => der.ia5String('localhost'), '16096c6f63616c686f7374'],
  ['[0] EXPLICIT', () => der.explicit(0, der.integer(2)), 'a003020102'],
  ['[3] EXPLICIT', () => der.explicit(3, der.sequence()), 'a3023000'],
  ['[2] IMPLICIT (dNSName)', () => der.implicit(2, Buffer.from('a')), '820161'],
  ['[7] IMPLICIT (iPAddress)', () => der.implicit(7, Buffer.from([127, 0, 0, 1])), '87047f000001'],
];

for (const [name, encode, encoded] of misc) {
  test(`T-2 DER: ${name}`, () => {
    assert.equal(hex(encode()), encoded);
  });
}

test('T-2 DER: programmer mistakes are refused', () => {
  assert.throws(() => der.bitString(Buffer.from([0x81]), 1), RangeError); // unused bit set
  assert.throws(() => der.bitString(Buffer.from([0x80]), 8), RangeError);
  assert.throws(() => der.utf8String('\ud800'), RangeError);
  assert.throws(() => der.ia5String('é'), RangeError);
  assert.throws(() => der.explicit(31), RangeError);
  assert.throws(() => der.tlv(0x1f, Buffer.alloc(0)), RangeError); // multi-octet tag form
});

// RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; seconds, 'Z', no fraction.
const times: ReadonlyArray<readonly [iso: string, encoded: string]> = [
  ['2026-03-04T05:06:07.890Z', `170d${Buffer.from('260304050607Z').toString('hex')}`],
  ['1950-01-01T00:00:00Z', `170d${Buffer.from('500101000000Z').toString('hex')}`],
  ['2049-12-31T23:59:59Z', `170d${Buffer.from('491231235959Z').toString('hex')}`],
  ['2050-01-01T00:00:00Z', `180f${Buffer.from('20500101000000Z').toString('hex')}`],
  ['1949-12-31T23:59:59Z', `180f${Buffer.from('19491231235959Z').toString('hex')}`],
  ['9999-12-31T23:59:59Z', `180f${Buffer.from('99991231235959Z').toString('hex')}`],
];

for (const [iso, encoded] of times) {
  test(`T-2 DER: Time ${iso}`, () => {
    assert.equal(hex(der.time(new Date(iso))), encoded);
  });
}

test('T-2 DER: UTCTime refuses years it cannot hold', () => {
  assert.throws(() => der.utcTime(new Date('2050-01-01T00:00:00Z')), RangeError);
  assert.throws(() => der.time(new Date(Number.NaN)), RangeError);
});
