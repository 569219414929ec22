// XML serialization micro-benchmark: httpskit's toXml against xmlbuilder2, fast-xml-parser's
// XMLBuilder and JSON.stringify, on a ~20-key record (nested object, array of 10, text that needs
// escaping) and on the small `something` body. ns per document, rounds interleaved, medians.
//   node --expose-gc bench/results/build/bench/xml.js [--rounds N] [--json]
// The peers get their input already converted to their object conventions (attributes, repeated
// elements, nil), outside the timed loop: that favours them, not us.
import { XMLBuilder } from 'fast-xml-parser';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SaxesParser } from 'saxes';
import { create } from 'xmlbuilder2';
import { toXml } from '../lib/representation/xml.js';
import { median, rotate } from './stats.js';

const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

/** About 20 keys, a nested object, an array of 10, strings that need escaping, a null. */
export const RECORD = {
  id: 48213,
  uuid: '3f1c2a9e-8b7d-4e21-9a3c-5d6e7f809a1b',
  name: 'Ada & Grace <admins>',
  email: 'ada@example.com',
  active: true,
  verified: false,
  score: 98.25,
  balance: -1234.5,
  rank: 3,
  locale: 'de-CH',
  currency: 'CHF',
  createdAt: '2024-05-01T12:30:00.000Z',
  updatedAt: '2024-06-11T08:05:42.123Z',
  referrer: 'https://example.com/?a=1&b=2',
  description: 'x > y && y < z, "quoted" and \'apostrophes\'',
  notes: 'Line 1\nLine 2 with <b>markup</b> & an émoji 🎉',
  manager: null,
  address: { street: '1 "Quoted" Lane', city: 'Zürich', zip: '8001', country: 'CH', geo: { lat: 47.3769, lon: 8.5417 } },
  items: Array.from({ length: 10 }, (_, i) => ({ sku: `SKU-${1000 + i}`, title: `Part <${i}> & co`, qty: i + 1, price: 9.99 + i })),
  tags: 'alpha,beta,gamma',
} as const;

export const SMALL = { param1: 'hello' } as const;

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/** JSON value → the object form xmlbuilder2 and fast-xml-parser take, with our mapping (N-11). */
function builderForm(value: Json, attr: string): unknown {
  if (value === null) return { [`${attr}xsi:nil`]: 'true' };
  if (Array.isArray(value)) return { item: value.map((v) => builderForm(v, attr)) };
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, Json>)) out[k] = builderForm(v, attr);
    return out;
  }
  return String(value);
}

function hasNull(value: Json): boolean {
  if (value === null) return true;
  if (typeof value !== 'object') return false;
  return Object.values(value as Record<string, Json>).some(hasNull);
}

type Contender = 'httpskit' | 'JSON.stringify' | 'xmlbuilder2' | 'fast-xml-parser';
const CONTENDERS: readonly Contender[] = ['httpskit', 'JSON.stringify', 'xmlbuilder2', 'fast-xml-parser'];

function serializers(doc: Json, root: string): Record<Contender, () => string> {
  const nsAttr = hasNull(doc) ? { '@xmlns:xsi': XSI } : {};
  const xb2 = { [root]: { ...nsAttr, ...(builderForm(doc, '@') as object) } };
  const fxpNs = hasNull(doc) ? { '@_xmlns:xsi': XSI } : {};
  const fxp = { '?xml': { '@_version': '1.0', '@_encoding': 'UTF-8' }, [root]: { ...fxpNs, ...(builderForm(doc, '@_') as object) } };
  const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', suppressEmptyNode: true, suppressBooleanAttributes: false, processEntities: true });
  return {
    httpskit: () => toXml(doc, { root }),
    'JSON.stringify': () => JSON.stringify(doc),
    xmlbuilder2: () => create({ version: '1.0', encoding: 'UTF-8' }, xb2).end(),
    'fast-xml-parser': () => builder.build(fxp) as string,
  };
}

/** A document's elements, texts and xsi:nil marks, read back with a strict parser: equal means same document. */
export function canonical(xml: string): string {
  const parts: string[] = [];
  const parser = new SaxesParser({ xmlns: false });
  parser.on('opentag', (tag) => parts.push(`<${tag.name}${tag.attributes['xsi:nil'] === 'true' ? ' nil' : ''}>`));
  parser.on('text', (text) => parts.push(text));
  parser.on('closetag', (tag) => parts.push(`</${tag.name}>`));
  parser.write(xml).close();
  return parts.join('');
}

