import { createNegotiator } from '../negotiate/negotiate.js';

/** The media types a representation can be served as, in server order (N-3). */
export const OFFERED = ['application/json', 'application/xml', 'text/xml'] as const;
export type MediaType = (typeof OFFERED)[number];
export type Format = 'json' | 'xml';

export type Selection =
  | { readonly kind: 'chosen'; readonly type: MediaType; readonly format: Format; readonly byAccept: boolean }
  | { readonly kind: 'not-acceptable' };

export interface Selector {
  /**
   * N-1: path extension, then `return_type`, then `Accept`, then JSON. `extension` and `returnType`
   * must already be validated ('json' | 'xml', lowercase) or undefined.
   */
  select(extension: Format | undefined, returnType: Format | undefined, accept: string | undefined): Selection;
  /** E-1: the format of a problem body, by the same rules, honouring application/problem+* too. */
  problemFormat(extension: Format | undefined, returnType: Format | undefined, accept: string | undefined): { readonly format: Format; readonly byAccept: boolean };
}

const PROBLEM_OFFERED = ['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml'] as const;

// Selections are constants: choosing allocates nothing.
const BY_FORMAT: { readonly [F in Format]: Selection } = {
  json: { kind: 'chosen', type: 'application/json', format: 'json', byAccept: false },
  xml: { kind: 'chosen', type: 'application/xml', format: 'xml', byAccept: false },
};
const BY_ACCEPT: { readonly [T in MediaType]: Selection } = {
  'application/json': { kind: 'chosen', type: 'application/json', format: 'json', byAccept: true },
  'application/xml': { kind: 'chosen', type: 'application/xml', format: 'xml', byAccept: true },
  'text/xml': { kind: 'chosen', type: 'text/xml', format: 'xml', byAccept: true },
};
const NOT_ACCEPTABLE: Selection = { kind: 'not-acceptable' };

/** Per-service selector: owns the negotiators' bounded caches. */
export function createSelector(): Selector {
  // N-2: every representation is sent as UTF-8, so `charset=utf-8` on a range is met.
  const negotiate = createNegotiator(OFFERED, { charsetUtf8: true });
  const negotiateProblem = createNegotiator(PROBLEM_OFFERED, { charsetUtf8: true });
  return {
    select(extension, returnType, accept) {
      const fixed = extension ?? returnType;
      if (fixed !== undefined) return BY_FORMAT[fixed];
      const type = negotiate(accept) as MediaType | undefined;
      return type === undefined ? NOT_ACCEPTABLE : BY_ACCEPT[type];
    },
    problemFormat(extension, returnType, accept) {
      const fixed = extension ?? returnType;
      if (fixed !== undefined) return { format: fixed, byAccept: false };
      const type = negotiateProblem(accept);
      return { format: type === undefined || type.endsWith('json') ? 'json' : 'xml', byAccept: true };
    },
  };
}

/** 'json' | 'xml' for a case-insensitive extension or return_type value, else undefined. */
export function parseFormat(value: string): Format | undefined {
  const lower = value.toLowerCase();
  return lower === 'json' || lower === 'xml' ? lower : undefined;
}
