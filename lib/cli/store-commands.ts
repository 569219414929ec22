// `store migrate` and `store copy FROM TO` (S-5): schema upgrades for operators whose servers run
// with --no-migrate, and moving every user between a file store and PostgreSQL (either way).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ServiceError } from '../errors.js';
import { isPostgresUrl, MEMORY_STORE, redactUrl, storeKind } from '../store/spec.js';
import { copyStore } from '../store/copy.js';
import { openStore } from '../store/open.js';
import type { Command } from './command.js';
import type { FlagName } from './flags.js';

export const POSTGRES_FLAGS = ['pg-pool-size', 'pg-connect-timeout', 'pg-query-timeout'] as const satisfies readonly FlagName[];

export const STORE_COMMANDS: readonly Command[] = [
  {
    words: ['store', 'migrate'],
    args: [],
    synopsis: '--store postgres://…',
    summary: 'bring a PostgreSQL store\'s schema up to this version (servers do it at start unless --no-migrate)',
    flags: ['store', ...POSTGRES_FLAGS],
    store: 'existing',
    run: async (ctx) => {
      const url = ctx.options.store;
      if (url === undefined || !isPostgresUrl(url)) throw new ServiceError('ERR_INVALID_OPTION', 'store migrate needs --store postgres://… (a file store has no schema to migrate)');
      const { migratePostgres } = await import('../store/postgres/postgres-store.js');
      const { from, to } = await migratePostgres(url, { ...ctx.options.postgres, cleanupIntervalMs: 0 });
      ctx.io.stderr.write(from === to ? `the schema of ${redactUrl(url)} is at version ${to}: nothing to do\n` : `migrated ${redactUrl(url)} from schema version ${from} to ${to}\n`);
    },
  },
  {
    words: ['store', 'copy'],
    args: ['FROM', 'TO'],
    synopsis: 'FROM TO',
    summary: 'copy every user from one store to another (file or postgres://…), verbatim; TO must hold no user',
    flags: [...POSTGRES_FLAGS],
    store: 'existing',
    run: async (ctx) => {
      const [from = '', to = ''] = ctx.args;
      // A refusal names the argument (FROM, TO), not --store.
      const fromKind = storeKind(from, 'FROM');
      const toKind = storeKind(to, 'TO');
      // A memory store (U-6) is gone when this command ends: nothing to copy from or to.
      if (fromKind === 'memory' || toKind === 'memory') throw new ServiceError('ERR_INVALID_OPTION', `store copy needs stores that outlive it, not ${MEMORY_STORE}`);
      // Copying from a file that is not there would create an empty store and "copy" nobody.
      if (fromKind === 'file' && !existsSync(resolve(from)) && !existsSync(`${resolve(from)}.journal`)) {
        throw new ServiceError('ERR_INVALID_OPTION', `no user store at ${resolve(from)} (nothing was copied)`);
      }
      const postgres = { ...ctx.options.postgres, cleanupIntervalMs: 0 };
      const source = await openStore(from, { postgres });
      try {
        const target = await openStore(to, { postgres });
        try {
          const { copied } = await copyStore(source, target);
          ctx.io.stderr.write(`copied ${copied} user${copied === 1 ? '' : 's'} from ${redactUrl(from)} to ${redactUrl(to)}\n`);
        } finally {
          await target.close();
        }
      } finally {
        await source.close();
      }
    },
  },
];
