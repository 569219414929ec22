// Test helper: a real headless Chromium (Debian's `chromium`), to see what a browser shows.
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';
import { tempDir } from './tmp.js';

const execFileP = promisify(execFile);
const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'] as const;

/** The Chromium executable: $CHROMIUM if set, else the first of NAMES on PATH; undefined when none. */
export async function findChromium(): Promise<string | undefined> {
  const override = process.env['CHROMIUM'];
  if (override !== undefined && override !== '') return override;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    for (const name of NAMES) {
      const file = join(dir, name);
      if (await access(file, constants.X_OK).then(() => true, () => false)) return file;
    }
  }
  return undefined;
}

/**
 * Navigates a fresh headless Chromium profile to `url` and returns the DOM it ends up with
 * (`--dump-dom`): what the browser made of the response. The test certificate is not in the
 * browser's trust store, hence --ignore-certificate-errors; everything that would phone home is off.
 */
export async function dumpDom(t: TestContext, chromium: string, url: string): Promise<string> {
  const profile = await tempDir(t);
  const { stdout } = await execFileP(
    chromium,
    [
      '--headless',
      '--no-sandbox', // CI runs as root, where Chromium's sandbox refuses to start
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      '--ignore-certificate-errors',
      '--dump-dom',
      url,
    ],
    { timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout;
}

/**
 * The text a reader sees on the page: the DOM without style sheets and without Chromium's hidden
 * copy of an XML document's source (`#webkit-xml-viewer-source-xml`), tags removed, entities decoded.
 */
export function visibleText(dom: string): string {
  let html = dom.replace(/<style[^>]*>[\s\S]*?<\/style>/g, '');
  // The hidden source copy holds the problem's own elements, never a <div>: its first </div> closes it.
  html = html.replace(/<div id="webkit-xml-viewer-source-xml">[\s\S]*?<\/div>/, '');
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(lt|gt|quot|#39|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e] as string)
    .replace(/\s+/g, ' ')
    .trim();
}
