// The user documents (README.md, docs/**) as the doc tests read them: fenced code blocks with the
// HTML comment that marks them, headings and their anchors, and relative links.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The documents a user reads, relative to the repository root. docs/CONTRACT.md is the contract, whose clause ids are its point. */
export function userDocs(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : []));
  return ['README.md', ...walk('docs').filter((f) => f !== join('docs', 'CONTRACT.md')).sort()];
}

/** Every Markdown file of the repository that links (documents, folder READMEs), for the link check. */
export function allDocs(): string[] {
  const extra = ['SECURITY.md', 'certs/README.md', 'assets/README.md', 'bench/README.md', 'docs/CONTRACT.md'];
  return [...userDocs(), ...extra.filter((f) => { try { readFileSync(join(ROOT, f)); return true; } catch { return false; } })];
}

export function read(doc: string): string {
  return readFileSync(join(ROOT, doc), 'utf8');
}

export interface Block {
  readonly doc: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: string;
  readonly code: string;
  /** `<!-- not run: REASON -->` on the line before the fence (blank lines between allowed). */
  readonly notRun?: string;
  /** The ```text block after `<!-- output -->` that follows this one: what it prints, `…` standing for anything. */
  readonly output?: string;
}

export function blocks(doc: string): Block[] {
  const lines = read(doc).split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end] as string)) end++;
    const code = lines.slice(start + 1, end).join('\n');
    const before = previousNonBlank(lines, start);
    const notRun = /^<!-- not run: (.*\S) -->$/.exec(before ?? '')?.[1];
    const block: { -readonly [K in keyof Block]: Block[K] } = { doc, line: start + 1, lang: open[1] ?? '', code };
    if (notRun !== undefined) block.notRun = notRun;
    // A preceding <!-- output --> marks this block as the output of the one before it.
    if (before === '<!-- output -->') {
      const previous = out.at(-1);
      if (previous !== undefined) (previous as { output?: string }).output = code;
      block.lang = 'output';
    }
    out.push(block);
    i = end;
  }
  return out;
}

function previousNonBlank(lines: readonly string[], at: number): string | undefined {
  for (let j = at - 1; j >= 0; j--) if ((lines[j] as string).trim() !== '') return (lines[j] as string).trim();
  return undefined;
}

/** The text with fenced blocks and inline code blanked out (links and headings are read from the rest). */
export function prose(text: string): string {
  return text
    .replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (m) => ' '.repeat(m.length));
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const source = text.replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, '');
  for (const [, heading = ''] of source.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links of a document's prose: [text](target) and [text](target#anchor), with their line. */
export function links(doc: string): Array<{ line: number; target: string; anchor: string | undefined }> {
  const text = prose(read(doc));
  const out: Array<{ line: number; target: string; anchor: string | undefined }> = [];
  for (const m of text.matchAll(/\]\(<?([^)\s>]*)>?(?:\s+"[^"]*")?\)/g)) {
    const href = m[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    const hash = href.indexOf('#');
    const line = text.slice(0, m.index).split('\n').length;
    out.push({ line, target: hash < 0 ? href : href.slice(0, hash), anchor: hash < 0 ? undefined : decodeURIComponent(href.slice(hash + 1)) });
  }
  return out;
}

export function rel(path: string): string {
  return relative(ROOT, path);
}
