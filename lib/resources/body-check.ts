// a body is checked before a method sees it: by the embedder's `parse` (any validator; a throw
// is 422 with its message as `detail`, and what it returns is what the method gets), else by
// `schema` (the JSON Schema subset of json-schema.ts: 422 with `errors`, RFC 6901 pointers), else
// taken as it is. A schema is compiled once, here, at createService, even beside a `parse`: one
// it cannot honour is refused then (ERR_INVALID_OPTION), never ignored.
import { HttpError, problem } from '../http/problem.js';
import { compileSchema } from './json-schema.js';
import type { ResourceDefinition } from './resource.js';

/** Returns what the method gets (or a promise of it), or throws the 422. */
export type BodyCheck = (body: unknown) => unknown;

/** `where` names the resource in a refusal of its schema: `resources.books.schema`. */
export function createBodyCheck(def: Pick<ResourceDefinition, 'parse' | 'schema'>, where: string): BodyCheck {
  const validate = def.schema === undefined ? undefined : compileSchema(def.schema, where);
  const parse = def.parse;
  if (parse !== undefined) {
    return (body) => {
      let parsed: unknown;
      try {
        parsed = parse.call(def, body);
      } catch (error) {
        throw refusal(error);
      }
      // An asynchronous validator (zod's parseAsync): its rejection is the same 422.
      return parsed instanceof Promise ? parsed.catch((error: unknown) => Promise.reject(refusal(error))) : parsed;
    };
  }
  if (validate === undefined) return (body) => body;
  return (body) => {
    const errors = validate(body);
    const first = errors[0];
    if (first === undefined) return body;
    const at = first.pointer === '' ? 'the body' : first.pointer;
    throw new HttpError(problem(422, 'unprocessable', { detail: `The body does not match the resource's schema: ${at} ${first.detail}.`, errors: [...errors] }));
  };
}

/** A `parse` throw: an HttpError is the embedder's own answer; anything else is 422 with its message. */
function refusal(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  return new HttpError(problem(422, 'unprocessable', { detail: error instanceof Error ? error.message : String(error) }));
}
