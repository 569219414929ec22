import { ServiceError } from '../errors.js';
import { toXml } from '../representation/xml.js';
import { argumentError } from '../validate.js';

/**
 * The problem types the service itself sends (CONTRACT E-2), each with the one status it is sent
 * with and its title. The slug is the last segment of `type`.
 */
const KNOWN = {
  'bad-request': [400, 'Bad Request'],
  unauthorized: [401, 'Unauthorized'],
  'https-required': [403, 'HTTPS Required'],
  forbidden: [403, 'Forbidden'],
  'invalid-credentials': [403, 'Invalid Credentials'],
  'not-found': [404, 'Not Found'],
  'method-not-allowed': [405, 'Method Not Allowed'],
  'not-acceptable': [406, 'Not Acceptable'],
  conflict: [409, 'Conflict'],
  'request-timeout': [408, 'Request Timeout'],
  'precondition-failed': [412, 'Precondition Failed'],
  'payload-too-large': [413, 'Content Too Large'],
  'uri-too-long': [414, 'URI Too Long'],
  'unsupported-media-type': [415, 'Unsupported Media Type'],
  unprocessable: [422, 'Unprocessable Content'],
  'password-policy': [422, 'Password Does Not Meet The Policy'],
  'precondition-required': [428, 'Precondition Required'],
  'too-many-requests': [429, 'Too Many Requests'],
  'request-header-fields-too-large': [431, 'Request Header Fields Too Large'],
  internal: [500, 'Internal Server Error'],
  overloaded: [503, 'Service Overloaded'],
} as const satisfies Readonly<Record<string, readonly [status: number, title: string]>>;

/**
 * The service's own problem types (E-2). An embedder may use one of these with its own status, or
 * a slug of its own (any string of letters, digits and `-._~`) with a `title` in `extra`.
 */
export type ProblemSlug = keyof typeof KNOWN;

/** The service's own problem types, slug → status and title: for documents that list them. */
export const PROBLEM_TYPES: ReadonlyMap<ProblemSlug, { readonly status: number; readonly title: string }> = new Map(
  (Object.keys(KNOWN) as ProblemSlug[]).map((slug) => [slug, Object.freeze({ status: KNOWN[slug][0], title: KNOWN[slug][1] })]),
);

/** An RFC 9457 problem details object. */
export interface Problem {
  /** `/problems/<slug>`: a `ProblemSlug`, or an embedder's own slug. */
  readonly type: `/problems/${string}`;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly [extension: string]: unknown;
}

/** What `problem()` adds to type, title and status: `detail` and extension members. */
export type ProblemExtra = Readonly<Record<string, unknown>> & { readonly detail?: string; readonly title?: string };

const EMPTY: ProblemExtra = Object.freeze({});

// RFC 3986 unreserved characters, starting with a letter or digit (so never "." or ".."): the
// slug is a path segment of `type` as it is, with no percent-encoding to get wrong.
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,99}$/;

/**
 * Builds a problem document (E-2). `extra` may carry `detail` and extension members. A slug of the
 * service's own (`ProblemSlug`) comes with its own status (`problem(404, 'forbidden')` is refused)
 * and title; an embedder's own slug may take any 4xx or 5xx status and must bring its `title`.
 * Refusals are `ServiceError` `ERR_INVALID_ARGUMENT`: a programming error, answered 500 if it
 * happens while serving.
 * @example problem(409, 'out-of-stock', { title: 'Out of Stock', detail: 'No copies left.', sku: 'B-42' })
 */
export function problem(status: number, slug: ProblemSlug, extra?: ProblemExtra): Problem;
export function problem(status: number, slug: string, extra: ProblemExtra & { readonly title: string }): Problem;
export function problem(status: number, slug: string, extra: ProblemExtra = EMPTY): Problem {
  const known = Object.hasOwn(KNOWN, slug) ? KNOWN[slug as ProblemSlug] : undefined;
  if (known !== undefined && known[0] === status && extra === EMPTY) return { type: `/problems/${slug}`, title: known[1], status };
  checkProblem(status, slug, extra, known);
  return { type: `/problems/${slug}`, title: known?.[1] as string, status, ...extra };
}

