/**
 * Strict query-string parsing (CONTRACT N-8): `application/x-www-form-urlencoded` pairs, `+` is a space,
 * percent-encoding must be well-formed UTF-8. Returns undefined for malformed input so the caller can
 * answer 400; never throws.
 */
export type Query = ReadonlyMap<string, readonly string[]>;

export function parseQuery(raw: string): Query | undefined {
  const pairs = parsePairs(raw);
  if (pairs === undefined) return undefined;
  const query = new Map<string, string[]>();
  for (let i = 0; i < pairs.length; i += 2) {
    const name = pairs[i] as string;
    const value = pairs[i + 1] as string;
    const list = query.get(name);
    if (list === undefined) query.set(name, [value]);
    else list.push(value);
  }
  return query;
}

/** The query's names and values in request order, alternating (`[name, value, name, value, …]`). */
export function parsePairs(raw: string): string[] | undefined {
  const pairs: string[] = [];
  if (raw === '') return pairs;
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = decodeComponent(eq < 0 ? '' : pair.slice(eq + 1));
    if (name === undefined || value === undefined) return undefined;
    pairs.push(name, value);
  }
  return pairs;
}

/** Percent-decodes one path segment or query component; undefined when malformed or not UTF-8. */
export function decodeComponent(text: string, plusIsSpace = true): string | undefined {
  const spaced = plusIsSpace && text.includes('+') ? text.replaceAll('+', ' ') : text;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}

/** The single value of a parameter: 'absent', 'repeated', or the value. */
export function singleParam(query: Query, name: string): { readonly kind: 'absent' } | { readonly kind: 'repeated' } | { readonly kind: 'value'; readonly value: string } {
  const values = query.get(name);
  if (values === undefined) return { kind: 'absent' };
  if (values.length > 1) return { kind: 'repeated' };
  return { kind: 'value', value: values[0] as string };
}
