// Password hashes (CONTRACT U-3): scrypt (RFC 7914) stored as a PHC string,
//   $scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>
// the convention of passlib and @phc/scrypt; salt and hash are base64 without
// padding (PHC string format "B64").

import { Buffer } from 'node:buffer';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createMemo } from '../memo.js';
import { hasLoneSurrogate, preparePassword } from './prepare.js';
import { scryptKey } from './scrypt-pool.js';

/** scrypt cost: N = 2^ln, block size r, parallelism p. */
export interface ScryptCost {
  readonly ln: number;
  readonly r: number;
  readonly p: number;
}

/** OWASP's scrypt minimum: N=2^17 (128 MiB), r=8, p=1. */
export const DEFAULT_COST: ScryptCost = Object.freeze({ ln: 17, r: 8, p: 1 });

// 16-byte salt and 32-byte key: the PHC format's recommendation, and NIST's
// "salt SHALL be at least 32 bits" with room to spare.
const SALT_BYTES = 16;
const KEY_BYTES = 32;

// Bounds shared by hashing and parsing, so every hash we write can be read back.
// The memory bound keeps a tampered store from asking for 128 GiB.
const LN = { min: 1, max: 24 } as const;
const R = { min: 1, max: 64 } as const;
const P = { min: 1, max: 16 } as const;
const MAX_MEMORY = 2 ** 30; // 1 GiB for 128 * N * r
const SALT_LENGTH = { min: 8, max: 64 } as const; // bytes we accept when reading
const KEY_LENGTH = { min: 16, max: 64 } as const;
const MAX_PHC_LENGTH = 512;

interface ParsedHash {
  readonly cost: ScryptCost;
  readonly salt: Buffer;
  readonly key: Buffer;
}

/** Hashes a prepared password with a fresh random salt. Asynchronous: never blocks the event loop. */
export async function hashPassword(prepared: string, cost: ScryptCost = DEFAULT_COST): Promise<string> {
  checkCost(cost);
  if (hasLoneSurrogate(prepared)) throw new TypeError('password has a lone surrogate; refuse it before hashing (U-4)');
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(prepared, salt, cost, KEY_BYTES);
  return `$scrypt$ln=${cost.ln},r=${cost.r},p=${cost.p}$${b64(salt)}$${b64(key)}`;
}

/**
 * True when `prepared` matches the PHC string, compared in constant time.
 * Never throws on a bad PHC string: it is false, at once and without hashing
 * (such a string is store corruption, not something a client can cause;
 * unknown users go through {@link createDummyHash} instead).
 */
export async function verifyPassword(prepared: string, phc: string, atLeast?: ScryptCost): Promise<boolean> {
  const parsed = parsePhc(phc);
  // A lone surrogate would encode as U+FFFD and could match a stored U+FFFD (U-4).
  if (parsed === undefined || hasLoneSurrogate(prepared)) return false;
  const key = await derive(prepared, parsed.salt, parsed.cost, parsed.key.length);
  const ok = timingSafeEqual(key, parsed.key);
  // U-3 (amended): a hash below the configured cost must not answer faster than the dummy hash
  // of an unknown user, or raising the cost would tell an attacker which names exist.
  if (atLeast !== undefined) await spendDifference(parsed.cost, atLeast);
  return ok;
}

/**
 * Spends scrypt work worth `target` minus `done` (work ~ N·r·p), as a few scrypt calls on random
 * input at the target's r whose N are the powers of two that sum to the difference.
 */
async function spendDifference(done: ScryptCost, target: ScryptCost): Promise<void> {
  checkCost(target);
  if (2 ** done.ln * done.r * done.p >= 2 ** target.ln * target.r * target.p) return; // the usual case: nothing owed
  let units = Math.floor((2 ** target.ln * target.r * target.p - 2 ** done.ln * done.r * done.p) / target.r);
  const salt = randomBytes(SALT_BYTES);
  for (let ln = target.ln; ln >= LN.min && units >= 2 ** LN.min; ln--) {
    const N = 2 ** ln;
    while (units >= N) {
      units -= N;
      await derive(randomBytes(16).toString('base64url'), salt, { ln, r: target.r, p: 1 }, KEY_BYTES);
    }
  }
}

/**
 * True when the stored hash should be replaced on the next successful
 * verification (U-3): its N, r or p is below `cost`, its salt or key is shorter
 * than we now write, or it does not parse at all.
 */
