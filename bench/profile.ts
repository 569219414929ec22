// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by function, heaviest first.
//   node --import tsx bench/profile.ts FILE.cpuprofile [--top N]
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { top: { type: 'string' } } });
  for (const file of positionals) {
    for (const line of summarizeProfile(readFileSync(file, 'utf8'), Number(values.top ?? 30))) {
      console.log(`${line.selfPercent.toFixed(1).padStart(5)}%  ${line.name.padEnd(40)} ${line.where}`);
    }
  }
}
