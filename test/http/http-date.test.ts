// RFC 9110 §5.6.7: the three HTTP-date forms, and what is not one (E-4's date conditions ignore it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseHttpDate } from '../../lib/http/http-date.js';

const NOV_6_1994 = Date.UTC(1994, 10, 6, 8, 49, 37);
const NOW = Date.UTC(2026, 10, 23);

const cases: ReadonlyArray<readonly [value: string | undefined, expected: number | undefined]> = [
  // The RFC's own examples of the three forms.
  ['Sun, 06 Nov 1994 08:49:37 GMT', NOV_6_1994],
  ['Sunday, 06-Nov-94 08:49:37 GMT', NOV_6_1994],
  ['Sun Nov  6 08:49:37 1994', NOV_6_1994],
  ['Sun Nov 16 08:49:37 1994', Date.UTC(1994, 10, 16, 8, 49, 37)],
  // The day name is redundant: a wrong one does not change the date.
  ['Mon, 06 Nov 1994 08:49:37 GMT', NOV_6_1994],
  ['Thu, 01 Jan 1970 00:00:00 GMT', 0],
  ['Sat, 31 Dec 2016 23:59:60 GMT', Date.UTC(2017, 0, 1)],
  ['Tue, 29 Feb 2028 12:00:00 GMT', Date.UTC(2028, 1, 29, 12)],
  // rfc850's two-digit year: more than 50 years ahead means the century before.
  ['Monday, 01-Jan-76 00:00:00 GMT', Date.UTC(2076, 0, 1)],
  ['Monday, 01-Jan-77 00:00:00 GMT', Date.UTC(1977, 0, 1)],
  ['Monday, 01-Jan-26 00:00:00 GMT', Date.UTC(2026, 0, 1)],
  // IMF-fixdate's four-digit year is what it says, even below 100.
  ['Sat, 01 Jan 0094 00:00:00 GMT', new Date(0).setUTCFullYear(94, 0, 1)],
  // Not HTTP-dates.
  [undefined, undefined],
  ['', undefined],
  ['2026-11-23T00:00:00Z', undefined],
  ['1994', undefined],
  ['Sun, 06 Nov 1994 08:49:37 UTC', undefined],
  ['Sun, 06 Nov 1994 08:49:37 gmt', undefined],
  ['sun, 06 nov 1994 08:49:37 GMT', undefined],
  ['Sun, 6 Nov 1994 08:49:37 GMT', undefined],
  ['Sun, 06 Nov 94 08:49:37 GMT', undefined],
  ['Sun,  06 Nov 1994 08:49:37 GMT', undefined],
  [' Sun, 06 Nov 1994 08:49:37 GMT', undefined],
  ['Sun, 06 Nov 1994 08:49:37 GMT ', undefined],
  ['Sun, 06 Nov 1994 8:49:37 GMT', undefined],
  ['Sun, 31 Feb 1994 08:49:37 GMT', undefined],
  ['Sun, 00 Nov 1994 08:49:37 GMT', undefined],
  ['Sun, 06 Nov 1994 24:00:00 GMT', undefined],
  ['Sun, 06 Nov 1994 08:60:00 GMT', undefined],
  ['Sun, 06 Nov 1994 08:49:61 GMT', undefined],
  ['Sun, 06 Foo 1994 08:49:37 GMT', undefined],
  ['Sun Nov 6 08:49:37 1994', undefined],
  ['Sun Nov    08:49:37 1994', undefined],
  ['Sun, 06-Nov-94 08:49:37 GMT', undefined],
  ['Sunday, 06 Nov 1994 08:49:37 GMT', undefined],
  ['Sun, 06 Nov 1994 08:49:37 GMT'.repeat(100), undefined],
];

for (const [value, expected] of cases) {
  test(`E-4 HTTP-date ${JSON.stringify(value)} → ${expected === undefined ? 'not a date' : new Date(expected).toISOString()}`, () => {
    assert.equal(parseHttpDate(value, NOW), expected);
  });
}

test('E-4 every date round-trips through Date#toUTCString (an IMF-fixdate)', () => {
  for (const ms of [0, NOV_6_1994, NOW, Date.UTC(2099, 11, 31, 23, 59, 59)]) assert.equal(parseHttpDate(new Date(ms).toUTCString(), NOW), ms);
});