export interface XmlRow {
  readonly document: string;
  readonly bytes: number;
  /** Median ns per document, by contender. */
  readonly ns: Readonly<Record<Contender, number>>;
  /** Median per-round ratios: ours / JSON.stringify (target at most 2.5) and fast-xml-parser / ours (target at least 3). */
  readonly oursOverJson: number;
  readonly fxpOverOurs: number;
  readonly xmlbuilder2OverOurs: number;
  /** Whether each peer's document reads back the same as ours. */
  readonly sameDocument: Readonly<Record<string, boolean>>;
}

/** A full collection between samples when run with --expose-gc (run.ts does), else nothing. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export function runXmlBench(options: { rounds?: number; sampleMs?: number } = {}): XmlRow[] {
  const rounds = options.rounds ?? 15;
  const sampleMs = options.sampleMs ?? 25;
  let sink = 0;
  const rows: XmlRow[] = [];
  for (const [document, doc, root] of [
    ['record (20 keys, nested, array of 10)', RECORD, 'record'],
    ['something {"param1":"hello"}', SMALL, 'something'],
  ] as const) {
    const fns = serializers(doc as Json, root);
    const ours = fns.httpskit();
    const sameDocument: Record<string, boolean> = {};
    for (const peer of ['xmlbuilder2', 'fast-xml-parser'] as const) sameDocument[peer] = canonical(fns[peer]()) === canonical(ours);
    // Calibrate: iterations for about sampleMs per sample, per contender.
    const iterations = {} as Record<Contender, number>;
    for (const c of CONTENDERS) {
      const fn = fns[c];
      let n = 0;
      const start = performance.now();
      while (performance.now() - start < sampleMs) {
        sink += fn().length;
        n++;
      }
      iterations[c] = Math.max(10, n);
    }
    const samples = { httpskit: [], 'JSON.stringify': [], xmlbuilder2: [], 'fast-xml-parser': [] } as Record<Contender, number[]>;
    for (let round = 0; round < rounds; round++) {
      for (const c of rotate(CONTENDERS, round)) {
        const fn = fns[c];
        const n = iterations[c];
        collectGarbage(); // each contender pays for its own garbage, not the previous one's
        const start = process.hrtime.bigint();
        for (let i = 0; i < n; i++) sink += fn().length;
        samples[c].push(Number(process.hrtime.bigint() - start) / n);
      }
    }
    const perRound = (a: Contender, b: Contender): number => median(samples[a].map((v, i) => v / (samples[b][i] as number)));
    rows.push({
      document,
      bytes: Buffer.byteLength(ours),
      ns: { httpskit: median(samples.httpskit), 'JSON.stringify': median(samples['JSON.stringify']), xmlbuilder2: median(samples.xmlbuilder2), 'fast-xml-parser': median(samples['fast-xml-parser']) },
      oursOverJson: perRound('httpskit', 'JSON.stringify'),
      fxpOverOurs: perRound('fast-xml-parser', 'httpskit'),
      xmlbuilder2OverOurs: perRound('xmlbuilder2', 'httpskit'),
      sameDocument,
    });
  }
  if (sink === 0) console.error('(sink)');
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, json: { type: 'boolean' } } });
  const rows = runXmlBench(values.rounds === undefined ? {} : { rounds: Number(values.rounds) });
  if (values.json === true) console.log(JSON.stringify(rows));
  else {
    for (const r of rows) {
      console.log(`${r.document} (${r.bytes} bytes of XML)`);
      for (const [c, ns] of Object.entries(r.ns)) console.log(`  ${c.padEnd(16)} ${ns.toFixed(0).padStart(8)} ns`);
      console.log(`  ours/JSON.stringify ${r.oursOverJson.toFixed(2)}  fast-xml-parser/ours ${r.fxpOverOurs.toFixed(2)}  xmlbuilder2/ours ${r.xmlbuilder2OverOurs.toFixed(2)}  same document: ${JSON.stringify(r.sameDocument)}`);
    }
  }
}
