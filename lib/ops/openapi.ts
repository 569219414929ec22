// H-4 / A-12: the OpenAPI 3.1 description of the routes this service serves, served at
// /openapi.json and returned by service.openapi(). The paths are read from the route table (the
// one the router and the dispatcher read: lib/http/route-table.ts); this module holds the shared
// pieces (problem responses, representation content, common headers), written once.
// The test helpers check every response the end-to-end tests receive against the document of the
// service that sent it (test/helpers/openapi-check.ts): a status, a content type or a JSON body
// it does not describe fails the test that received it.
import { PROBLEM_TYPES, type ProblemSlug } from '../http/problem.js';
import type { JsonObject, RouteDecl } from '../http/route-table.js';
import { allowList, routeLabel } from '../http/router.js';
import { METRIC_NAMES } from './metrics.js';

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
type Obj = JsonObject;

/** When each E-2 problem type is sent (its status is PROBLEM_TYPES'). */
const PROBLEM_WHEN: { readonly [S in ProblemSlug]: string } = {
  'bad-request': 'a malformed request: query, percent-encoding, body (the position of a JSON syntax error), credentials',
  unauthorized: 'credentials are missing or wrong (with WWW-Authenticate)',
  'https-required': 'a password or user operation over plain HTTP (T-3)',
  forbidden: 'the caller may not act on that user',
  'invalid-credentials': 'the old password of the reset form is wrong (P-5)',
  'not-found': 'no such resource, item, extension or user',
  'method-not-allowed': 'the path exists, the method does not (with Allow)',
  'not-acceptable': 'no offered type is acceptable (member `available`)',
  conflict: 'the user exists, or the change would remove the last admin',
  'request-timeout': 'the request did not arrive whole within the time-outs (L-1); the connection is closed',
  'precondition-failed': 'If-Match, If-None-Match or If-Unmodified-Since is false (E-4, A-7); nothing was done',
  'payload-too-large': 'the body is over the limit',
  'uri-too-long': 'the request target is over the limit',
  'unsupported-media-type': 'the body has the wrong Content-Type (with Accept-Post or Accept-Patch on a resource)',
  unprocessable: 'a body the resource refuses (member `errors` with RFC 6901 pointers, A-6), or a PATCH of a user naming a member other than role (R-6)',
  'password-policy': 'the new password breaks the policy (member `violations`)',
  'precondition-required': 'a write to a resource that requires If-Match or If-None-Match came without (A-7)',
  'too-many-requests': 'too many failed attempts (with Retry-After, P-8)',
  'request-header-fields-too-large': 'the header block is over the limit (L-1)',
  internal: 'a bug: never sent on purpose',
  overloaded: 'hashing queue full, store busy or unreachable (with Retry-After)',
};

export const ref = (kind: string, name: string): Obj => ({ $ref: `#/components/${kind}/${name}` });
export const schemaRef = (name: string): Obj => ref('schemas', name);

const REPRESENTATION_TYPES = ['application/json', 'application/xml', 'text/xml'] as const;
const PROBLEM_CONTENT_TYPES = ['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml'] as const;

/** A representation's content: JSON, XML and text/xml (N-3), one schema. */
export function representation(schema: Obj, xmlRoot: string): Obj {
  const content: Record<string, Json> = {};
  for (const type of REPRESENTATION_TYPES) {
    content[type] = type === 'application/json' ? { schema } : { schema: { ...schema, xml: { name: xmlRoot } } };
  }
  return content;
}

export function problemResponse(description: string, schema = 'Problem', headers: Obj = {}): Obj {
  const content: Record<string, Json> = {};
  for (const type of PROBLEM_CONTENT_TYPES) {
    content[type] = type.endsWith('json') ? { schema: schemaRef(schema) } : { schema: { ...schemaRef(schema), xml: { name: 'problem', namespace: 'urn:ietf:rfc:7807' } } };
  }
  return { description, headers: { 'X-Request-Id': ref('headers', 'XRequestId'), 'Cache-Control': ref('headers', 'CacheControl'), ...headers }, content };
}

