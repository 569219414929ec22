#!/usr/bin/env node
import { main } from '../lib/cli/main.js';

// A reader that goes away (`httpskit user list | head -1`, a log shipper that stops) fails the
// next write with EPIPE: nothing more can reach it, and that is no reason to fail the command or
// to end a server. Other errors of the standard streams are reported as they were.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
