// S-4's settings every server on one store must share: their names as messages say them, the
// check of a value, and the differences between two sets, for the database's recorded settings
// (postgres/settings.ts) and a file store's running servers (file/servers-file.ts) alike.
import { ServiceError } from '../errors.js';
import type { SharedSettings } from './store.js';

const LABELS: { readonly [K in keyof SharedSettings]: string } = {
  realm: 'realm',
  digest: 'Digest on or off',
  digestKeyFingerprint: "the Digest key's fingerprint",
  minPasswordLength: 'the minimum password length',
};

/** The settings alone (an object with more members is cut to these). */
export function pickSettings(s: SharedSettings): SharedSettings {
  return { realm: s.realm, digest: s.digest, digestKeyFingerprint: s.digestKeyFingerprint, minPasswordLength: s.minPasswordLength };
}

/** ERR_INVALID_OPTION unless `s` has every setting, of its type. */
export function checkSettings(s: SharedSettings): void {
  if (!isSettings(s)) throw new ServiceError('ERR_INVALID_OPTION', 'settings need realm (string), digest (boolean), digestKeyFingerprint (string or null) and minPasswordLength (integer)');
}

export function isSettings(s: unknown): s is SharedSettings {
  const o = s as SharedSettings;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof o.realm === 'string' &&
    typeof o.digest === 'boolean' &&
    (o.digestKeyFingerprint === null || typeof o.digestKeyFingerprint === 'string') &&
    Number.isSafeInteger(o.minPasswordLength)
  );
}

/** Each setting that differs, said as `<label>: <theirs> has <value>, <ours> <value>`. */
export function settingsDifferences(recorded: SharedSettings, wanted: SharedSettings, theirs: string, ours: string): string[] {
  return (Object.keys(LABELS) as (keyof SharedSettings)[])
    .filter((key) => recorded[key] !== wanted[key])
    .map((key) => `${LABELS[key]}: ${theirs} has ${JSON.stringify(recorded[key])}, ${ours} ${JSON.stringify(wanted[key])}`);
}
