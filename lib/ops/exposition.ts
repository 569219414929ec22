// Metric families and their Prometheus text exposition, format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): `# HELP`, `# TYPE`, then one
// sample per line; histograms as cumulative `_bucket{le="…"}` lines ending with `+Inf`, then
// `_sum` and `_count`. Hand-written: the package has no run-time dependencies.
//
// Label values come only from small fixed sets chosen by the callers (route patterns, status
// codes, operation names), never from a request's raw path or a user name (H-5), so the number of
// series stays bounded.

/** `Content-Type` of a scrape response (format 0.0.4). */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface Family {
  /** The family's lines, ending in '\n'. */
  render(): string;
}

export interface Counter<L extends string> extends Family {
  inc(labels: Readonly<Record<L, string>>, by?: number): void;
}

export interface Histogram<L extends string> extends Family {
  observe(labels: Readonly<Record<L, string>>, value: number): void;
}

/** A counter with the label names `labels`; series appear when first incremented (or `preset`). */
export function counter<L extends string>(name: string, help: string, labels: readonly L[], preset: ReadonlyArray<Readonly<Record<L, string>>> = []): Counter<L> {
  checkNames(name, labels);
  const series = new Map<string, number>();
  const family: Counter<L> = {
    inc(values, by = 1) {
      const key = labelText(labels, values);
      series.set(key, (series.get(key) ?? 0) + by);
    },
    render() {
      let out = header(name, help, 'counter');
      for (const [key, value] of series) out += `${name}${key} ${formatValue(value)}\n`;
      return out;
    },
  };
  for (const values of preset) family.inc(values, 0);
  return family;
}

/** A gauge whose value is read when scraped (no state to keep in step). */
export function gauge(name: string, help: string, read: () => number): Family {
  checkNames(name, []);
  return { render: () => `${header(name, help, 'gauge')}${name} ${formatValue(read())}\n` };
}

/** A histogram with upper bounds `buckets` (ascending; `+Inf` is implied). */
export function histogram<L extends string>(name: string, help: string, labels: readonly L[], buckets: readonly number[]): Histogram<L> {
  checkNames(name, labels);
  if (labels.includes('le' as L)) throw new TypeError('histogram: "le" is reserved');
  for (let i = 1; i < buckets.length; i++) {
    if (!((buckets[i] as number) > (buckets[i - 1] as number))) throw new TypeError('histogram: buckets must ascend');
  }
  interface Series { readonly labels: string; readonly counts: number[]; sum: number; count: number }
  const series = new Map<string, Series>();
  const bounds = buckets.map(formatValue);
  return {
    observe(values, value) {
      const key = labelText(labels, values);
      let s = series.get(key);
      if (s === undefined) {
        s = { labels: key, counts: buckets.map(() => 0), sum: 0, count: 0 };
        series.set(key, s);
      }
      // Counts are kept per bucket and made cumulative when rendered.
      for (let i = 0; i < buckets.length; i++) {
        if (value <= (buckets[i] as number)) {
          (s.counts[i] as number)++;
          break;
        }
      }
      s.sum += value;
      s.count++;
    },
    render() {
      let out = header(name, help, 'histogram');
      for (const s of series.values()) {
        // `le` joins the series' own labels inside the braces.
        const open = s.labels === '' ? '{' : `${s.labels.slice(0, -1)},`;
        let cumulative = 0;
        for (let i = 0; i < bounds.length; i++) {
          cumulative += s.counts[i] as number;
          out += `${name}_bucket${open}le="${bounds[i] as string}"} ${cumulative}\n`;
        }
        out += `${name}_bucket${open}le="+Inf"} ${s.count}\n`;
        out += `${name}_sum${s.labels} ${formatValue(s.sum)}\n`;
        out += `${name}_count${s.labels} ${s.count}\n`;
      }
      return out;
    },
  };
}

function header(name: string, help: string, type: string): string {
  // HELP text escapes backslash and newline; label values also escape '"'.
  return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n`;
}

/** `{a="x",b="y"}` in the family's label order, or '' without labels. */
function labelText(names: readonly string[], values: Readonly<Record<string, string>>): string {
  if (names.length === 0) return '';
  let out = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const value = values[name] ?? '';
    out += `${i === 0 ? '' : ','}${name}="${value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`;
  }
  return `${out}}`;
}

/** Go's ParseFloat forms: integers as such, `+Inf`/`-Inf`/`NaN` spelt as Prometheus expects. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function checkNames(name: string, labels: readonly string[]): void {
  if (!NAME.test(name)) throw new TypeError(`bad metric name ${JSON.stringify(name)}`);
  for (const label of labels) {
    if (!LABEL.test(label) || label.startsWith('__')) throw new TypeError(`bad label name ${JSON.stringify(label)}`);
  }
}
