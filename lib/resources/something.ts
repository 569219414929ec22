import { HttpError, problem } from '../http/problem.js';

/** The seed's generic resource (N-9): `{ "param1": <value or null> }`. A repeated param1 is 400 (N-8). */
export function something(query: URLSearchParams): { param1: string | null } {
  const values = query.getAll('param1');
  if (values.length > 1) throw new HttpError(problem(400, 'bad-request', { detail: 'param1 may be given at most once.' }));
  return { param1: values[0] ?? null };
}
