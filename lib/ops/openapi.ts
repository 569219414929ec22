// H-4: the OpenAPI 3.1 description of every route, served at /openapi.json. Kept as code so the
// shared pieces (problem responses, representation content, common headers) are written once.
// The test helpers check every response the end-to-end tests receive against this document
// (test/helpers/openapi-check.ts): a status, a content type or a JSON body it does not describe
// fails the test that received it.
import { METRIC_NAMES } from './metrics.js';

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
type Obj = { readonly [key: string]: Json };

/** E-2 slugs and the status each is sent with. */
const PROBLEM_TYPES: ReadonlyArray<readonly [slug: string, status: number, when: string]> = [
  ['bad-request', 400, 'a malformed request: query, percent-encoding, body, credentials'],
  ['unauthorized', 401, 'credentials are missing or wrong (with WWW-Authenticate)'],
  ['https-required', 403, 'a password or user operation over plain HTTP (T-3)'],
  ['forbidden', 403, 'the caller may not act on that user'],
  ['invalid-credentials', 403, 'the old password of the reset form is wrong (P-5)'],
  ['not-found', 404, 'no such resource, extension or user'],
  ['method-not-allowed', 405, 'the path exists, the method does not (with Allow)'],
  ['not-acceptable', 406, 'no offered type is acceptable (member `available`)'],
  ['conflict', 409, 'the user exists, or the change would remove the last admin'],
  ['precondition-failed', 412, 'If-Match or If-Unmodified-Since is false (E-4)'],
  ['payload-too-large', 413, 'the body is over the limit'],
  ['uri-too-long', 414, 'the request target is over the limit'],
  ['unsupported-media-type', 415, 'the body has the wrong Content-Type'],
  ['password-policy', 422, 'the new password breaks the policy (member `violations`)'],
  ['unprocessable', 422, 'a PATCH names a member other than role (R-6)'],
  ['too-many-requests', 429, 'too many failed attempts (with Retry-After, P-8)'],
  ['overloaded', 503, 'hashing queue full, store busy or unreachable (with Retry-After)'],
  ['internal', 500, 'a bug: never sent on purpose'],
];

const ref = (kind: string, name: string): Obj => ({ $ref: `#/components/${kind}/${name}` });
const schemaRef = (name: string): Obj => ref('schemas', name);

const REPRESENTATION_TYPES = ['application/json', 'application/xml', 'text/xml'] as const;
const PROBLEM_CONTENT_TYPES = ['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml'] as const;

/** A representation's content: JSON, XML and text/xml (N-3), one schema. */
function representation(schema: Obj, xmlRoot: string): Obj {
  const content: Record<string, Json> = {};
  for (const type of REPRESENTATION_TYPES) {
    content[type] = type === 'application/json' ? { schema } : { schema: { ...schema, xml: { name: xmlRoot } } };
  }
  return content;
}

function problemResponse(description: string, schema = 'Problem', headers: Obj = {}): Obj {
  const content: Record<string, Json> = {};
  for (const type of PROBLEM_CONTENT_TYPES) {
    content[type] = type.endsWith('json') ? { schema: schemaRef(schema) } : { schema: { ...schemaRef(schema), xml: { name: 'problem', namespace: 'urn:ietf:rfc:7807' } } };
  }
  return { description, headers: { 'X-Request-Id': ref('headers', 'XRequestId'), 'Cache-Control': ref('headers', 'CacheControl'), ...headers }, content };
}

/** Statuses any route can answer: a malformed request, a target or header block over the limits (L-1). */
const COMMON: Obj = { '400': ref('responses', 'BadRequest'), '414': ref('responses', 'UriTooLong'), '431': ref('responses', 'HeadersTooLarge') };
const R = (name: string): Obj => ref('responses', name);

function operation(id: string, summary: string, tags: readonly string[], responses: Obj, extra: Obj = {}): Obj {
  return { operationId: id, summary, tags, ...extra, responses: { ...COMMON, ...responses } };
}

function options(id: string, allow: string, extra: Obj = {}): Obj {
  return operation(id, `Allowed methods: ${allow}`, ['meta'], {
    '204': { description: `No content; Allow: ${allow}.`, headers: { Allow: ref('headers', 'Allow'), 'X-Request-Id': ref('headers', 'XRequestId') } },
    ...extra,
  });
}

