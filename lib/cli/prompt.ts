import { Buffer } from 'node:buffer';
import type { Readable, Writable } from 'node:stream';
import { decodeUtf8Strict } from '../users/prepare.js';

export interface PromptIO {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  readonly stderr: Writable;
}

/** Longest line read from a pipe: well past the 1024-code-point policy limit, short of abuse. */
const MAX_LINE_BYTES = 16 * 1024;

/**
 * A password for the CLI (C-3): never an argument. On a terminal it is prompted twice without
 * echo; otherwise it is the first line of standard input, without its line ending.
 */
export async function readPassword(io: PromptIO, what: string): Promise<string> {
  if (io.stdin.isTTY === true && typeof io.stdin.setRawMode === 'function') {
    const first = await promptHidden(io, `${what}: `);
    const second = await promptHidden(io, `Repeat ${what.toLowerCase()}: `);
    if (first !== second) throw new Error('the two passwords do not match');
    return first;
  }
  return readLine(io.stdin);
}

async function readLine(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    const newline = buf.indexOf(0x0a);
    if (newline >= 0) {
      chunks.push(buf.subarray(0, newline));
      size += newline;
      break;
    }
    chunks.push(buf);
    size += buf.length;
    if (size > MAX_LINE_BYTES) throw new Error('the line on standard input is too long');
  }
  if (chunks.length === 0) throw new Error('no password on standard input (pipe one line, or run on a terminal)');
  let line = Buffer.concat(chunks);
  if (line.at(-1) === 0x0d) line = line.subarray(0, -1);
  const text = decodeUtf8Strict(line);
  if (text === undefined) throw new Error('the password on standard input is not valid UTF-8');
  return text;
}

function promptHidden(io: PromptIO, question: string): Promise<string> {
  const { stdin, stderr } = io;
  return new Promise((resolve, reject) => {
    // Echo off before the prompt shows, so nothing typed in answer to it is ever echoed.
    stdin.setRawMode?.(true);
    stdin.resume();
    stderr.write(question);
    let bytes = Buffer.alloc(0);
    const finish = (error?: Error): void => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      stderr.write('\n');
      if (error !== undefined) return reject(error);
      const text = decodeUtf8Strict(bytes);
      if (text === undefined) reject(new Error('the password is not valid UTF-8'));
      else resolve(text);
    };
    const onData = (chunk: Buffer): void => {
      for (const byte of chunk) {
        if (byte === 0x0d || byte === 0x0a) return finish();
        if (byte === 0x03) return finish(new Error('cancelled'));
        if (byte === 0x04 && bytes.length === 0) return finish(new Error('cancelled'));
        if (byte === 0x7f || byte === 0x08) {
          // Backspace: drop one whole UTF-8 character.
          let end = bytes.length - 1;
          while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
          bytes = bytes.subarray(0, Math.max(0, end));
          continue;
        }
        bytes = Buffer.concat([bytes, Buffer.of(byte)]);
      }
    };
    stdin.on('data', onData);
  });
}
