// The store conformance suite against a real PostgreSQL (S-7).
import { openPostgresStore } from '../../lib/users/postgres/postgres-store.js';
import { testPostgres } from '../helpers/postgres.js';
import { storeConformance } from './store.conformance.js';

const pg = await testPostgres();

storeConformance(
  'PostgreSQL',
  async () => {
    const url = await pg.database();
    return { open: (options = {}) => openPostgresStore(url, { poolSize: 4, cleanupIntervalMs: 0, ...options }) };
  },
  { skip: pg.skip },
);
