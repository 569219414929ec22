// a body is checked before a method sees it: by the embedder's `parse` (any validator; a throw
// is 422 with its message), else by `schema` (422 with the refusals), else taken as it is.
import { HttpError, problem } from '../http/problem.js';
import type { ResourceDefinition } from './resource.js';

/** Returns what the method gets, or throws the 422. */
export type BodyCheck = (body: unknown) => unknown;

export function createBodyCheck(def: Pick<ResourceDefinition, 'parse' | 'schema'>, _where: string): BodyCheck {
  const parse = def.parse;
  if (parse !== undefined) {
    return (body) => {
      try {
        return parse.call(def, body);
      } catch (error) {
        if (error instanceof HttpError) throw error;
        throw new HttpError(problem(422, 'unprocessable', { detail: error instanceof Error ? error.message : String(error) }));
      }
    };
  }
  return (body) => body;
}
