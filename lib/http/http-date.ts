// RFC 9110 §5.6.7 HTTP-date, for the conditional headers (E-4). A recipient must accept all three
// forms; anything else is "not a valid HTTP-date", which If-Modified-Since and If-Unmodified-Since
// say to ignore (§13.1.3, §13.1.4), so this returns undefined instead of guessing like Date.parse
// (which reads "2020" or "tomorrow-ish" text as dates).
//
//   IMF-fixdate  = day-name "," SP 2DIGIT SP month SP 4DIGIT SP time-of-day SP "GMT"
//                  Sun, 06 Nov 1994 08:49:37 GMT
//   rfc850-date  = day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP time-of-day SP "GMT"
//                  Sunday, 06-Nov-94 08:49:37 GMT
//   asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP 4DIGIT
//                  Sun Nov  6 08:49:37 1994
//
// The names are case-sensitive (§5.6.7). The day name is redundant and not checked against the date.

const IMF = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850 = /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
/** Longest valid form (rfc850 with "Wednesday"), so a huge header is refused before any regex runs. */
const MAX_LENGTH = 37;

/**
 * Milliseconds since the epoch for an RFC 9110 HTTP-date, or undefined when the value is not one.
 * `now` resolves rfc850's two-digit year: a date more than 50 years ahead is the century before.
 */
export function parseHttpDate(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined || value.length > MAX_LENGTH) return undefined;
  let m = IMF.exec(value);
  if (m !== null) return build(Number(m[3]), m[2] as string, Number(m[1]), m[4] as string, m[5] as string, m[6] as string);
  m = ASCTIME.exec(value);
  if (m !== null) {
    const day = (m[2] as string).trimStart();
    if (day.length === 0) return undefined;
    return build(Number(m[6]), m[1] as string, Number(day), m[3] as string, m[4] as string, m[5] as string);
  }
  m = RFC850.exec(value);
  if (m === null) return undefined;
  const yy = Number(m[3]);
  const thisYear = new Date(now).getUTCFullYear();
  let year = Math.floor(thisYear / 100) * 100 + yy;
  if (year > thisYear + 50) year -= 100;
  return build(year, m[2] as string, Number(m[1]), m[4] as string, m[5] as string, m[6] as string);
}

function build(year: number, monthName: string, day: number, hh: string, mm: string, ss: string): number | undefined {
  const month = (MONTHS as readonly string[]).indexOf(monthName);
  const hour = Number(hh);
  const minute = Number(mm);
  // RFC 9110 §5.6.7 allows a leap second (60).
  const second = Number(ss);
  if (month < 0 || hour > 23 || minute > 59 || second > 60 || day < 1) return undefined;
  // setUTCFullYear, not Date.UTC, which reads years 0..99 as 1900..1999.
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month, day);
  // A day the month does not have (31 Feb) rolls over into the next month: no such date.
  if (midnight.getUTCDate() !== day) return undefined;
  return midnight.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}