/** Statuses any route can answer: a malformed request, a target or header block over the limits (L-1). */
const COMMON: Obj = { '400': ref('responses', 'BadRequest'), '414': ref('responses', 'UriTooLong'), '431': ref('responses', 'HeadersTooLarge') };
export const R = (name: string): Obj => ref('responses', name);

/** A response carrying a representation (N-5..N-13), with `Location` too when `located` (a 201, A-5). */
export function representationResponse(description: string, schema: Obj, xmlRoot: string, located = false): Obj {
  return {
    description,
    headers: {
      ETag: ref('headers', 'ETag'),
      Vary: ref('headers', 'Vary'),
      Link: ref('headers', 'Link'),
      'Content-Location': ref('headers', 'ContentLocation'),
      'X-Request-Id': ref('headers', 'XRequestId'),
      ...(located ? { Location: ref('headers', 'Location') } : {}),
    },
    content: representation(schema, xmlRoot),
  };
}

export function representationResponses(schema: Obj, xmlRoot: string, extra: Obj = {}): Obj {
  return {
    '200': representationResponse('The representation chosen by extension, return_type, Accept, or JSON by default (N-1).', schema, xmlRoot),
    '304': R('NotModified'),
    '404': R('NotFound'),
    '406': R('NotAcceptable'),
    '412': R('PreconditionFailed'),
    ...extra,
  };
}

export const BASIC_OR_DIGEST: Json = [{ basic: [] }, { digest: [] }];

function operation(id: string, summary: string, tags: readonly string[], responses: Obj, extra: Obj = {}): Obj {
  return { operationId: id, summary, tags, ...extra, responses: { ...COMMON, ...responses } };
}

const RETURN_TYPE = ref('parameters', 'ReturnType');

/**
 * The path items of one route: its operations (GET with its HEAD twin), and OPTIONS with the
 * router's own Allow list; a route with `extensions` also at `<path>.json` and `<path>.xml`
 * (N-1), where `return_type` no longer decides.
 */
function pathItems(route: RouteDecl): Record<string, Json> {
  const path = route.docPath ?? routeLabel(route.pattern);
  const allow = allowList(Object.keys(route.methods)).join(', ');
  const variants: ReadonlyArray<readonly [suffix: string, label: string]> = route.extensions === true ? [['', ''], ['.json', 'Json'], ['.xml', 'Xml']] : [['', '']];
  const items: Record<string, Json> = {};
  for (const [suffix, label] of variants) {
    const item: Record<string, Json> = {};
    let first: string | undefined;
    for (const [method, { doc }] of Object.entries(route.methods)) {
      const parameters = doc.parameters === undefined ? undefined : suffix === '' ? doc.parameters : doc.parameters.filter((p) => JSON.stringify(p) !== JSON.stringify(RETURN_TYPE));
      const extra: Record<string, Json> = {};
      if (parameters !== undefined) extra['parameters'] = parameters;
      if (doc.requestBody !== undefined) extra['requestBody'] = doc.requestBody;
      if (doc.security !== undefined) extra['security'] = doc.security;
      const summary = suffix === '' ? doc.summary : `${doc.summary} as ${suffix.slice(1).toUpperCase()}`;
      const id = `${doc.id}${label}`;
      first ??= id;
      item[method.toLowerCase()] = operation(id, summary, doc.tags, doc.responses, extra);
      // N-7: HEAD gives GET's status and headers, no body.
      if (method === 'GET') item['head'] = operation(`${id}Head`, `${summary} (headers only)`, doc.tags, doc.responses, extra);
    }
    item['options'] = operation(`${first ?? path}Options`, `Allowed methods: ${allow}`, ['meta'], {
      '204': { description: `No content; Allow: ${allow}.`, headers: { Allow: ref('headers', 'Allow'), 'X-Request-Id': ref('headers', 'XRequestId') } },
      ...(route.optionsResponses ?? {}),
    });
    if (route.parameters !== undefined) item['parameters'] = route.parameters;
    items[`${path}${suffix}`] = item;
  }
  return items;
}

