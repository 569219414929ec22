import { readFile } from 'node:fs/promises';
import { process } from '../process.js';
import { streamLines } from '../log.js';
import { UsageError } from './args.js';
import type { CommandContext } from './command.js';
import { describe } from './describe.js';
import { holdYoungGeneration } from './young-generation.js';

/**
 * `serve` (C-2, C-5, C-6): listen until SIGINT/SIGTERM (or, when npm started it, until npm's
 * process has gone: see whenOrphaned), then let in-flight requests finish.
 */
export async function serve(ctx: CommandContext): Promise<void> {
  const cert = ctx.flags.get('cert');
  const key = ctx.flags.get('key');
  // Like every other path flag (an empty one is a mistake of the command line, not a missing file).
  for (const flag of [cert, key]) if (flag?.value === '') throw new UsageError(`${flag.source} must not be empty`, { help: ['serve'] });
  if (cert === undefined && key !== undefined) throw new UsageError(`${key.source} needs a certificate too (--cert or HTTPSKIT_CERT)`, { help: ['serve'] });
  if (key === undefined && cert !== undefined) throw new UsageError(`${cert.source} needs a key too (--key or HTTPSKIT_KEY)`, { help: ['serve'] });
  let files = {};
  if (cert !== undefined && key !== undefined) {
    // Read here for errors that name the flag; the service reads them again, and again whenever
    // they change (H-2).
    await readPem(String(cert.value), `certificate (${cert.source})`);
    await readPem(String(key.value), `key (${key.source})`);
    files = { certFile: String(cert.value), keyFile: String(key.value) };
  }
  const { io } = ctx;
  const out = streamLines(io.stdout);
  const service = await ctx.open({ ...files, log: out.write });
  try {
    await service.listen();
  } catch (error) {
    await service.close().catch(() => {});
    out.flush();
    const code = (error as { code?: unknown }).code;
    const what = typeof code === 'string' && code.startsWith('ERR_OSSL') ? 'the certificate or key is not usable: ' : '';
    throw new Error(`cannot start: ${what}${describe(error)}`, { cause: error });
  }
  // The process is the server's own: its young generation is kept small (young-generation.ts).
  holdYoungGeneration();
  // H-2: SIGHUP re-reads --cert/--key (a refused pair is logged; the old one stays).
  const reload = (): void => void service.reloadCertificate().catch(() => {});
  process.on('SIGHUP', reload);
  const why = io.stopSignal === undefined ? await stopRequest() : { signal: await io.stopSignal };
  process.off('SIGHUP', reload);
  out.flush();
  const stopping = Date.now();
  io.stdout.write(JSON.stringify({ time: new Date(stopping).toISOString(), level: 'info', msg: 'stopping', ...why }) + '\n');
  await service.close(10_000);
  out.flush();
  // The last line: every request in flight has been answered (or cut at the grace period) and logged.
  io.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'stopped', durationMs: Date.now() - stopping }) + '\n');
}

/** How often a server npm started looks whether its parent has gone. */
const ORPHAN_CHECK_MS = 500;

/** The first of SIGINT, SIGTERM and (under npm) the end of the process that started the server. */
function stopRequest(): Promise<{ readonly signal: string } | { readonly reason: string }> {
  return new Promise((resolve) => {
    const orphaned = whenOrphaned(() => done({ reason: 'the npm process that started the server has ended' }));
    const on = (signal: string): void => done({ signal });
    function done(why: { readonly signal: string } | { readonly reason: string }): void {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      clearInterval(orphaned);
      resolve(why);
    }
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/**
 * `npx httpskit serve` and `npm start` run the server as npm's grandchild, under `sh -c`. npm
 * passes a SIGTERM on to the shell, which ends without passing it on (npm 10 and 11 on Linux): the
 * server would go on serving with no parent, holding its port, and the next start would fail on
 * it. So a server npm started as the script itself (npm sets `npm_lifecycle_script` for both: the
 * command, which names this one) calls `orphaned` once its parent has gone. Only then: a server
 * started from a shell and left running on purpose (`nohup`, `&` and `exit`), or by a script
 * of another command (a test run under `npm test` that starts servers in the background), also
 * loses its parent, and must go on. On Windows a parent's end does not change `process.ppid`;
 * nothing is watched there.
 */
function whenOrphaned(orphaned: () => void): NodeJS.Timeout | undefined {
  if (!/httpskit/.test(process.env['npm_lifecycle_script'] ?? '') || process.platform === 'win32') return undefined;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) orphaned();
  }, ORPHAN_CHECK_MS);
  timer.unref();
  return timer;
}

async function readPem(path: string, what: string): Promise<Buffer> {
  let pem: Buffer;
  try {
    pem = await readFile(path);
  } catch (error) {
    throw new Error(`cannot read the ${what} file "${path}": ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!pem.includes('-----BEGIN')) throw new Error(`the ${what} file "${path}" is not PEM`);
  return pem;
}
