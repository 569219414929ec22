// what the embedder registered under a name, checked once (createService refuses a
// wrong shape with ERR_INVALID_OPTION naming the resource) and turned into what the routes serve:
// the collection as a Resource for the representation path, the item's methods, and the body rules.
import { ServiceError } from '../errors.js';
import { HttpError, problem } from '../http/problem.js';
import { createBodyCheck, type BodyCheck } from './body-check.js';
import type { ItemContext, Resource, ResourceContext, ResourceDefinition, ResourceEntry } from './resource.js';

/** A resource as the routes serve it. */
export interface ServedResource {
  readonly name: string;
  /** GET|HEAD /api/<name>: undefined when the definition has no `get`. */
  readonly collection: Resource | undefined;
  /** The definition, for its write methods; undefined for a plain loader. */
  readonly definition: ResourceDefinition | undefined;
  /** GET|HEAD /api/<name>/<id>: the item as a Resource whose loader answers 404 for `undefined`. */
  readonly item: Resource | undefined;
  /** The XML root of an item (A-5: `xml.itemRoot`, else `item`). */
  readonly itemRoot: string;
  /** The methods of `/api/<name>` and of `/api/<name>/<id>` (HEAD and OPTIONS are the router's). */
  readonly collectionMethods: readonly string[];
  readonly itemMethods: readonly string[];
  /** How a body is checked: `parse`, else `schema`, else taken as it is. */
  readonly check: BodyCheck;
  readonly maxBodyBytes: number;
  readonly requireConditional: boolean;
}

/** the default largest body of a resource's write. */
export const RESOURCE_MAX_BODY_BYTES = 1_048_576;

const DEFINITION_KEYS = new Set(['get', 'post', 'item', 'schema', 'parse', 'maxBodyBytes', 'requireConditional', 'xml']);
const ITEM_KEYS = new Set(['get', 'put', 'delete']);
/** An XML 1.0 Name without ':' (no namespace prefix), ASCII. */
const XML_ROOT = /^[A-Za-z_][A-Za-z0-9._-]{0,63}$/;

/** Checks `entry` (a loader or a definition) and returns what the routes serve; throws ERR_INVALID_OPTION naming the resource. */
export function defineResource(name: string, entry: ResourceEntry): ServedResource {
  const where = `resource "${name}"`;
  if (typeof entry === 'function') {
    const load = entry;
    return Object.freeze({
      name,
      collection: Object.freeze({ load, root: name }),
      definition: undefined,
      item: undefined,
      itemRoot: 'item',
      collectionMethods: ['GET'],
      itemMethods: [],
      check: (body: unknown) => body,
      maxBodyBytes: RESOURCE_MAX_BODY_BYTES,
      requireConditional: false,
    });
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) invalid(`${where} must be a function of the query or a definition { get, post, item, … }`);
  const def = entry;
  for (const key of Object.keys(def)) if (!DEFINITION_KEYS.has(key)) invalid(`${where}: unknown member "${key}" (known: ${[...DEFINITION_KEYS].join(', ')})`);
  for (const key of ['get', 'post', 'parse'] as const) optionalFunction(def[key], `${where}: ${key}`);
  const item = def.item;
  if (item !== undefined) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) invalid(`${where}: item must be an object { get, put, delete }`);
    for (const key of Object.keys(item)) if (!ITEM_KEYS.has(key)) invalid(`${where}: unknown member "item.${key}" (known: get, put, delete)`);
    for (const key of ['get', 'put', 'delete'] as const) optionalFunction(item[key], `${where}: item.${key}`);
  }
  const collectionMethods = [...(def.get === undefined ? [] : ['GET']), ...(def.post === undefined ? [] : ['POST'])];
  const itemMethods =
    item === undefined
      ? []
      : [
          ...(item.get === undefined ? [] : ['GET']),
          ...(item.put === undefined ? [] : ['PUT']),
          // RFC 7396 merge patch: applied to the current value (get) and stored (put).
          ...(item.get !== undefined && item.put !== undefined ? ['PATCH'] : []),
          ...(item.delete === undefined ? [] : ['DELETE']),
        ];
  if (collectionMethods.length === 0 && itemMethods.length === 0) invalid(`${where} defines no method: give get, post or item`);
  const maxBodyBytes = def.maxBodyBytes ?? RESOURCE_MAX_BODY_BYTES;
  if (typeof maxBodyBytes !== 'number' || !Number.isInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > 2 ** 30) {
    invalid(`${where}: maxBodyBytes must be an integer from 1 to ${2 ** 30}, got ${JSON.stringify(maxBodyBytes) ?? String(maxBodyBytes)}`);
  }
  const requireConditional = def.requireConditional ?? false;
  if (typeof requireConditional !== 'boolean') invalid(`${where}: requireConditional must be true or false`);
  if (requireConditional && item?.get === undefined) invalid(`${where}: requireConditional needs item.get (the current value's ETags decide If-Match)`);
  const xml = def.xml;
  if (xml !== undefined) {
    if (typeof xml !== 'object' || xml === null || Array.isArray(xml)) invalid(`${where}: xml must be an object { itemRoot }`);
    for (const key of Object.keys(xml)) if (key !== 'itemRoot') invalid(`${where}: unknown member "xml.${key}" (known: itemRoot)`);
    if (xml.itemRoot !== undefined && (typeof xml.itemRoot !== 'string' || !XML_ROOT.test(xml.itemRoot) || /^xml/i.test(xml.itemRoot))) {
      invalid(`${where}: xml.itemRoot must be an XML element name (letters, digits, '.', '-', '_'; not starting with a digit or "xml")`);
    }
  }
  if (def.schema !== undefined && typeof def.schema !== 'boolean' && (typeof def.schema !== 'object' || def.schema === null || Array.isArray(def.schema))) {
    invalid(`${where}: schema must be a JSON Schema (an object or a boolean)`);
  }
  const check = createBodyCheck(def, `resources.${name}.schema`);
  const get = def.get;
  const itemGet = item?.get;
  const itemRoot = xml?.itemRoot ?? 'item';
  return Object.freeze({
    name,
    collection: get === undefined ? undefined : Object.freeze({ load: (query: URLSearchParams, context: ResourceContext) => def.get?.(query, context), root: name }),
    definition: def,
    item:
      itemGet === undefined
        ? undefined
        : Object.freeze({
            load: (query: URLSearchParams, context: ResourceContext) => {
              const id = (context as ItemContext).id;
              return foundOr404(item?.get?.(id, query, context as ItemContext));
            },
            root: itemRoot,
          }),
    itemRoot,
    collectionMethods,
    itemMethods,
    check,
    maxBodyBytes,
    requireConditional,
  });
}

/** an item's `get` answering `undefined` is a 404; a value (or a promise of one) is passed on. */
export function foundOr404(value: unknown): unknown {
  if (value === undefined) throw noSuchItem();
  if (typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function') {
    return Promise.resolve(value).then((v) => {
      if (v === undefined) throw noSuchItem();
      return v;
    });
  }
  return value;
}

export function noSuchItem(): HttpError {
  return new HttpError(problem(404, 'not-found', { detail: 'No such item.' }));
}

function optionalFunction(value: unknown, what: string): void {
  if (value !== undefined && typeof value !== 'function') invalid(`${what} must be a function`);
}

function invalid(message: string): never {
  throw new ServiceError('ERR_INVALID_OPTION', message);
}
