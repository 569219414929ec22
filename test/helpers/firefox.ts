// Test helper: a real headless Firefox (Debian's `firefox-esr`), driven over Marionette, its own
// remote protocol (TCP, each message `<byte length>:<JSON>`), which needs no driver and no package.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { browserProfile, findExecutable } from './executable.js';

/** Generous: two cores shared with the rest of the suite. */
const STEP_TIMEOUT_MS = 60_000;

// A fresh profile that does not phone home, and Marionette on a free port (written to
// MarionetteActivePort in the profile).
const PREFS = {
  'marionette.port': 0,
  'remote.prefs.recommended': true,
  'browser.shell.checkDefaultBrowser': false,
  'app.update.disabledForTesting': true,
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.reportingpolicy.firstRun': false,
  'browser.aboutwelcome.enabled': false,
  'network.captive-portal-service.enabled': false,
} as const;

/** The Firefox executable: $FIREFOX if set, else firefox-esr or firefox on PATH; undefined when none. */
export function findFirefox(): Promise<string | undefined> {
  return findExecutable('FIREFOX', ['firefox-esr', 'firefox']);
}

/** What Firefox showed after navigating. */
export interface FirefoxShown {
  /** The document's type as Firefox took it (`application/xml` for a displayed XML tree). */
  readonly contentType: string;
  /** The text of the document (for an XML document, the text its displayed tree holds). */
  readonly text: string;
  /** Set when Firefox showed its own error page instead ("Reached error page: about:neterror…"). */
  readonly errorText: string | undefined;
}

export interface Firefox {
  show(url: string): Promise<FirefoxShown>;
}

/**
 * Starts headless Firefox with a fresh profile, closed after the test. `accept` replaces its
 * navigation Accept header (pref network.http.accept). The test certificate is accepted through
 * the session's acceptInsecureCerts.
 */
export async function launchFirefox(t: TestContext, executable: string, accept?: string): Promise<Firefox> {
  let stop = async (): Promise<void> => {};
  const profile = await browserProfile(t, () => stop());
  const prefs: Record<string, string | number | boolean> = { ...PREFS, ...(accept === undefined ? {} : { 'network.http.accept': accept }) };
  await writeFile(join(profile, 'user.js'), Object.entries(prefs).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});\n`).join(''));
  const child = spawn(executable, ['--headless', '--marionette', '--no-remote', '--profile', profile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let exited = false;
  let marionette: Marionette | undefined;
  child.on('exit', () => {
    exited = true;
  });
  stop = async () => {
    if (exited) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await marionette?.command('Marionette:Quit').catch(() => {});
    marionette?.close();
    await gone;
    clearTimeout(timer);
  };

  let port: number | undefined;
  for (const started = Date.now(); port === undefined; ) {
    if (exited) throw new Error(`Firefox exited at start: ${stderr}`);
    if (Date.now() - started > STEP_TIMEOUT_MS) throw new Error(`Firefox did not open Marionette in ${STEP_TIMEOUT_MS} ms: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const text = await readFile(join(profile, 'MarionetteActivePort'), 'utf8').catch(() => '');
    if (/^\d+\s*$/.test(text)) port = Number(text);
  }
  const session = (marionette = await Marionette.connect(port));
  await session.command('WebDriver:NewSession', { acceptInsecureCerts: true });

  return {
    async show(url) {
      let errorText: string | undefined;
      try {
        await session.command('WebDriver:Navigate', { url });
      } catch (error) {
        errorText = (error as Error).message;
      }
      const script = 'return [document.contentType, (document.body ?? document.documentElement)?.innerText ?? document.documentElement?.textContent ?? ""]';
      const { value } = await session.command('WebDriver:ExecuteScript', { script, args: [] });
      const [contentType, text] = value as [string, string];
      return { contentType, text, errorText };
    },
  };
}

/** Marionette protocol 3: `[0, id, command, params]` → `[1, id, error, result]`. */
class Marionette {
  readonly #socket: Socket;
  readonly #pending = new Map<number, { resolve: (result: Record<string, any>) => void; reject: (error: Error) => void }>();
  #next = 0;

  private constructor(socket: Socket) {
    this.#socket = socket;
  }

  static connect(port: number): Promise<Marionette> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const client = new Marionette(socket);
      let buffer = Buffer.alloc(0);
      let greeted = false;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`Marionette: no greeting in ${STEP_TIMEOUT_MS} ms`));
      }, STEP_TIMEOUT_MS);
      socket.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.on('close', () => {
        for (const { reject: fail } of client.#pending.values()) fail(new Error('Marionette connection closed'));
        client.#pending.clear();
      });
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
          const colon = buffer.indexOf(0x3a);
          if (colon < 0) break;
          const length = Number(buffer.subarray(0, colon).toString('latin1'));
          if (buffer.length < colon + 1 + length) break;
          const message: unknown = JSON.parse(buffer.subarray(colon + 1, colon + 1 + length).toString('utf8'));
          buffer = buffer.subarray(colon + 1 + length);
          // The first message is the greeting ({"applicationType":"gecko","marionetteProtocol":3}).
          if (!greeted) {
            greeted = true;
            clearTimeout(timer);
            resolve(client);
            continue;
          }
          const [, id, error, result] = message as [number, number, { error: string; message: string } | null, Record<string, any> | null];
          const waiting = client.#pending.get(id);
          client.#pending.delete(id);
          if (error !== null) waiting?.reject(new Error(`${error.error}: ${error.message}`));
          else waiting?.resolve(result ?? {});
        }
      });
    });
  }

  command(name: string, params: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`Marionette ${name}: no answer in ${STEP_TIMEOUT_MS} ms`));
      }, STEP_TIMEOUT_MS);
      this.#pending.set(id, {
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      const text = JSON.stringify([0, id, name, params]);
      this.#socket.write(`${Buffer.byteLength(text)}:${text}`);
    });
  }

  close(): void {
    this.#socket.destroy();
  }
}
