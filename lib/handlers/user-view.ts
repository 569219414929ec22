// what a user and a page of users look like on the wire, and how a user's name sits in
// a path. Never a hash, a Digest secret or a token: the view is built member by member.
import { HttpError, problem } from '../http/problem.js';
import { bareSegment } from '../http/path-segment.js';
import { decodeComponent } from '../http/query.js';
import { parseFormat } from '../representation/select.js';
import { checkUserName } from '../users/names.js';

/** members in this order; times RFC 3339, UTC, milliseconds. */
export interface UserView {
  readonly name: string;
  readonly role: 'user' | 'admin';
  readonly createdAt: string;
  readonly passwordChangedAt: string;
}

/** A user as the store or the library holds it (times as ms since the epoch or as Dates). */
export interface UserLike {
  readonly name: string;
  readonly role: 'user' | 'admin';
  readonly createdAt: number | Date;
  readonly passwordChangedAt: number | Date;
}

/** Views of records already shown. Only frozen ones: a store replaces a record on every write, never changes it. */
const views = new WeakMap<UserLike, UserView>();

export function userView(u: UserLike): UserView {
  const known = views.get(u);
  if (known !== undefined) return known;
  const view: UserView = Object.freeze({ name: u.name, role: u.role, createdAt: iso(u.createdAt), passwordChangedAt: iso(u.passwordChangedAt) });
  if (Object.isFrozen(u)) views.set(u, view);
  return view;
}

/** a page, `{"users": […], "next": "/user/?after=…&limit=…" | null}`. */
export interface UserPageView {
  readonly users: readonly UserView[];
  readonly next: string | null;
}

/** The XML shapes: `<user>…</user>` and `<users><user>…</user>…<next>…</next></users>`. */
export const USER_SHAPE = { root: 'user' } as const;
export const PAGE_SHAPE = { root: 'users', unwrap: { users: 'user' } } as const;

/** The user's own path (Location, Content-Location): `/user/<name percent-encoded>`, dot-only names as `%2E` (U-2). */
export function userPath(name: string): string {
  // A name that ends like an extension (kept from a store older than U-2's amendment) gets that
  // dot encoded, so the path names this user and not a representation of another one.
  return `/user/${bareSegment(name)}`;
}

/**
 * The user a path segment names, for the write routes (R-4..R-6): percent-decoded, NFC. A literal
 * `.json`/`.xml` ending is an extension here too (as on GET), so `/user/a%2Ejson` is the only way to
 * `a.json`. Undefined when the segment cannot name a user (such a user does not exist).
 * Throws 400 for malformed percent-encoding.
 */
export function pathUserName(segment: string): string | undefined {
  const dot = segment.lastIndexOf('.');
  const raw = dot >= 0 && parseFormat(segment.slice(dot + 1)) !== undefined ? segment.slice(0, dot) : segment;
  const decoded = decodeComponent(raw, false);
  if (decoded === undefined) throw new HttpError(problem(400, 'bad-request', { detail: 'The path has malformed percent-encoding.' }));
  const check = checkUserName(decoded);
  return check.ok ? check.name : undefined;
}

/** A decoded name from the representation path, as a user name (NFC), or undefined. */
export function userName(decoded: string): string | undefined {
  const check = checkUserName(decoded);
  return check.ok ? check.name : undefined;
}

/**
 * The user a raw path segment names, with no extension read into it (the password and reset-token
 * routes): percent-decoded, NFC; undefined when it cannot name a user, malformed encoding included
 * (such a user does not exist, and those routes answer as for one that does not).
 */
export function segmentUserName(segment: string): string | undefined {
  const decoded = decodeComponent(segment, false);
  return decoded === undefined ? undefined : userName(decoded);
}

function iso(t: number | Date): string {
  return (typeof t === 'number' ? new Date(t) : t).toISOString();
}
