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
  /**
   * E-1: the format of a problem body, by the same rules, honouring application/problem+* too; and
   * its label (amended E-1): of the format's problem type and plain type(s), the one `Accept`
   * accepts best, the problem type when it accepts none or ties.
   */
  problemFormat(extension: Format | undefined, returnType: Format | undefined, accept: string | undefined): ProblemLabel;
}

export interface ProblemLabel {
  readonly format: Format;
  readonly type: ProblemMediaType;
  /** Whether `Accept` took part in the choice (then the response varies on it): always, since the label depends on it. */
  readonly byAccept: boolean;
}

const PROBLEM_OFFERED = ['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml'] as const;
type ProblemMediaType = (typeof PROBLEM_OFFERED)[number];
/** The labels for a format fixed by extension or return_type; the first is the default. */
const PROBLEM_LABELS: { readonly [F in Format]: readonly ProblemMediaType[] } = {
  json: ['application/problem+json', 'application/json'],
  xml: ['application/problem+xml', 'application/xml', 'text/xml'],
};

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
  const negotiateLabel = { json: createNegotiator(PROBLEM_LABELS.json, { charsetUtf8: true }), xml: createNegotiator(PROBLEM_LABELS.xml, { charsetUtf8: true }) };
  return {
    select(extension, returnType, accept) {
      const fixed = extension ?? returnType;
      if (fixed !== undefined) return BY_FORMAT[fixed];
      const type = negotiate(accept) as MediaType | undefined;
      return type === undefined ? NOT_ACCEPTABLE : BY_ACCEPT[type];
    },
    problemFormat(extension, returnType, accept) {
      const fixed = extension ?? returnType;
      if (fixed !== undefined) {
        const type = (negotiateLabel[fixed](accept) ?? PROBLEM_LABELS[fixed][0]) as ProblemMediaType;
        return { format: fixed, type, byAccept: true };
      }
      // One negotiation decides both: the best of all five is also the best label of its format.
      const type = (negotiateProblem(accept) ?? 'application/problem+json') as ProblemMediaType;
      return { format: type.endsWith('json') ? 'json' : 'xml', type, byAccept: true };
    },
  };
}

/** 'json' | 'xml' for a case-insensitive extension or return_type value, else undefined. */
export function parseFormat(value: string): Format | undefined {
  const lower = value.toLowerCase();
  return lower === 'json' || lower === 'xml' ? lower : undefined;
}
