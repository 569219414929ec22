// Test helper: a real headless Chromium (Debian's `chromium`), to see what a browser shows a user.
// It is driven over the Chrome DevTools Protocol on a pipe (--remote-debugging-pipe: JSON messages
// separated by NUL on file descriptors 3 and 4), which needs no WebSocket client and no package.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { browserProfile, findExecutable } from './executable.js';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'] as const;
/** Generous: two cores shared with the rest of the suite. */
const STEP_TIMEOUT_MS = 60_000;

/** The Chromium executable: $CHROMIUM if set, else the first of NAMES on PATH; undefined when none. */
export function findChromium(): Promise<string | undefined> {
  return findExecutable('CHROMIUM', NAMES);
}

/** What the browser showed after navigating. */
export interface Shown {
  /** `document.body.innerText`: the text a reader sees (Chromium's error page when it refused the response). */
  readonly text: string;
  /** The main document's HTTP status and Content-Type, as the browser received them. */
  readonly status: number | undefined;
  readonly contentType: string | undefined;
  /** Set when the navigation failed (`net::ERR_INVALID_RESPONSE` for a type it will not show). */
  readonly errorText: string | undefined;
}

export interface Browser {
  /** Opens `url` in a new tab, with the browser's own navigation `Accept` unless `accept` replaces it. */
  show(url: string, accept?: string): Promise<Shown>;
}

interface Message {
  readonly id?: number;
  readonly method?: string;
  readonly sessionId?: string;
  readonly params?: Record<string, any>;
  readonly result?: Record<string, any>;
  readonly error?: { readonly message: string };
}

/**
 * Starts headless Chromium with a fresh profile, closed after the test. The test certificate is not
 * in the browser's trust store, hence --ignore-certificate-errors; everything that would phone
 * home is off.
 */
export async function launchChromium(t: TestContext, executable: string): Promise<Browser> {
  let cdp: Cdp | undefined;
  const profile = await browserProfile(t, async () => cdp?.close());
  const child = spawn(
    executable,
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
      '--remote-debugging-pipe',
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  const client = (cdp = new Cdp(child));
  await client.send('Browser.getVersion');

  return {
    async show(url, accept) {
      const { targetId } = await client.send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await client.send('Target.attachToTarget', { targetId, flatten: true });
      const stop: (() => void)[] = [];
      try {
        let status: number | undefined;
        let contentType: string | undefined;
        stop.push(
          client.on((m) => {
            if (m.sessionId !== sessionId) return;
            if (m.method === 'Network.responseReceived' && m.params?.['type'] === 'Document' && status === undefined) {
              status = m.params['response'].status;
              contentType = headerOf(m.params['response'].headers, 'content-type');
            }
            // Replaces the navigation's Accept (Network.setExtraHTTPHeaders does not, for navigations).
            if (m.method === 'Fetch.requestPaused' && accept !== undefined) {
              const headers = Object.entries(m.params?.['request'].headers as Record<string, string>)
                .filter(([name]) => name.toLowerCase() !== 'accept')
                .map(([name, value]) => ({ name, value }));
              headers.push({ name: 'Accept', value: accept });
              client.send('Fetch.continueRequest', { requestId: m.params?.['requestId'], headers }, sessionId).catch(() => {});
            }
          }),
        );
        await client.send('Network.enable', {}, sessionId);
        await client.send('Page.enable', {}, sessionId);
        if (accept !== undefined) await client.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] }, sessionId);
        const loaded = client.waitFor((m) => m.sessionId === sessionId && m.method === 'Page.loadEventFired');
        const navigation = await client.send('Page.navigate', { url }, sessionId);
        await loaded;
        const evaluated = await client.send('Runtime.evaluate', { expression: 'document.body ? document.body.innerText : ""', returnByValue: true }, sessionId);
        return { text: String(evaluated['result']?.value ?? ''), status, contentType, errorText: navigation['errorText'] };
      } finally {
        for (const s of stop) s();
        await client.send('Target.closeTarget', { targetId }).catch(() => {});
      }
    },
  };
}

function headerOf(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/** A minimal CDP client over the pipe: requests by id, events to listeners, every wait bounded. */
class Cdp {
  readonly #child: ChildProcess;
  readonly #input: Writable;
  readonly #pending = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  readonly #listeners = new Set<(m: Message) => void>();
  #next = 0;
  #stderr = '';
  #exited: Error | undefined;

  constructor(child: ChildProcess) {
    this.#child = child;
    this.#input = child.stdio[3] as Writable;
    const output = child.stdio[4] as Readable;
    let buffer = '';
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\0'); end >= 0; end = buffer.indexOf('\0')) {
        const message = JSON.parse(buffer.slice(0, end)) as Message;
        buffer = buffer.slice(end + 1);
        if (message.id === undefined) for (const listener of this.#listeners) listener(message);
        else this.#pending.get(message.id)?.resolve(message);
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-4000);
    });
    this.#input.on('error', () => {});
    child.on('exit', (code, signal) => {
      this.#exited = new Error(`Chromium exited (${code ?? signal}): ${this.#stderr}`);
      for (const { reject } of this.#pending.values()) reject(this.#exited);
      this.#pending.clear();
    });
    child.on('error', (error) => {
      this.#exited = error;
      for (const { reject } of this.#pending.values()) reject(error);
    });
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, any>> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`CDP ${method}: no answer in ${STEP_TIMEOUT_MS} ms; Chromium said: ${this.#stderr}`));
      }, STEP_TIMEOUT_MS);
      this.#pending.set(id, {
        resolve: (m) => {
          clearTimeout(timer);
          this.#pending.delete(id);
          if (m.error !== undefined) reject(new Error(`CDP ${method}: ${m.error.message}`));
          else resolve(m.result ?? {});
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#input.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`);
    });
  }

  on(listener: (m: Message) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  waitFor(predicate: (m: Message) => boolean): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`CDP: the awaited event did not come in ${STEP_TIMEOUT_MS} ms`));
      }, STEP_TIMEOUT_MS);
      const off = this.on((m) => {
        if (!predicate(m)) return;
        clearTimeout(timer);
        off();
        resolve(m);
      });
    });
  }

  async close(): Promise<void> {
    if (this.#exited !== undefined) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.send('Browser.close').catch(() => {});
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