function checkProblem(status: unknown, slug: unknown, extra: unknown, known: readonly [number, string] | undefined): void {
  const refuse = (message: string): never => {
    throw new ServiceError('ERR_INVALID_ARGUMENT', `problem(): ${message}`);
  };
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    refuse(`status must be an integer from 400 to 599, got ${describe(status)}`);
  }
  if (typeof slug !== 'string' || !SLUG.test(slug)) {
    refuse(`slug must be 1 to 100 letters, digits, "-", ".", "_" or "~", starting with a letter or digit, got ${describe(slug)}`);
  }
  if (known !== undefined && known[0] !== status) refuse(`the slug "${String(slug)}" is sent with status ${known[0]}, not ${String(status)}; use a slug of your own (with a title) for another status`);
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) refuse(`extra must be an object, got ${describe(extra)}`);
  const members = extra as Record<string, unknown>;
  for (const fixed of ['type', 'status']) if (Object.hasOwn(members, fixed)) refuse(`extra may not set "${fixed}": it comes from the arguments`);
  if (members['detail'] !== undefined && typeof members['detail'] !== 'string') refuse(`extra.detail must be a string, got ${describe(members['detail'])}`);
  const title = members['title'];
  if (title !== undefined && typeof title !== 'string') refuse(`extra.title must be a string, got ${describe(title)}`);
  if (known === undefined && (typeof title !== 'string' || title === '')) refuse(`the slug "${String(slug)}" is not one of the service's, so extra.title must name it`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null || Array.isArray(value)) return value === null ? 'null' : 'an array';
  return typeof value === 'number' ? String(value) : typeof value;
}

/** A request failure: turned into a problem response by the dispatcher, never thrown past it. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly problem: Problem,
    readonly headers: Readonly<Record<string, string | readonly string[]>> = {},
  ) {
    super(checkDocument(problem, 'problem').title);
  }
}

/** a problem document is an object with a `status` (what `problem()` makes); anything else is refused. */
function checkDocument(p: unknown, name: string): Problem {
  if (typeof p !== 'object' || p === null || typeof (p as { status?: unknown }).status !== 'number') throw argumentError(`${name} must be a problem document (made by problem()), got ${p === null ? 'null' : typeof p}`);
  return p as Problem;
}

export type ProblemFormat = 'json' | 'xml';

/**
 * The media types a problem may be labelled with (E-1 amended): the RFC 9457 types, or the plain
 * type of the same body when that is what the request's `Accept` accepts (a browser's navigation
 * accepts `application/xml`, not `application/problem+xml`, and shows nothing for the latter).
 */
export type ProblemMediaType = 'application/problem+json' | 'application/json' | 'application/problem+xml' | 'application/xml' | 'text/xml';

const LABELS: ReadonlySet<string> = new Set<ProblemMediaType>(['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml']);

/**
 * Renders a problem as JSON or as XML (RFC 9457 appendix B), labelled `application/problem+json` /
 * `application/problem+xml` for a format, or with the media type given.
 */
export function renderProblem(p: Problem, as: ProblemFormat | ProblemMediaType): { contentType: string; body: string } {
  const type = as === 'json' ? 'application/problem+json' : as === 'xml' ? 'application/problem+xml' : as;
  if (!LABELS.has(type)) throw argumentError(`renderProblem: expected 'json', 'xml' or a problem media type, got ${JSON.stringify(as)}`);
  checkDocument(p, 'renderProblem: p');
  if (type.endsWith('xml')) {
    return {
      contentType: `${type}; charset=utf-8`,
      body: toXml(p, { root: 'problem', namespace: 'urn:ietf:rfc:7807', itemName: 'i' }),
    };
  }
  return { contentType: `${type}; charset=utf-8`, body: JSON.stringify(p) };
}
