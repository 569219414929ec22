// The store conformance suite against a real PostgreSQL (S-7).
import { openStore } from '../../lib/store/open.js';
import { testPostgres } from '../helpers/postgres.js';
import { storeConformance } from './conformance.js';

const pg = await testPostgres();

storeConformance(
  'PostgreSQL',
  async () => {
    const url = await pg.database();
    return { open: (options = {}) => openStore(url, { ...options, postgres: { poolSize: 4, cleanupIntervalMs: 0 } }) };
  },
  { skip: pg.skip },
);