/** GET with its HEAD twin (HEAD gives GET's status and headers, no body; N-7). */
function getAndHead(id: string, summary: string, tags: readonly string[], responses: Obj, extra: Obj = {}): Obj {
  return {
    get: operation(id, summary, tags, responses, extra),
    head: operation(`${id}Head`, `${summary} (headers only)`, tags, responses, extra),
  };
}

function representationResponses(schema: Obj, xmlRoot: string, extra: Obj = {}): Obj {
  return {
    '200': {
      description: 'The representation chosen by extension, return_type, Accept, or JSON by default (N-1).',
      headers: {
        ETag: ref('headers', 'ETag'),
        Vary: ref('headers', 'Vary'),
        Link: ref('headers', 'Link'),
        'Content-Location': ref('headers', 'ContentLocation'),
        'X-Request-Id': ref('headers', 'XRequestId'),
      },
      content: representation(schema, xmlRoot),
    },
    '304': R('NotModified'),
    '404': R('NotFound'),
    '406': R('NotAcceptable'),
    '412': R('PreconditionFailed'),
    ...extra,
  };
}

/** `/x`, `/x.json` and `/x.xml` (N-1: the extension form), each GET/HEAD/OPTIONS. */
function negotiatedPaths(path: string, id: string, summary: string, tags: readonly string[], responses: Obj, parameters: readonly Json[]): Record<string, Json> {
  const paths: Record<string, Json> = {};
  for (const [suffix, label, params] of [
    ['', '', [...parameters, ref('parameters', 'ReturnType')]],
    ['.json', 'Json', parameters],
    ['.xml', 'Xml', parameters],
  ] as const) {
    paths[`${path}${suffix}`] = {
      ...getAndHead(`${id}${label}`, suffix === '' ? summary : `${summary} as ${suffix.slice(1).toUpperCase()}`, tags, responses, { parameters: params }),
      options: options(`${id}${label}Options`, 'GET, HEAD, OPTIONS'),
    };
  }
  return paths;
}

const BASIC_OR_DIGEST: Json = [{ basic: [] }, { digest: [] }];

/**
 * The whole document; `version` is the package's (V-1: the interface is versioned with it);
 * `basePath` the service's mount prefix, its one server's URL.
 */
