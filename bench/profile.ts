// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by function, heaviest first.
//   node --import tsx bench/profile.ts FILE.cpuprofile [--top N] [--inclusive [--match REGEXP]]   (--inclusive: with what each function calls)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileLine {
  readonly name: string;
  readonly where: string;
  readonly selfPercent: number;
}

/** Self time per function (name + file:line), as a share of all samples, heaviest first. */
export function summarizeProfile(text: string, top = 30): ProfileLine[] {
  const profile = JSON.parse(text) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    if (node === undefined) continue;
    const delta = profile.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^file:\/\/.*\/(bench\/results\/build\/|node_modules\/)/, '$1');
    const key = `${functionName || '(anonymous)'}\t${file === '' ? '' : `${file}:${lineNumber + 1}`}`;
    self.set(key, (self.get(key) ?? 0) + delta);
    total += delta;
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, time]) => {
      const [name = '', where = ''] = key.split('\t');
      return { name, where, selfPercent: (100 * time) / total };
    });
}

/**
 * Busy time per function including what it calls (each function counted once per sample however often it
 * is on the stack), as a share of all samples, heaviest first: where a request's CPU goes, by step.
 */
export function inclusiveProfile(text: string, top = 30, match?: RegExp): ProfileLine[] {
  const profile = JSON.parse(text) as Profile;
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const keyOf = (node: ProfileNode): string => {
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^file:\/\/.*\/(bench\/results\/build\/|node_modules\/|dist\/)/, '$1');
    return `${functionName || '(anonymous)'}\t${file === '' ? '' : `${file}:${lineNumber + 1}`}`;
  };
  const totals = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // Shares of the time the thread was busy: a server idles between the runs of others.
    if (byId.get(profile.samples[i] as number)?.callFrame.functionName === '(idle)') continue;
    const delta = profile.timeDeltas[i] ?? 0;
    total += delta;
    const seen = new Set<string>();
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (node === undefined) break;
      const key = keyOf(node);
      if (seen.has(key)) continue;
      seen.add(key);
      totals.set(key, (totals.get(key) ?? 0) + delta);
    }
  }
  return [...totals.entries()]
    .filter(([key]) => match === undefined || match.test(key))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, time]) => {
      const [name = '', where = ''] = key.split('\t');
      return { name, where, selfPercent: (100 * time) / total };
    });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { top: { type: 'string' }, inclusive: { type: 'boolean' }, match: { type: 'string' } } });
  for (const file of positionals) {
    const text = readFileSync(file, 'utf8');
    const top = Number(values.top ?? 30);
    const lines = values.inclusive === true ? inclusiveProfile(text, top, values.match === undefined ? undefined : new RegExp(values.match)) : summarizeProfile(text, top);
    for (const line of lines) {
      console.log(`${line.selfPercent.toFixed(1).padStart(5)}%  ${line.name.padEnd(40)} ${line.where}`);
    }
  }
}
