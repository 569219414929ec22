// The on-disk format of the users store, as pure functions (no I/O).
//
// Snapshot `<path>`: one JSON document, one user per line so it diffs and reads well:
//   {"format":"httpskit-users","version":1,"generation":3,"users":[
//   {"name":"alice",...},
//   {"name":"bob",...}
//   ]}
// Journal `<path>.journal`: JSON Lines. The first line names the snapshot generation it extends;
// each further line is one acknowledged change:
//   {"format":"httpskit-users-journal","version":1,"generation":3}
//   {"op":"put","user":{"name":"carol",...}}
//   {"op":"delete","name":"bob"}
// Compaction writes generation N+1 of the snapshot, then a new journal for N+1, so a journal
// whose generation is older than the snapshot's is already folded in (the compacting process
// died between the two renames) and is ignored.
import { Buffer, isUtf8 } from 'node:buffer';
import { ServiceError } from '../../errors.js';
import { checkRecord } from '../record.js';
import type { UserRecord } from '../store.js';

export type JournalOp = { readonly op: 'put'; readonly user: UserRecord } | { readonly op: 'delete'; readonly name: string };

export interface ParsedSnapshot {
  readonly generation: number;
  readonly users: Map<string, UserRecord>;
}

export interface ParsedJournal {
  /** Generation from the header line; undefined when the chunk was read without one. */
  readonly generation: number | undefined;
  readonly ops: JournalOp[];
  /** Bytes of complete lines; anything after is a torn, unacknowledged write. */
  readonly consumed: number;
  /** Complete lines read, the header included. */
  readonly lines: number;
}

const SNAPSHOT_FORMAT = 'httpskit-users';
const JOURNAL_FORMAT = 'httpskit-users-journal';
const VERSION = 1;
const NEWLINE = 0x0a;

/** The snapshot text for `users`, which the caller gives in the order to write them. */
export function snapshotText(generation: number, users: Iterable<UserRecord>): string {
  const lines: string[] = [];
  for (const user of users) lines.push(JSON.stringify(user));
  const head = `{"format":"${SNAPSHOT_FORMAT}","version":${VERSION},"generation":${generation},"users":[`;
  return lines.length === 0 ? `${head}]}\n` : `${head}\n${lines.join(',\n')}\n]}\n`;
}

export function journalHeader(generation: number): string {
  return `${JSON.stringify({ format: JOURNAL_FORMAT, version: VERSION, generation })}\n`;
}

export function journalLine(op: JournalOp): string {
  return `${JSON.stringify(op)}\n`;
}

/** Parses a whole snapshot; anything wrong throws ERR_STORE_CORRUPT naming the file and place. */
export function parseSnapshot(bytes: Uint8Array, file: string): ParsedSnapshot {
  const text = decodeUtf8(bytes, file, 'the file');
  if (text.trim() === '') throw corrupt(file, 'the file is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(file, `${locateSyntaxError(text)} is not valid JSON (${(error as Error).message.split('\n')[0]})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw corrupt(file, 'the document is not a JSON object');
  const { format, version, generation, users, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw corrupt(file, `unknown member ${JSON.stringify(extra)}`);
  if (format !== SNAPSHOT_FORMAT) throw corrupt(file, `"format" is not "${SNAPSHOT_FORMAT}"`);
  if (version !== VERSION) throw corrupt(file, `unsupported "version" ${JSON.stringify(version)} (this version reads ${VERSION})`);
  if (!isGeneration(generation)) throw corrupt(file, '"generation" must be a non-negative integer');
  if (!Array.isArray(users)) throw corrupt(file, '"users" must be an array');
  const map = new Map<string, UserRecord>();
  users.forEach((entry: unknown, index) => {
    const checked = checkRecord(entry, 'shape');
    if (!checked.ok) throw corrupt(file, `users[${index}]: ${checked.problem}`);
    if (map.has(checked.record.name)) throw corrupt(file, `users[${index}]: duplicate user ${JSON.stringify(checked.record.name)}`);
    map.set(checked.record.name, checked.record);
  });
  return { generation, users: map };
}

/**
 * Parses journal bytes. `firstLine` is the 1-based number of the first line in `bytes` (for
 * messages); with `header`, that line must be the journal header. A last line without its
 * newline is a write that was never acknowledged: it is left out of `consumed`, not an error.
 */
export function parseJournal(bytes: Uint8Array, file: string, firstLine: number, header: boolean): ParsedJournal {
  const end = bytes.lastIndexOf(NEWLINE) + 1;
  const ops: JournalOp[] = [];
  let generation: number | undefined;
  if (end === 0) return { generation, ops, consumed: 0, lines: 0 };
  // The split is at an ASCII newline, so the complete part is a whole number of UTF-8 characters.
  const lines = decodeUtf8(bytes.subarray(0, end), file, `lines ${firstLine} and after`).split('\n');
  lines.pop(); // the empty string after the final newline
  lines.forEach((line, index) => {
    const where = `line ${firstLine + index}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw corrupt(file, `${where} is not valid JSON`);
    }
    if (header && index === 0) {
      generation = headerGeneration(value);
      if (generation === undefined) throw corrupt(file, `${where} is not a journal header for format "${JOURNAL_FORMAT}" version ${VERSION}`);
      return;
    }
    const op = toOp(value);
    if (typeof op === 'string') throw corrupt(file, `${where}: ${op}`);
    ops.push(op);
  });
  return { generation, ops, consumed: end, lines: lines.length };
}

/** Applies journal operations to a users map in order. */
export function applyOps(users: Map<string, UserRecord>, ops: readonly JournalOp[]): void {
  for (const op of ops) {
    if (op.op === 'put') users.set(op.user.name, op.user);
    else users.delete(op.name);
  }
}

export function corrupt(file: string, problem: string): ServiceError {
  return new ServiceError(
    'ERR_STORE_CORRUPT',
    `the users store ${file} cannot be read: ${problem}. It was left untouched; repair it or restore it from a backup.`,
  );
}

function toOp(value: unknown): JournalOp | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const entry = value as Record<string, unknown>;
  const keys = Object.keys(entry).length;
  if (entry.op === 'put' && keys === 2) {
    const checked = checkRecord(entry.user, 'shape');
    return checked.ok ? { op: 'put', user: checked.record } : checked.problem;
  }
  if (entry.op === 'delete' && keys === 2 && typeof entry.name === 'string') return { op: 'delete', name: entry.name };
  return 'not a change this version understands ({"op":"put","user":…} or {"op":"delete","name":…})';
}

function headerGeneration(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { format, version, generation } = value as Record<string, unknown>;
  return format === JOURNAL_FORMAT && version === VERSION && isGeneration(generation) ? generation : undefined;
}

function isGeneration(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function decodeUtf8(bytes: Uint8Array, file: string, where: string): string {
  if (!isUtf8(bytes)) throw corrupt(file, `${where} is not valid UTF-8`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

// JSON.parse messages do not always give a position, but snapshots hold one user per line: the
// first line that is not JSON on its own (less the separating comma) is usually the culprit.
function locateSyntaxError(text: string): string {
  const lines = text.split('\n');
  for (let index = 1; index < lines.length - 2; index++) {
    const line = (lines[index] ?? '').replace(/,$/, '');
    try {
      JSON.parse(line);
    } catch {
      return `line ${index + 1}`;
    }
  }
  return 'the document';
}