export function needsRehash(phc: string, cost: ScryptCost): boolean {
  const parsed = parsePhc(phc);
  if (parsed === undefined) return true;
  return (
    parsed.cost.ln < cost.ln ||
    parsed.cost.r < cost.r ||
    parsed.cost.p < cost.p ||
    parsed.salt.length < SALT_BYTES ||
    parsed.key.length < KEY_BYTES
  );
}

/**
 * A hash of a random secret nobody knows. Verify unknown users' passwords
 * against it so they cost the same scrypt as a wrong password (U-3).
 */
export async function createDummyHash(cost: ScryptCost): Promise<string> {
  return hashPassword(randomBytes(32).toString('base64url'), cost);
}

async function derive(password: string, salt: Buffer, cost: ScryptCost, keyLength: number): Promise<Buffer> {
  const N = 2 ** cost.ln;
  // OpenSSL refuses unless maxmem >= 128*r*(N+2) + 128*r*p (measured; the Node
  // default of 32 MiB is too small for N=2^17). The margin costs nothing: it is a limit, not an allocation.
  const maxmem = 128 * cost.r * (N + 2 + cost.p) + 1024 * 1024;
  // Preparation is idempotent; redoing it means no caller can store an unverifiable hash.
  const input = Buffer.from(preparePassword(password), 'utf8');
  try {
    return await scryptKey(input, salt, keyLength, { N, r: cost.r, p: cost.p, maxmem });
  } finally {
    input.fill(0); // the bytes may share Node's buffer pool with later allocations
  }
}

function checkCost(cost: ScryptCost): void {
  if (!isCost(cost)) {
    throw new RangeError(
      `scrypt cost must have integer ln ${LN.min}..${LN.max}, r ${R.min}..${R.max}, p ${P.min}..${P.max} ` +
        `and 128*2^ln*r at most ${MAX_MEMORY}; got ${JSON.stringify(cost)}`,
    );
  }
}

function isCost(cost: ScryptCost): boolean {
  return (
    typeof cost === 'object' &&
    cost !== null &&
    inRange(cost.ln, LN) &&
    inRange(cost.r, R) &&
    inRange(cost.p, P) &&
    128 * 2 ** cost.ln * cost.r <= MAX_MEMORY
  );
}

function inRange(n: unknown, range: { readonly min: number; readonly max: number }): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= range.min && n <= range.max;
}

// The same few stored hashes are verified again and again (Basic has no session): parse each once.
// Callers only read the buffers. A hash that does not parse is remembered as null.
const parsedHashes = createMemo<ParsedHash | null>((phc) => readPhc(phc) ?? null, { size: 1024, maxKeyLength: MAX_PHC_LENGTH });

function parsePhc(phc: string): ParsedHash | undefined {
  if (typeof phc !== 'string') return undefined;
  return parsedHashes(phc) ?? undefined;
}

// PHC string format: $<id>$<param>=<value>(,<param>=<value>)*$<salt>$<hash>.
// Parameters may come in any order, each exactly once; decimal values without
// sign or leading zeros. Anything else is "not a hash of ours": undefined.
function readPhc(phc: string): ParsedHash | undefined {
  if (phc.length > MAX_PHC_LENGTH) return undefined;
  const fields = phc.split('$');
  if (fields.length !== 5 || fields[0] !== '' || fields[1] !== 'scrypt') return undefined;
  const params = new Map<string, number>();
  for (const pair of (fields[2] ?? '').split(',')) {
    const match = /^(ln|r|p)=(0|[1-9][0-9]{0,8})$/.exec(pair);
    if (match === null || params.has(match[1] ?? '')) return undefined;
    params.set(match[1] ?? '', Number(match[2]));
  }
  const cost = { ln: params.get('ln'), r: params.get('r'), p: params.get('p') };
  if (cost.ln === undefined || cost.r === undefined || cost.p === undefined) return undefined;
  const checked: ScryptCost = { ln: cost.ln, r: cost.r, p: cost.p };
  if (!isCost(checked)) return undefined;
  const salt = unb64(fields[3] ?? '');
  const key = unb64(fields[4] ?? '');
  if (salt === undefined || salt.length < SALT_LENGTH.min || salt.length > SALT_LENGTH.max) return undefined;
  if (key === undefined || key.length < KEY_LENGTH.min || key.length > KEY_LENGTH.max) return undefined;
  return { cost: checked, salt, key };
}

function b64(bytes: Buffer): string {
  return bytes.toString('base64').replace(/=+$/, '');
}

// Buffer.from(…, 'base64') skips characters it does not know; insist on the
// alphabet and on the canonical form (re-encoding gives the same text back).
function unb64(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+$/.test(text) || text.length % 4 === 1) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return b64(bytes) === text ? bytes : undefined;
}
