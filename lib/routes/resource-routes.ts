// the routes of one resource, declared once: `/api/<name>[.json|.xml]` with the
// methods its definition has, and `/api/<name>/<id>[.json|.xml]` when it has items; and what the
// OpenAPI document says of them (the embedder's `schema` as the request bodies').
import type { Handler } from '../http/dispatch.js';
import type { JsonObject, RouteDecl, RouteMethod } from '../http/route-table.js';
import { problemResponse, R, ref, representationResponse, representationResponses } from '../ops/openapi.js';
import type { ServedResource } from '../resources/definition.js';
import { JSON_TYPES, MERGE_PATCH_TYPES } from '../handlers/resource-writes.js';

type Json = JsonObject[string];

export interface ResourceRouteHandlers {
  /** GET|HEAD of the collection (the representation path, params.resource). */
  readonly collection: Handler;
  /** GET|HEAD of an item (the representation path with items, params.id). */
  readonly item?: Handler | undefined;
  readonly post?: Handler | undefined;
  readonly put?: Handler | undefined;
  readonly patch?: Handler | undefined;
  readonly delete?: Handler | undefined;
}

/** How the built-in resource is described (N-9): its own schema, parameter and operation id. */
export interface CollectionDoc {
  readonly id: string;
  readonly summary: string;
  readonly schema: JsonObject;
  readonly parameters: readonly Json[];
}

export function resourceRoutes(resource: ServedResource, h: ResourceRouteHandlers, builtIn?: CollectionDoc): RouteDecl[] {
  const { name } = resource;
  const returnType = ref('parameters', 'ReturnType');
  // An embedder's code may refuse with a problem of its own (HttpError): any 4xx or 5xx.
  const own: JsonObject = builtIn === undefined ? { '4XX': R('ResourceProblem'), '5XX': R('ResourceProblem') } : {};
  const value: JsonObject = {};
  const body = bodySchema(resource);
  const written = (status: string, description: string, located: boolean): JsonObject => ({ [status]: representationResponse(description, value, resource.itemRoot, located) });
  const refusals = (accept: string | undefined): JsonObject => ({
    '406': R('NotAcceptable'),
    '413': R('PayloadTooLarge'),
    '415': problemResponse('unsupported-media-type: the body must be JSON (A-6).', 'Problem', accept === undefined ? {} : { [accept]: ref('headers', accept.replace('-', '')) }),
    '422': R('Unprocessable'),
    ...own,
  });
  const conditional: JsonObject = { '412': R('PreconditionFailed'), ...(resource.requireConditional ? { '428': R('PreconditionRequired') } : {}) };

  const collection: Record<string, RouteMethod> = {};
  if (resource.collection !== undefined) {
    collection['GET'] = {
      handler: h.collection,
      doc: {
        id: builtIn?.id ?? `get_${name}`,
        summary: builtIn?.summary ?? `The resource ${name} (A-2)`,
        tags: ['representations'],
        responses: representationResponses(builtIn?.schema ?? value, name, own),
        parameters: [...(builtIn?.parameters ?? []), returnType],
      },
    };
  }
  if (h.post !== undefined) {
    collection['POST'] = {
      handler: h.post,
      doc: {
        id: `post_${name}`,
        summary: `Create an item of ${name} (A-5): 201 with its Location and representation`,
        tags: ['resources'],
        responses: { ...written('201', `Created: the new item's representation; Location: /api/${name}/{id}.`, true), ...refusals('Accept-Post'), '412': R('PreconditionFailed') },
        parameters: [returnType],
        requestBody: { required: true, content: { 'application/json': { schema: body } } },
      },
    };
  }
  const routes: RouteDecl[] = [];
  if (Object.keys(collection).length > 0) routes.push({ pattern: `/api/:resource(${name})`, negotiated: true, extensions: true, methods: collection, ...(h.post === undefined ? {} : { optionsHeaders: { 'accept-post': JSON_TYPES.join(', ') } }) });

  const item: Record<string, RouteMethod> = {};
  if (h.item !== undefined) {
    item['GET'] = {
      handler: h.item,
      doc: {
        id: `get_${name}_item`,
        summary: `An item of ${name} (A-5); {id} may end in .json or .xml to choose the representation`,
        tags: ['resources'],
        responses: representationResponses(value, resource.itemRoot, own),
        parameters: [returnType],
      },
    };
  }
  if (h.put !== undefined) {
    item['PUT'] = {
      handler: h.put,
      doc: {
        id: `put_${name}_item`,
        summary: `Replace (or create) an item of ${name} (A-5, A-7)`,
        tags: ['resources'],
        responses: {
          ...written('200', 'Stored: the representation of what was stored.', false),
          ...(h.item === undefined ? {} : written('201', 'Created: the item did not exist.', true)),
          '204': R('Done'),
          ...conditional,
          ...refusals(undefined),
        },
        parameters: [returnType],
        requestBody: { required: true, content: { 'application/json': { schema: body } } },
      },
    };
  }
  if (h.patch !== undefined) {
    item['PATCH'] = {
      handler: h.patch,
      doc: {
        id: `patch_${name}_item`,
        summary: `Change an item of ${name} by a JSON merge patch (RFC 7396, A-5): applied to the current value, checked, stored`,
        tags: ['resources'],
        responses: { ...written('200', 'Stored: the representation of what was stored.', false), '204': R('Done'), '404': R('NotFound'), ...conditional, ...refusals('Accept-Patch') },
        parameters: [returnType],
        requestBody: { required: true, content: { 'application/merge-patch+json': { schema: {} } } },
      },
    };
  }
  if (h.delete !== undefined) {
    item['DELETE'] = {
      handler: h.delete,
      doc: {
        id: `delete_${name}_item`,
        summary: `Delete an item of ${name} (A-5, A-7)`,
        tags: ['resources'],
        responses: { '204': R('Done'), '404': R('NotFound'), ...conditional, ...own },
      },
    };
  }
  if (Object.keys(item).length > 0) {
    routes.push({
      pattern: `/api/${name}/:id`,
      negotiated: true,
      ...(h.patch === undefined ? {} : { optionsHeaders: { 'accept-patch': MERGE_PATCH_TYPES.join(', ') } }),
      parameters: [{ name: 'id', in: 'path', required: true, description: 'The item\'s id, percent-encoded; a literal .json or .xml ending chooses the representation.', schema: { type: 'string', minLength: 1 } }],
      methods: item,
    });
  }
  return routes;
}

/** A body's schema in the document: the embedder's `schema`, or anything when there is none. */
function bodySchema(resource: ServedResource): Json {
  const schema = resource.definition?.schema;
  return schema === undefined ? {} : (JSON.parse(JSON.stringify(schema)) as Json);
}
