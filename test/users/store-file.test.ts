// The store conformance suite against the JSON-file store (S-7: the same tests on both stores).
import { join } from 'node:path';
import { openStore } from '../../lib/users/store.js';
import { tempDir } from '../helpers/tmp.js';
import { storeConformance } from './store.conformance.js';

storeConformance('JSON file', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  return { open: (options = {}) => openStore(path, options) };
});
