// Users store benchmark (U-1 growth rule): the write of one password change at 100,000 users may
// take at most twice what it takes at 10 users, and loading 100,000 users takes under a second.
//
//   node --import tsx bench/store-bench.ts [--dir DIR] [--updates N] [--json]
//
// Use --dir on the disk the store will live on: fsync on tmpfs costs nothing and hides the point.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { journalHeader, snapshotText } from '../lib/store/file/format.js';
import { openStore, type UserRecord } from '../lib/store/open.js';

export interface StoreBenchRow {
  readonly users: number;
  readonly loadMs: number;
  readonly medianMs: number;
  readonly p90Ms: number;
  readonly meanMs: number;
}

const SIZES = [10, 10_000, 100_000] as const;

/** Seeds a store of each size, then times the open and `updates` password changes. */
export async function runStoreBench(options: { dir?: string; updates?: number } = {}): Promise<StoreBenchRow[]> {
  const updates = options.updates ?? 200;
  const rows: StoreBenchRow[] = [];
  for (const users of SIZES) {
    const dir = await mkdtemp(join(options.dir ?? tmpdir(), 'store-bench-'));
    try {
      const path = join(dir, 'users.json');
      // Seed the files directly: 100,000 fsynced updates would take minutes.
      const records = Array.from({ length: users }, (_, i) => record(`user-${String(i).padStart(6, '0')}`, i));
      await writeFile(path, snapshotText(0, records), { mode: 0o600 });
      await writeFile(`${path}.journal`, journalHeader(0), { mode: 0o600 });

      const loadStart = performance.now();
      const store = await openStore(path);
      const loadMs = performance.now() - loadStart;

      const times: number[] = [];
      for (let i = 0; i < updates; i++) {
        const name = `user-${String((i * 7919) % users).padStart(6, '0')}`;
        const start = performance.now();
        await store.update(name, (current) => ({
          next: current === undefined ? undefined : { ...current, hash: phc(i), resetTokens: [], passwordChangedAt: Date.now() },
          result: undefined,
        }));
        times.push(performance.now() - start);
      }
      await store.close();
      times.sort((a, b) => a - b);
      rows.push({
        users,
        loadMs,
        medianMs: times[Math.floor(times.length / 2)] ?? Number.NaN,
        p90Ms: times[Math.floor(times.length * 0.9)] ?? Number.NaN,
        meanMs: times.reduce((sum, t) => sum + t, 0) / times.length,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return rows;
}

function record(name: string, i: number): UserRecord {
  // Realistic sizes: a PHC string and a sealed Digest blob.
  return { name, role: i % 50 === 0 ? 'admin' : 'user', hash: phc(i), digest: 'd'.repeat(160), createdAt: 1_700_000_000_000, passwordChangedAt: 1_700_000_000_000 + i };
}

function phc(i: number): string {
  return `$scrypt$ln=17,r=8,p=1$${Buffer.from(`salt-${i}`.padEnd(16, '.')).toString('base64url')}$${Buffer.alloc(32, i % 256).toString('base64url')}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { dir: { type: 'string' }, updates: { type: 'string' }, json: { type: 'boolean' } } });
  const rows = await runStoreBench({
    ...(values.dir === undefined ? {} : { dir: values.dir }),
    ...(values.updates === undefined ? {} : { updates: Number(values.updates) }),
  });
  if (values.json === true) {
    console.log(JSON.stringify(rows));
    process.exit(0);
  }
  console.log('users    load ms  update median ms  p90 ms  mean ms');
  for (const row of rows) {
    console.log(
      `${String(row.users).padStart(7)}  ${row.loadMs.toFixed(1).padStart(7)}  ${row.medianMs.toFixed(2).padStart(16)}  ${row.p90Ms.toFixed(2).padStart(6)}  ${row.meanMs.toFixed(2).padStart(7)}`,
    );
  }
  const small = rows[0];
  const large = rows.at(-1);
  if (small !== undefined && large !== undefined) {
    const ratio = large.medianMs / small.medianMs;
    console.log(`update median ratio 100k/10: ${ratio.toFixed(2)} (limit 2)   load at 100k: ${large.loadMs.toFixed(0)} ms (limit 1000)`);
  }
}
