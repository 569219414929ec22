// Number formats of the ratio table, shared by its sections.
import type { Ratio } from './postgres.js';

/** A number with `digits` decimals, or "n/a". */
export const f = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** A per-round figure as "median (min–max)". */
export const spread = (r: Ratio, digits = 3): string => `${f(r.median, digits)} (${f(r.min)}–${f(r.max)})`;
