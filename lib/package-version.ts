import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's version, from our own package.json: found by walking up from this module, which
 * sits at a different depth in the sources (lib/) and in the build (dist/lib/). Undefined when
 * it cannot be found.
 */
export function packageVersion(): string | undefined {
  for (let dir = dirname(fileURLToPath(import.meta.url)), depth = 0; depth < 5; dir = dirname(dir), depth++) {
    const candidate = join(dir, 'package.json');
    if (!existsSync(candidate)) continue;
    const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown; version?: unknown };
    if (pkg.name === 'httpskit' && typeof pkg.version === 'string') return pkg.version;
  }
  return undefined;
}
