import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Protocol } from './https.js';

/** The compiled command (C-1): `npm test` builds dist/ first. */
export const BIN = fileURLToPath(new URL('../../dist/bin/httpskit.js', import.meta.url));

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the command to completion with `input` on stdin. */
export function run(args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string; bin?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.bin ?? BIN, ...args], {
      cwd: options.cwd,
      env: { ...cleanEnv(), ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** Starts `serve` and resolves with the URL from its startup line. */
export function serve(args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; bin?: string } = {}): Promise<{ child: ChildProcess; url: string; output: () => { stdout: string; stderr: string } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.bin ?? BIN, 'serve', ...args], {
      cwd: options.cwd,
      env: { ...cleanEnv(), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const output = () => ({ stdout, stderr });
    child.stdout.on('data', (d) => {
      stdout += d;
      for (const line of stdout.split('\n')) {
        if (!line.includes('"listening"')) continue;
        try {
          resolve({ child, url: (JSON.parse(line) as { url: string }).url, output });
        } catch {
          // partial line: wait for more
        }
      }
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
}

/** Waits for a child to exit and returns its code. */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The environment without our own HTTPSKIT_* variables, so the developer's shell can't leak into tests. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HTTPSKIT_')) env[k] = v;
  return env;
}

/** True when curl is on the PATH (tests that drive it skip with a message otherwise). */
export function hasCurl(): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('curl', ['--version'], { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
}

/** curl's flag for each protocol (H-1): a looped test says which one curl speaks instead of taking curl's default (h2 where it can). */
export const CURL_PROTOCOL_FLAG = { h1: '--http1.1', h2: '--http2' } as const;

/** Why curl cannot be the client over `protocol` here (not installed, or built without HTTP/2), or undefined when it can. */
export function curlSkip(protocol: Protocol): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn('curl', ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', () => resolve('curl is not installed'));
    child.on('close', (code) => {
      if (code !== 0) resolve('curl is not installed');
      else resolve(protocol === 'h2' && !/^Features:.* HTTP2\b/m.test(out) ? 'curl was built without HTTP/2 (nghttp2)' : undefined);
    });
  });
}

/** `serve` on a free port with a temp store and certificate folder; killed after the test. */
export async function serveInTemp(
  t: { after: (fn: () => unknown) => void },
  dir: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ storePath: string; cacert: string; port: string; url: string }> {
  const storePath = join(dir, 'users.json');
  const certDir = join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  const { child, url } = await serve(['--port', '0', '--cert-dir', certDir, '--store', storePath, ...args], { env });
  t.after(() => child.kill('SIGKILL'));
  return { storePath, cacert: join(certDir, 'localhost-cert.pem'), port: new URL(url).port, url };
}