export function openApiDocument(version: string, basePath = ''): Obj {
  const userParam = ref('parameters', 'UserName');
  const tooMany = R('TooManyRequests');
  const unavailable = R('Overloaded');
  const paths: Record<string, Json> = {
    ...negotiatedPaths('/api/something', 'getSomething', 'The built-in resource (N-9)', ['representations'], representationResponses(schemaRef('Something'), 'something'), [
      ref('parameters', 'Param1'),
    ]),
    '/api/{resource}': {
      ...getAndHead('getResource', 'A registered resource (A-2), by name with an optional .json or .xml extension', ['representations'], representationResponses({}, 'resource', {
        '4XX': problemResponse('A problem an embedder\'s loader raised (HttpError), with its headers.'),
        '5XX': problemResponse('A problem an embedder\'s loader raised (HttpError), with its headers.'),
      }), {
        parameters: [ref('parameters', 'Resource'), ref('parameters', 'ReturnType')],
      }),
      options: options('resourceOptions', 'GET, HEAD, OPTIONS'),
    },
    ...negotiatedPaths('/healthz', 'getHealth', 'Liveness: 200 while the process serves (H-3)', ['operations'], representationResponses(schemaRef('Health'), 'healthz'), []),
    ...negotiatedPaths(
      '/readyz',
      'getReadiness',
      'Readiness: 200 when the user store answers, 503 overloaded otherwise (H-3)',
      ['operations'],
      representationResponses(schemaRef('Health'), 'readyz', { '503': unavailable }),
      [],
    ),
    '/openapi.json': {
      ...getAndHead('getOpenApi', 'This document (H-4), as application/json', ['meta'], {
        '200': {
          description: 'The OpenAPI 3.1 document.',
          headers: { ETag: ref('headers', 'ETag'), 'X-Request-Id': ref('headers', 'XRequestId') },
          content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'] } } },
        },
        '304': R('NotModified'),
      }),
      options: options('openApiOptions', 'GET, HEAD, OPTIONS'),
    },
    '/user/{name}/password': {
      put: operation(
        'setPassword',
        'Set a password: the user their own, an admin anyone\'s, or with a reset token (P-2..P-9); HTTPS only',
        ['passwords'],
        {
          '204': R('Done'),
          '401': R('Unauthorized'),
          '403': R('Forbidden'),
          '404': R('NotFound'),
          '412': R('PreconditionFailed'),
          '413': R('PayloadTooLarge'),
          '415': R('UnsupportedMediaType'),
          '422': R('PasswordPolicy'),
          '429': tooMany,
          '503': unavailable,
        },
        {
          parameters: [userParam],
          security: [{ basic: [] }, { digest: [] }, { resetToken: [] }],
          requestBody: { required: true, description: 'The new password, verbatim (no trailing newline).', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      ),
      options: options('setPasswordOptions', 'PUT, OPTIONS'),
    },
    '/user/{name}/resetpassword/': {
      post: operation(
        'resetPassword',
        'Change a password by the old one, without Authorization (P-5); the trailing slash is optional; HTTPS only',
        ['passwords'],
        {
          '204': R('Done'),
          '403': R('Forbidden'),
          '412': R('PreconditionFailed'),
          '413': R('PayloadTooLarge'),
          '415': R('UnsupportedMediaType'),
          '422': R('PasswordPolicy'),
          '429': tooMany,
          '503': unavailable,
        },
        {
          parameters: [userParam],
          security: [],
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('PasswordForm') } } },
        },
      ),
      options: options('resetPasswordOptions', 'POST, OPTIONS'),
    },
    '/user/{name}/resettoken': {
      post: operation(
        'requestResetToken',
        'Ask for a reset token to be delivered through the configured channel (P-12); always 202; 404 when no channel is configured; HTTPS only',
        ['passwords'],
        {
          '202': {
            description: 'Accepted, with no content, whether or not the user exists and a token was issued.',
            headers: { 'Cache-Control': ref('headers', 'CacheControl'), 'X-Request-Id': ref('headers', 'XRequestId') },
          },
          '403': R('Forbidden'),
          '404': R('NotFound'),
          '413': R('PayloadTooLarge'),
          '429': tooMany,
          '503': unavailable,
        },
        { parameters: [userParam], security: [] },
      ),
      // P-12: without a delivery channel the route does not exist, OPTIONS included.
      options: options('requestResetTokenOptions', 'POST, OPTIONS', { '404': R('NotFound') }),
    },
    '/user/{name}': {
      ...getAndHead(
        'getUser',
        'A user (R-1, R-2): the user themselves or an admin; `{name}` may end in .json or .xml to choose the representation; HTTPS only',
        ['users'],
        representationResponses(schemaRef('User'), 'user', { '401': R('Unauthorized'), '403': R('Forbidden'), '429': tooMany, '503': unavailable }),
        { parameters: [userParam, ref('parameters', 'ReturnType')], security: BASIC_OR_DIGEST },
      ),
      patch: operation(
        'setRole',
        'Change a user\'s role (R-6, admins only): a JSON merge patch that may hold only `role`',
        ['users'],
        {
          '200': { description: 'The changed user (R-1 representation).', headers: { ETag: ref('headers', 'ETag'), 'X-Request-Id': ref('headers', 'XRequestId') }, content: representation(schemaRef('User'), 'user') },
          '401': R('Unauthorized'),
          '403': R('Forbidden'),
          '404': R('NotFound'),
          '406': R('NotAcceptable'),
          '409': R('Conflict'),
          '412': R('PreconditionFailed'),
          '413': R('PayloadTooLarge'),
          '415': R('UnsupportedMediaType'),
          '422': R('Unprocessable'),
          '429': tooMany,
          '503': unavailable,
        },
        {
          parameters: [userParam],
          security: BASIC_OR_DIGEST,
          requestBody: { required: true, content: { 'application/merge-patch+json': { schema: schemaRef('RolePatch') } } },
        },
      ),
      delete: operation(
        'deleteUser',
        'Delete a user and their reset tokens (R-5, admins only); 409 for the last admin',
        ['users'],
        {
          '204': R('Done'),
          '401': R('Unauthorized'),
          '403': R('Forbidden'),
          '404': R('NotFound'),
          '409': R('Conflict'),
          '412': R('PreconditionFailed'),
          '429': tooMany,
          '503': unavailable,
        },
        { parameters: [userParam], security: BASIC_OR_DIGEST },
      ),
      options: options('userOptions', 'GET, HEAD, PATCH, DELETE, OPTIONS'),
    },
    '/user/': {
      ...getAndHead(
        'listUsers',
        'A page of users sorted by name (R-3, admins only), with Link rel="next" when more follow',
        ['users'],
        {
          ...representationResponses(schemaRef('UserPage'), 'users', { '401': R('Unauthorized'), '403': R('Forbidden'), '429': tooMany, '503': unavailable }),
        },
        { parameters: [ref('parameters', 'Limit'), ref('parameters', 'After'), ref('parameters', 'ReturnType')], security: BASIC_OR_DIGEST },
      ),
      post: operation(
        'createUser',
        'Create a user (R-4, admins only)',
        ['users'],
        {
          '201': {
            description: 'Created; the R-1 representation of the new user.',
            headers: { Location: ref('headers', 'Location'), ETag: ref('headers', 'ETag'), 'X-Request-Id': ref('headers', 'XRequestId') },
            content: representation(schemaRef('User'), 'user'),
          },
          '401': R('Unauthorized'),
          '403': R('Forbidden'),
          '406': R('NotAcceptable'),
          '409': R('Conflict'),
          '412': R('PreconditionFailed'),
          '413': R('PayloadTooLarge'),
          '415': R('UnsupportedMediaType'),
          '422': R('PasswordPolicy'),
          '429': tooMany,
          '503': unavailable,
        },
        { security: BASIC_OR_DIGEST, requestBody: { required: true, content: { 'application/json': { schema: schemaRef('NewUser') } } } },
      ),
      options: options('usersOptions', 'GET, HEAD, POST, OPTIONS'),
    },
    '/metrics': {
      servers: [
        {
          url: 'http://{host}:{metricsPort}',
          description: 'The scrape listener, on when --metrics-port is given (H-5); plain HTTP.',
          variables: { host: { default: '127.0.0.1' }, metricsPort: { default: '9464' } },
        },
      ],
      ...getAndHead(
        'getMetrics',
        'Prometheus text exposition format 0.0.4; served only by the scrape listener',
        ['operations'],
        {
          '200': {
            description: `Metrics: ${METRIC_NAMES.join(', ')}.`,
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          '404': R('NotFound'),
        },
      ),
    },
  };

  const problemTypes = PROBLEM_TYPES.map(([slug]) => `/problems/${slug}`);
  return {
    openapi: '3.1.0',
    info: {
      title: 'httpskit',
      version,
      summary: 'JSON/XML representations by content negotiation, and password set/reset with scrypt, over HTTPS.',
      description: [
        'Every path also answers OPTIONS (204 with Allow) and any other method with 405 and the same Allow. One trailing slash on a path is ignored.',
        'Every error is an RFC 9457 problem document, as JSON or XML by the request\'s choice of representation (E-1). Problem types:',
        ...PROBLEM_TYPES.map(([slug, status, when]) => `- \`/problems/${slug}\` (${status}): ${when}.`),
        'Password and user routes are HTTPS only: over plain HTTP they answer 403 https-required.',
        'Every response carries X-Request-Id, X-Content-Type-Options: nosniff and Content-Security-Policy; HTTPS responses carry Strict-Transport-Security.',
      ].join('\n'),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: basePath === '' ? '/' : basePath }],
    tags: [
      { name: 'representations', description: 'Resources as JSON or XML (N-1..N-13).' },
      { name: 'passwords', description: 'Password changes and resets (P).' },
      { name: 'users', description: 'The user resource and administration (R).' },
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
        Location: { description: 'The new user, /user/{name}.', schema: { type: 'string' } },
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
        Unprocessable: problemResponse('unprocessable: a member that may not change is named.'),
        TooManyRequests: problemResponse('too-many-requests (P-8).', 'Problem', { 'Retry-After': ref('headers', 'RetryAfter') }),
        Overloaded: problemResponse('overloaded (P-8, S-6, H-3).', 'Problem', { 'Retry-After': ref('headers', 'RetryAfter') }),
      },
      schemas: {
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
