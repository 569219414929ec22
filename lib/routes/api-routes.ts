// the routes of every resource under /api/, the built-in `something` first (N-9).
import type { RequestContext } from '../http/context.js';
import type { RouteDecl } from '../http/route-table.js';
import { createRepresentationHandler } from '../handlers/representation.js';
import { createResourceWriteHandlers } from '../handlers/resource-writes.js';
import { createEtagMemo } from '../representation/etag.js';
import { ref, schemaRef } from '../ops/openapi.js';
import type { ServedResource } from '../resources/definition.js';
import type { Caller } from '../resources/resource.js';
import { something } from '../resources/something.js';
import type { Selector } from '../representation/select.js';
import { resourceRoutes } from './resource-routes.js';

export interface ApiRouteOptions {
  readonly selector: Selector;
  readonly authenticate: (ctx: RequestContext) => Promise<Caller>;
  /** the mount prefix of every URL written (Location, Content-Location, Link). */
  readonly basePath: string;
}

export function apiRoutes(resources: ReadonlyMap<string, ServedResource>, options: ApiRouteOptions): RouteDecl[] {
  const { selector, authenticate, basePath } = options;
  // One representation path for every collection: a name resolves to its resource's GET.
  const collection = createRepresentationHandler({ base: `${basePath}/api/`, resolve: (name) => resources.get(name)?.collection, selector, authenticate });
  const routes: RouteDecl[] = [];
  for (const resource of resources.values()) {
    const itemResource = resource.item;
    // One ETag memo per resource's items: a write's answer is what the next GET of the item sends.
    const etagOf = createEtagMemo();
    const item =
      itemResource === undefined
        ? undefined
        : createRepresentationHandler({ base: `${basePath}/api/${resource.name}/`, resolve: (id) => (id === '' ? undefined : itemResource), selector, authenticate, collection: resource.name, param: 'id', etagOf });
    const writes = createResourceWriteHandlers({ resource, selector, authenticate, basePath, etagOf });
    const builtIn =
      resource.name === 'something' && resource.collection?.load === something
        ? { id: 'getSomething', summary: 'The built-in resource (N-9)', schema: schemaRef('Something'), parameters: [ref('parameters', 'Param1')] }
        : undefined;
    routes.push(...resourceRoutes(resource, { collection, item, ...writes }, builtIn));
  }
  return routes;
}
