// Settings every instance on one database must share (S-4), recorded at the first server start
// and compared at every start. An instance with different ones refuses to start and names the
// difference; it never rewrites shared data to suit itself. Only replace() (the one explicit
// command) changes them.
import { ServiceError } from '../../errors.js';
import { checkSettings as check, pickSettings as pick, settingsDifferences } from '../settings.js';
import type { RecordedSettingsLedger, SharedSettings } from '../store.js';
import type { Database } from './database.js';

// Recomputes the indexed userhash columns (RFC 7616 §3.4.4) under the recorded realm.
const REHASH = `UPDATE httpskit.users SET
  userhash_sha256 = encode(sha256(convert_to(name || ':' || $1::text, 'UTF8')), 'hex'),
  userhash_md5 = md5(convert_to(name || ':' || $1::text, 'UTF8'))`;

export function createSettingsLedger(db: Database): RecordedSettingsLedger {
  async function read(): Promise<SharedSettings | undefined> {
    const result = await db.query<{ value: SharedSettings }>("SELECT value FROM httpskit.meta WHERE key = 'settings'");
    return result.rows[0]?.value;
  }
  return {
    read,
    async agree(wanted) {
      check(wanted);
      return db.transaction(async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('httpskit settings'))");
        const found = await client.query<{ value: SharedSettings }>("SELECT value FROM httpskit.meta WHERE key = 'settings'");
        const recorded = found.rows[0]?.value;
        if (recorded === undefined) {
          await client.query("INSERT INTO httpskit.meta (key, value) VALUES ('settings', $1)", [JSON.stringify(pick(wanted))]);
          await client.query(REHASH, [wanted.realm]);
          return 'recorded';
        }
        const differences = settingsDifferences(recorded, wanted, 'the database', 'this instance');
        if (differences.length > 0) {
          throw new ServiceError('ERR_STORE_SETTINGS', `this instance's settings differ from those recorded in the database (S-4) — ${differences.join('; ')}`);
        }
        return 'agreed';
      });
    },
    // Recorded for good: a server that stops changes nothing.
    leave: () => Promise.resolve(),
    async replace(wanted) {
      check(wanted);
      await db.transaction(async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('httpskit settings'))");
        await client.query(
          "INSERT INTO httpskit.meta (key, value) VALUES ('settings', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
          [JSON.stringify(pick(wanted))],
        );
        await client.query(REHASH, [wanted.realm]);
      });
    },
  };
}
