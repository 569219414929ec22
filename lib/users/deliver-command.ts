// P-12: the CLI's delivery channel for reset tokens, `--on-reset-token COMMAND`. The command runs
// without a shell (nothing in the event can be interpreted by one), gets the event as one JSON line
// on its standard input (never in its arguments or environment, which other local users can read
// through /proc or ps), and has 10 s. A failure rejects; the service logs it through the A-4 hook
// rules and the HTTP caller never learns of it.
import { spawn } from 'node:child_process';

/** What the command gets on stdin, one line: `{"name":…,"token":…,"expiresAt":"2026-…Z"}`. */
export interface DeliveryEvent {
  readonly name: string;
  readonly token: string;
  readonly expiresAt: Date;
}

export interface CommandDeliveryOptions {
  /** Longest run before the command is killed (SIGTERM, then SIGKILL 1 s later). @default 10000 */
  readonly timeoutMs?: number;
}

/**
 * Splits COMMAND at white space into a program and its arguments: no shell, no quoting, no
 * expansion (a program path with spaces needs a wrapper script). Throws TypeError for an empty one.
 */
export function parseCommand(command: string): { readonly program: string; readonly args: readonly string[] } {
  const words = command.trim().split(/\s+/);
  const [program, ...args] = words;
  if (program === undefined || program === '') throw new TypeError('the reset-token command must not be empty');
  return { program, args };
}

/** An `onResetToken` hook that runs `command` once per token. */
export function createCommandDelivery(command: string, options: CommandDeliveryOptions = {}): (event: DeliveryEvent) => Promise<void> {
  const { program, args } = parseCommand(command);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return (event) =>
    new Promise<void>((resolve, reject) => {
      const line = JSON.stringify({ name: event.name, token: event.token, expiresAt: event.expiresAt.toISOString() }) + '\n';
      // Its output is not ours to log: a delivery script may well echo the token.
      const child = spawn(program, args, { shell: false, stdio: ['pipe', 'ignore', 'ignore'], windowsHide: true });
      let timedOut = false;
      let killer: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGTERM');
        killer = setTimeout(() => child.kill('SIGKILL'), 1_000);
        killer.unref();
      }, timeoutMs);
      timer.unref();
      const done = (error: Error | undefined): void => {
        clearTimeout(timer);
        if (killer !== undefined && error === undefined) clearTimeout(killer);
        if (error === undefined) resolve();
        else reject(error);
      };
      child.once('error', (error) => done(new Error(`the reset-token command could not run: ${(error as NodeJS.ErrnoException).code ?? error.message}`)));
      child.once('close', (code, signal) => {
        if (timedOut) done(new Error(`the reset-token command did not finish within ${timeoutMs} ms and was killed`));
        else if (code === 0) done(undefined);
        else done(new Error(`the reset-token command failed (${code === null ? `signal ${String(signal)}` : `exit code ${code}`})`));
      });
      // A command that exits without reading its input makes the write fail (EPIPE): its exit code decides.
      child.stdin.once('error', () => {});
      child.stdin.end(line);
    });
}
