// Empties dist/ before a build: a file whose source was moved or deleted would otherwise stay
// there and ship in the package (52 such files did, from an earlier layout of lib/).
import { rmSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
