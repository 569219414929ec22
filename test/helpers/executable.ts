import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** `$<override>` when set, else the first of `names` found executable on PATH; undefined when none. */
export async function findExecutable(override: string, names: readonly string[]): Promise<string | undefined> {
  const given = process.env[override];
  if (given !== undefined && given !== '') return given;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    for (const name of names) {
      const file = join(dir, name);
      if (await access(file, constants.X_OK).then(() => true, () => false)) return file;
    }
  }
  return undefined;
}
