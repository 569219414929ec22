// Copies run-time data files (assets/) next to the compiled code, so dist/ is self-contained.
import { cpSync, existsSync } from 'node:fs';

if (existsSync('assets')) cpSync('assets', 'dist/assets', { recursive: true });
