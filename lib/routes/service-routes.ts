// the service's own routes, each declared once (lib/http/route-table.ts): health, this
// description, the user resource and its administration (R), and the password operations (P).
import type { RequestContext } from '../http/context.js';
import type { Handler } from '../http/dispatch.js';
import type { JsonObject, RouteDecl } from '../http/route-table.js';
import { BASIC_OR_DIGEST, R, ref, representation, representationResponses, schemaRef } from '../ops/openapi.js';

export interface ServiceRouteHandlers {
  /** GET /healthz and /readyz (params.resource: `healthz[.ext]`). */
  readonly health: Handler;
  readonly openapi: Handler;
  /** GET /user/{name}; R-3..R-6: the page, create, patch and delete. */
  readonly user: Handler;
  readonly page: Handler;
  readonly create: Handler;
  readonly patch: Handler;
  readonly remove: Handler;
  /** P-2..P-7: PUT /user/{name}/password and POST /user/{name}/resetpassword/. */
  readonly setPassword: Handler;
  readonly resetPassword: Handler;
  /** P-12: absent when no delivery channel is configured, and then the route is absent everywhere. */
  readonly requestResetToken?: Handler | undefined;
}

export interface ServiceRouteGuards {
  /** T-3 / R: HTTPS only. */
  readonly https: (ctx: RequestContext) => void;
  /** T-3 / P-1: HTTPS only, and no query string. */
  readonly password: (ctx: RequestContext) => void;
}

