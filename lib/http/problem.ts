import { toXml } from '../representation/xml.js';

/** Problem types (CONTRACT E-2). The slug is the last segment of `type`. */
export type ProblemSlug =
  | 'not-found'
  | 'method-not-allowed'
  | 'not-acceptable'
  | 'bad-request'
  | 'https-required'
  | 'unauthorized'
  | 'forbidden'
  | 'invalid-credentials'
  | 'unsupported-media-type'
  | 'payload-too-large'
  | 'uri-too-long'
  | 'precondition-failed'
  | 'password-policy'
  | 'too-many-requests'
  | 'overloaded'
  | 'internal';

/** An RFC 9457 problem details object. */
export interface Problem {
  readonly type: `/problems/${ProblemSlug}`;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly [extension: string]: unknown;
}

const TITLES: { readonly [S in ProblemSlug]: string } = {
  'not-found': 'Not Found',
  'method-not-allowed': 'Method Not Allowed',
  'not-acceptable': 'Not Acceptable',
  'bad-request': 'Bad Request',
  'https-required': 'HTTPS Required',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  'invalid-credentials': 'Invalid Credentials',
  'unsupported-media-type': 'Unsupported Media Type',
  'payload-too-large': 'Content Too Large',
  'uri-too-long': 'URI Too Long',
  'precondition-failed': 'Precondition Failed',
  'password-policy': 'Password Does Not Meet The Policy',
  'too-many-requests': 'Too Many Requests',
  overloaded: 'Service Overloaded',
  internal: 'Internal Server Error',
};

/** Builds a problem document; `extra` may carry `detail` and extension members. */
export function problem(status: number, slug: ProblemSlug, extra: Readonly<Record<string, unknown>> = {}): Problem {
  return { type: `/problems/${slug}`, title: TITLES[slug], status, ...extra };
}

/** A request failure: turned into a problem response by the dispatcher, never thrown past it. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly problem: Problem,
    readonly headers: Readonly<Record<string, string | readonly string[]>> = {},
  ) {
    super(problem.title);
  }
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
  if (!LABELS.has(type)) throw new TypeError(`renderProblem: expected 'json', 'xml' or a problem media type, got ${JSON.stringify(as)}`);
  if (type.endsWith('xml')) {
    return {
      contentType: `${type}; charset=utf-8`,
      body: toXml(p, { root: 'problem', namespace: 'urn:ietf:rfc:7807', itemName: 'i' }),
    };
  }
  return { contentType: `${type}; charset=utf-8`, body: JSON.stringify(p) };
}
