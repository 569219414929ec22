// The store conformance suite against the JSON-file store (U-6, S-7: the same tests on every store).
import { join } from 'node:path';
import { computeUserhash } from '../../lib/auth/digest-hash.js';
import { openStore } from '../../lib/store/open.js';
import { tempDir } from '../helpers/tmp.js';
import { storeConformance } from './conformance.js';

storeConformance('JSON file', async (t) => {
  const path = join(await tempDir(t), 'users.json');
  return { open: (options = {}) => openStore(path, { ...options, userhash: computeUserhash }) };
});