export function serviceRoutes(h: ServiceRouteHandlers, guards: ServiceRouteGuards): RouteDecl[] {
  const userParam = ref('parameters', 'UserName');
  const returnType = ref('parameters', 'ReturnType');
  const tooMany = R('TooManyRequests');
  const unavailable = R('Overloaded');
  // P-4..P-8, R-4: what a write that sets a password can refuse.
  const passwordRefusals: JsonObject = {
    '403': R('Forbidden'),
    '412': R('PreconditionFailed'),
    '413': R('PayloadTooLarge'),
    '415': R('UnsupportedMediaType'),
    '422': R('PasswordPolicy'),
    '429': tooMany,
    '503': unavailable,
  };
  // H-3: negotiated like any resource, logged only when they fail.
  const health = (stem: string, id: string, summary: string, extra: JsonObject): RouteDecl => ({
    pattern: `/:resource(${stem})`,
    negotiated: true,
    quiet: true,
    extensions: true,
    methods: { GET: { handler: h.health, doc: { id, summary, tags: ['operations'], responses: representationResponses(schemaRef('Health'), stem, extra), parameters: [returnType] } } },
  });
  const routes: RouteDecl[] = [
    health('healthz', 'getHealth', 'Liveness: 200 while the process serves (H-3)', {}),
    health('readyz', 'getReadiness', 'Readiness: 200 when the user store answers, 503 overloaded otherwise (H-3)', { '503': unavailable }),
    {
      pattern: '/openapi.json',
      methods: {
        GET: {
          handler: h.openapi,
          doc: {
            id: 'getOpenApi',
            summary: 'This document (H-4), as application/json',
            tags: ['meta'],
            responses: {
              '200': {
                description: 'The OpenAPI 3.1 document.',
                headers: { ETag: ref('headers', 'ETag'), 'X-Request-Id': ref('headers', 'XRequestId') },
                content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'] } } },
              },
              '304': R('NotModified'),
            },
          },
        },
      },
    },
    {
      pattern: '/user/:name/password',
      guard: guards.password,
      parameters: [userParam],
      methods: {
        PUT: {
          handler: h.setPassword,
          doc: {
            id: 'setPassword',
            summary: "Set a password: the user their own, an admin anyone's, or with a reset token (P-2..P-9); HTTPS only",
            tags: ['passwords'],
            responses: { '204': R('Done'), ...passwordRefusals, '401': R('Unauthorized'), '404': R('NotFound') },
            security: [{ basic: [] }, { digest: [] }, { resetToken: [] }],
            requestBody: { required: true, description: 'The new password, verbatim (no trailing newline).', content: { 'text/plain': { schema: { type: 'string' } } } },
          },
        },
      },
    },
    {
      pattern: '/user/:name/resetpassword',
      docPath: '/user/{name}/resetpassword/',
      guard: guards.password,
      parameters: [userParam],
      methods: {
        POST: {
          handler: h.resetPassword,
          doc: {
            id: 'resetPassword',
            summary: 'Change a password by the old one, without Authorization (P-5); the trailing slash is optional; HTTPS only',
            tags: ['passwords'],
            responses: { '204': R('Done'), ...passwordRefusals },
            security: [],
            requestBody: { required: true, content: { 'application/json': { schema: schemaRef('PasswordForm') } } },
          },
        },
      },
    },
  ];
  if (h.requestResetToken !== undefined) {
    routes.push({
      pattern: '/user/:name/resettoken',
      guard: guards.password,
      parameters: [userParam],
      methods: {
        POST: {
          handler: h.requestResetToken,
          doc: {
            id: 'requestResetToken',
            summary: 'Ask for a reset token to be delivered through the configured channel (P-12); always 202; HTTPS only',
            tags: ['passwords'],
            responses: {
              '202': {
                description: 'Accepted, with no content, whether or not the user exists and a token was issued.',
                headers: { 'Cache-Control': ref('headers', 'CacheControl'), 'X-Request-Id': ref('headers', 'XRequestId') },
              },
              '403': R('Forbidden'),
              '413': R('PayloadTooLarge'),
              '429': tooMany,
              '503': unavailable,
            },
            security: [],
          },
        },
      },
    });
  }
  routes.push(
    {
      pattern: '/user/:name',
      guard: guards.https,
      negotiated: true,
      parameters: [userParam],
      methods: {
        GET: {
          handler: h.user,
          doc: {
            id: 'getUser',
            summary: 'A user (R-1, R-2): the user themselves or an admin; `{name}` may end in .json or .xml to choose the representation; HTTPS only',
            tags: ['users'],
            responses: representationResponses(schemaRef('User'), 'user', { '401': R('Unauthorized'), '403': R('Forbidden'), '429': tooMany, '503': unavailable }),
            parameters: [returnType],
            security: BASIC_OR_DIGEST,
          },
        },
        PATCH: {
          handler: h.patch,
          doc: {
            id: 'setRole',
            summary: "Change a user's role (R-6, admins only): a JSON merge patch that may hold only `role`",
            tags: ['users'],
            responses: {
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
            security: BASIC_OR_DIGEST,
            requestBody: { required: true, content: { 'application/merge-patch+json': { schema: schemaRef('RolePatch') } } },
          },
        },
        DELETE: {
          handler: h.remove,
          doc: {
            id: 'deleteUser',
            summary: 'Delete a user and their reset tokens (R-5, admins only); 409 for the last admin',
            tags: ['users'],
            responses: {
              '204': R('Done'),
              '401': R('Unauthorized'),
              '403': R('Forbidden'),
              '404': R('NotFound'),
              '409': R('Conflict'),
              '412': R('PreconditionFailed'),
              '429': tooMany,
              '503': unavailable,
            },
            security: BASIC_OR_DIGEST,
          },
        },
      },
    },
    {
      pattern: '/user',
      docPath: '/user/',
      guard: guards.https,
      negotiated: true,
      methods: {
        GET: {
          handler: h.page,
          doc: {
            id: 'listUsers',
            summary: 'A page of users sorted by name (R-3, admins only), with Link rel="next" when more follow',
            tags: ['users'],
            responses: representationResponses(schemaRef('UserPage'), 'users', { '401': R('Unauthorized'), '403': R('Forbidden'), '429': tooMany, '503': unavailable }),
            parameters: [ref('parameters', 'Limit'), ref('parameters', 'After'), returnType],
            security: BASIC_OR_DIGEST,
          },
        },
        POST: {
          handler: h.create,
          doc: {
            id: 'createUser',
            summary: 'Create a user (R-4, admins only)',
            tags: ['users'],
            responses: {
              '201': {
                description: 'Created; the R-1 representation of the new user.',
                headers: { Location: ref('headers', 'Location'), ETag: ref('headers', 'ETag'), 'X-Request-Id': ref('headers', 'XRequestId') },
                content: representation(schemaRef('User'), 'user'),
              },
              ...passwordRefusals,
              '401': R('Unauthorized'),
              '406': R('NotAcceptable'),
              '409': R('Conflict'),
            },
            security: BASIC_OR_DIGEST,
            requestBody: { required: true, content: { 'application/json': { schema: schemaRef('NewUser') } } },
          },
        },
      },
    },
  );
  return routes;
}