/** The scrape listener's one route (H-5): not the HTTPS router's, so described here. */
const METRICS_PATH: Obj = {
  servers: [
    {
      url: 'http://{host}:{metricsPort}',
      description: 'The scrape listener, on when --metrics-port is given (H-5); plain HTTP.',
      variables: { host: { default: '127.0.0.1' }, metricsPort: { default: '9464' } },
    },
  ],
  get: operation('getMetrics', 'Prometheus text exposition format 0.0.4; served only by the scrape listener', ['operations'], {
    '200': { description: `Metrics: ${METRIC_NAMES.join(', ')}.`, content: { 'text/plain': { schema: { type: 'string' } } } },
    '404': R('NotFound'),
  }),
  head: operation('getMetricsHead', 'Prometheus text exposition format 0.0.4 (headers only)', ['operations'], {
    '200': { description: `Metrics: ${METRIC_NAMES.join(', ')}.`, content: { 'text/plain': { schema: { type: 'string' } } } },
    '404': R('NotFound'),
  }),
};

export interface DocumentOptions {
  /** The package's version (V-1: the interface is versioned with it). */
  readonly version: string;
  /** Whether the scrape listener (H-5) is on. */
  readonly metrics: boolean;
  /** The service's mount prefix: the one server's URL. @default '' */
  readonly basePath?: string;
  /** Named schemas the routes refer to (`#/components/schemas/<name>`), the embedder's among them. */
  readonly schemas?: Readonly<Record<string, Json>>;
}

