// S-4 for a file store: the settings of the servers running on it, in a side file
// (`<store>.servers`), so that two servers sharing the store (store.md) cannot run with different
// ones. A server adds itself when it starts and refuses to start when a running one differs, naming
// the difference; it removes itself when it stops. A CLI command follows the running servers'
// settings (a `user add` beside a Digest server writes the Digest secret). With no server running
// nothing is recorded: a lone server restarted with other settings (Digest turned off) starts, as
// it always has. A server killed with -9 says nothing: one on this host is asked the kernel whether
// its process still exists, and is the same process (its start time, where /proc says it: a
// container's pid 1 after a restart is not the server recorded before); one on another host (a
// store on a network file system) counts as running until it stops.
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { process } from '../../process.js';
import { writeDurably } from '../../fs/durable-write.js';
import { errorCode } from '../../fs/errno.js';
import { processStart, sameProcessRuns } from '../../fs/process-exists.js';
import { unsafe } from '../../fs/private-files.js';
import { ServiceError } from '../../errors.js';
import { isSettings, pickSettings, settingsDifferences } from '../settings.js';
import type { SettingsLedger, SharedSettings } from '../store.js';
import { readWhole } from './files.js';

const FORMAT = 'httpskit-servers';

interface Running {
  readonly id: string;
  readonly pid: number;
  /** processStart's for the pid, where it could be read: a pid used again later is not this server. */
  readonly start?: string | undefined;
  readonly host: string;
  readonly settings: SharedSettings;
}

export interface ServersFileOptions {
  /** The store file's path: the side file is `<store>.servers`. */
  readonly store: string;
  /** Runs a task under the store's cross-process writers' lock. */
  readonly exclusive: <T>(task: () => Promise<T>) => Promise<T>;
}

export function createServersFile({ store, exclusive }: ServersFileOptions): SettingsLedger {
  const path = `${store}.servers`;
  const self = randomBytes(9).toString('base64url');
  const host = hostname();
  let joined = false;

  /** The servers the file names that are still running. */
  async function running(): Promise<Running[]> {
    const read = await readWhole(path);
    if (read === undefined) return [];
    // Written 0600 by a rename: one that others may write holds what anyone put there.
    if (process.platform !== 'win32' && (read.mode & 0o022) !== 0) throw unsafe(`${path} may be written by group or others, so its list of running servers cannot be trusted`, 'delete it if no server is running on the store (it is written again at the next start), or chmod 600 it if nobody else can have written it');
    return parse(read.bytes.toString('utf8')).filter((server) => server.host !== host || sameProcessRuns(server.pid, server.start));
  }

  async function write(servers: readonly Running[]): Promise<void> {
    if (servers.length > 0) {
      await writeDurably(path, `${JSON.stringify({ format: FORMAT, version: 1, servers })}\n`);
      return;
    }
    await unlink(path).catch((error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
    });
  }

  function parse(text: string): Running[] {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const o = value as { format?: unknown; version?: unknown; servers?: unknown } | undefined;
    const servers = o?.format === FORMAT && o.version === 1 && Array.isArray(o.servers) ? (o.servers as unknown[]) : undefined;
    if (servers === undefined || !servers.every(isRunning)) {
      throw new ServiceError('ERR_STORE_CORRUPT', `${path} is not a list of the servers running on the store; if none is running, delete it (it is written again at the next start)`);
    }
    return servers;
  }

  return {
    async read() {
      return (await running())[0]?.settings;
    },
    agree(wanted) {
      return exclusive(async () => {
        const others = (await running()).filter((server) => server.id !== self);
        const other = others[0];
        if (other !== undefined) {
          const where = `a server running on this store (pid ${other.pid}${other.host === host ? '' : ` on ${other.host}`})`;
          const differences = settingsDifferences(other.settings, wanted, where, 'this one');
          if (differences.length > 0) {
            throw new ServiceError(
              'ERR_STORE_SETTINGS',
              `this server's settings differ from those of the servers running on ${store} (S-4) — ${differences.join('; ')} (if no server is running on it, delete ${path})`,
            );
          }
        }
        await write([...others, { id: self, pid: process.pid, start: processStart(process.pid), host, settings: pickSettings(wanted) }]);
        joined = true;
        return other === undefined ? 'recorded' : 'agreed';
      });
    },
    async leave() {
      if (!joined) return;
      joined = false;
      await exclusive(async () => write((await running()).filter((server) => server.id !== self)));
    },
  };
}

function isRunning(value: unknown): value is Running {
  const o = value as Running;
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof o.id === 'string' &&
    Number.isSafeInteger(o.pid) &&
    (o.start === undefined || typeof o.start === 'string') &&
    typeof o.host === 'string' &&
    isSettings(o.settings)
  );
}