/** The whole document, read from the route table. */
export function openApiDocument(routes: readonly RouteDecl[], options: DocumentOptions): Obj {
  const paths: Record<string, Json> = {};
  for (const route of routes) Object.assign(paths, pathItems(route));
  if (options.metrics) paths['/metrics'] = METRICS_PATH;
  const version = options.version;
  const problemTypes = [...PROBLEM_TYPES.keys()].map((slug) => `/problems/${slug}`);
  return {
    openapi: '3.1.0',
    info: {
      title: 'httpskit',
      version,
      summary: 'JSON/XML representations by content negotiation, and password set/reset with scrypt, over HTTPS.',
      description: [
        'Every path also answers OPTIONS (204 with Allow) and any other method with 405 and the same Allow. One trailing slash on a path is ignored.',
        'Every error is an RFC 9457 problem document, as JSON or XML by the request\'s choice of representation (E-1). Problem types:',
        ...[...PROBLEM_TYPES].map(([slug, { status }]) => `- \`/problems/${slug}\` (${status}): ${PROBLEM_WHEN[slug]}.`),
        'Password and user routes are HTTPS only: over plain HTTP they answer 403 https-required.',
        'Every response carries X-Request-Id, X-Content-Type-Options: nosniff and Content-Security-Policy; HTTPS responses carry Strict-Transport-Security.',
      ].join('\n'),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: options.basePath === undefined || options.basePath === '' ? '/' : options.basePath }],
    tags: [
      { name: 'representations', description: 'Resources as JSON or XML (N-1..N-13).' },
      { name: 'passwords', description: 'Password changes and resets (P).' },
      { name: 'users', description: 'The user resource and administration (R).' },
      { name: 'resources', description: 'Resources that take writes, and their items (A-5..A-7).' },
      { name: 'operations', description: 'Health, readiness and metrics (H-3, H-5).' },
      { name: 'meta', description: 'This description and OPTIONS.' },
    ],
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'RFC 7617, UTF-8.' },
        digest: { type: 'http', scheme: 'digest', description: 'RFC 7616, SHA-256 and MD5, qop=auth; when the server runs with --digest.' },
        resetToken: { type: 'http', scheme: 'bearer', description: 'A reset token (P-9), for the password change only.' },
      },
      parameters: {
        UserName: { name: 'name', in: 'path', required: true, description: 'A user name (U-2), percent-encoded.', schema: { type: 'string', minLength: 1 } },
        Resource: { name: 'resource', in: 'path', required: true, description: 'A resource name, optionally followed by .json or .xml (case-insensitive).', schema: { type: 'string', minLength: 1 } },
        ReturnType: {
          name: 'return_type',
          in: 'query',
          required: false,
          description: 'json or xml (case-insensitive); decides after the extension and before Accept (N-1). Any other value, or a repeated one: 400.',
          schema: { type: 'string' },
        },
        Param1: { name: 'param1', in: 'query', required: false, description: 'Echoed as the member param1 (N-9); at most once.', schema: { type: 'string' } },
        Limit: { name: 'limit', in: 'query', required: false, description: 'Users per page (R-3).', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        After: { name: 'after', in: 'query', required: false, description: 'Only users whose names sort after this one (R-3).', schema: { type: 'string' } },
      },
      headers: {
        XRequestId: { description: 'The request id, as logged.', schema: { type: 'string' } },
        ETag: { description: 'Strong entity tag of this representation (N-7).', schema: { type: 'string' } },
        Vary: { description: 'Accept, when Accept or the default chose the representation (N-5).', schema: { type: 'string' } },
        Link: { description: 'The other representations, rel="alternate" (N-13); rel="next" on a user page (R-3).', schema: { type: 'string' } },
        ContentLocation: { description: 'The extension form of a negotiated representation (N-13).', schema: { type: 'string' } },
        Allow: { description: 'The methods the path accepts.', schema: { type: 'string' } },
        RetryAfter: { description: 'Seconds to wait.', schema: { type: 'string' } },
        WWWAuthenticate: { description: 'The challenges: Basic, Digest when on, Bearer error="invalid_token" for a bad reset token.', schema: { type: 'string' } },
        Location: { description: 'The new user (/user/{name}) or item (/api/{resource}/{id}).', schema: { type: 'string' } },
        AcceptPost: { description: 'The media types a POST takes (A-6).', schema: { type: 'string' } },
        AcceptPatch: { description: 'The media types a PATCH takes (A-6).', schema: { type: 'string' } },
        CacheControl: { description: 'no-store on errors and on P-12; private, no-cache on users.', schema: { type: 'string' } },
      },
      responses: {
        Done: { description: 'Done; no content.', headers: { 'Cache-Control': ref('headers', 'CacheControl'), 'X-Request-Id': ref('headers', 'XRequestId') } },
        NotModified: { description: 'If-None-Match matched (N-7): the same ETag and Vary, no body.', headers: { ETag: ref('headers', 'ETag'), Vary: ref('headers', 'Vary') } },
        BadRequest: problemResponse('bad-request.', 'BadRequestProblem'),
        Unauthorized: problemResponse('unauthorized: with the challenges.', 'Problem', { 'WWW-Authenticate': ref('headers', 'WWWAuthenticate') }),
        Forbidden: problemResponse('https-required, forbidden or invalid-credentials.'),
        NotFound: problemResponse('not-found.'),
        NotAcceptable: problemResponse('not-acceptable: the offered types are listed in `available` (N-4).', 'NotAcceptableProblem', { Vary: ref('headers', 'Vary') }),
        Conflict: problemResponse('conflict.'),
        PreconditionFailed: problemResponse('precondition-failed (E-4).'),
        PayloadTooLarge: problemResponse('payload-too-large.'),
        UriTooLong: problemResponse('uri-too-long.'),
        HeadersTooLarge: problemResponse('The header block is over the limit (L-1).'),
        UnsupportedMediaType: problemResponse('unsupported-media-type.'),
        PasswordPolicy: problemResponse('password-policy: the codes in `violations` (P-6).', 'PasswordPolicyProblem'),
        Unprocessable: problemResponse('unprocessable: the body is refused (member `errors`, A-6), or a member that may not change is named (R-6).', 'UnprocessableProblem'),
        PreconditionRequired: problemResponse('precondition-required: send If-Match (or If-None-Match: * to create) (A-7).'),
        ResourceProblem: problemResponse('A problem the resource\'s own code raised (HttpError), with its headers; its type may be one of the embedder\'s own.', 'AnyProblem'),
        TooManyRequests: problemResponse('too-many-requests (P-8).', 'Problem', { 'Retry-After': ref('headers', 'RetryAfter') }),
        Overloaded: problemResponse('overloaded (P-8, S-6, H-3).', 'Problem', { 'Retry-After': ref('headers', 'RetryAfter') }),
      },
      schemas: {
        ...(options.schemas ?? {}),
        Problem: {
          type: 'object',
          description: 'RFC 9457 problem details; in XML the root is <problem xmlns="urn:ietf:rfc:7807"> and arrays hold <i> elements.',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string', enum: problemTypes },
            title: { type: 'string' },
            status: { type: 'integer', minimum: 400, maximum: 599 },
            detail: { type: 'string' },
          },
        },
        AnyProblem: {
          type: 'object',
          description: 'An RFC 9457 problem whose type may be an embedder\'s own (E-2).',
          required: ['type', 'title', 'status'],
          properties: { type: { type: 'string', pattern: '^/problems/' }, title: { type: 'string' }, status: { type: 'integer', minimum: 400, maximum: 599 }, detail: { type: 'string' } },
        },
        UnprocessableProblem: {
          allOf: [schemaRef('Problem')],
          properties: {
            errors: {
              type: 'array',
              description: 'A-6: what the schema refused, each with an RFC 6901 pointer into the body.',
              items: { type: 'object', required: ['pointer', 'detail'], properties: { pointer: { type: 'string' }, detail: { type: 'string' } } },
            },
            member: { type: 'string' },
          },
        },
        BadRequestProblem: {
          allOf: [schemaRef('Problem')],
          properties: { allowed: { type: 'array', items: { type: 'string' }, description: 'The values a parameter may take.' } },
        },
        NotAcceptableProblem: {
          allOf: [schemaRef('Problem')],
          required: ['available'],
          properties: { available: { type: 'array', items: { type: 'string' } } },
        },
        PasswordPolicyProblem: {
          allOf: [schemaRef('Problem')],
          properties: {
            violations: {
              type: 'array',
              items: { type: 'string', enum: ['too-short', 'too-long', 'control-character', 'common-password', 'contains-username', 'same-as-current'] },
            },
          },
        },
        Something: {
          type: 'object',
          required: ['param1'],
          additionalProperties: false,
          properties: { param1: { type: ['string', 'null'] } },
        },
        Health: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
        User: {
          type: 'object',
          required: ['name', 'role', 'createdAt', 'passwordChangedAt'],
          additionalProperties: false,
          properties: {
            name: { type: 'string' },
            role: { enum: ['user', 'admin'] },
            createdAt: { type: 'string', format: 'date-time' },
            passwordChangedAt: { type: 'string', format: 'date-time' },
          },
        },
        UserPage: {
          type: 'object',
          required: ['users', 'next'],
          additionalProperties: false,
          properties: { users: { type: 'array', items: schemaRef('User') }, next: { type: ['string', 'null'] } },
        },
        NewUser: {
          type: 'object',
          required: ['name', 'password'],
          properties: { name: { type: 'string' }, password: { type: 'string' }, role: { enum: ['user', 'admin'], default: 'user' } },
        },
        RolePatch: { type: 'object', properties: { role: { enum: ['user', 'admin'] } } },
        PasswordForm: {
          type: 'object',
          required: ['oldpasswd', 'newpasswd'],
          properties: { oldpasswd: { type: 'string' }, newpasswd: { type: 'string' } },
        },
      },
    },
  };
}
