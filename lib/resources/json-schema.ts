// A-6: the JSON Schema 2020-12 subset a resource's `schema` may use, compiled once (at
// createService) into a validator that lists every refusal with an RFC 6901 pointer into the body.
//
// Keywords (JSON Schema Validation 2020-12 §6, Core §10.3): `type` (a name or a list of names, with
// `integer`), `properties`, `required`, `additionalProperties`, `items` (one schema), `enum`,
// `const`, `minimum`, `maximum`, `minLength`, `maxLength` (code points), `minItems`, `maxItems`,
// `pattern` (ECMA-262 with the `u` flag, unanchored); the annotations `$schema` (2020-12 only)
// and the meta-data vocabulary (Validation §9: `title`, `description`, `default`, `examples`,
// `deprecated`, `readOnly`, `writeOnly`) are accepted and do nothing. A schema may also
// be `true` or `false` (Core §4.3.2). Anything else is refused when the schema is compiled: a
// keyword left out silently would let through what its author meant to refuse.
import { ServiceError } from '../errors.js';
import { codePoints, describe, isObject, isPlainObject, jsonEqual, jsonPointer, notJson } from './json-value.js';

/** A schema of the subset: `true`, `false`, or an object of the keywords above. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

/** One refusal: where in the value (RFC 6901), and why, in words. */
export interface SchemaError {
  /** The offending member or entry, or the object that lacks a required member; `''` is the whole value. */
  readonly pointer: string;
  readonly detail: string;
}

/** Checks a JSON value; returns its refusals (an empty list when it is valid). */
export type SchemaValidator = (value: unknown) => readonly SchemaError[];

export interface CompileOptions {
  /** Most refusals listed; the validator stops looking once it has them. @default 100 */
  readonly maxErrors?: number;
}

/**
 * Compiles a schema of the subset. `where` names it in refusals (`resources.books.schema`).
 * A keyword outside the subset, or a malformed value of one, is `ServiceError` `ERR_INVALID_OPTION`
 * naming `where` and the keyword's pointer in the schema.
 * @example compileSchema({ type: 'object', required: ['title'] }, 'books')({}) // [{ pointer: '', detail: 'must have the member "title"' }]
 */
export function compileSchema(schema: unknown, where: string, options: CompileOptions = {}): SchemaValidator {
  const max = options.maxErrors ?? 100;
  if (!Number.isInteger(max) || max < 1) throw new ServiceError('ERR_INVALID_OPTION', `${where}: maxErrors must be a positive integer`);
  const check = compile(schema, { where, at: [], ancestors: new Set() });
  return (value) => {
    const run: Run = { path: [], errors: [], max };
    check(value, run);
    return run.errors.length === 0 ? NO_ERRORS : run.errors;
  };
}

/** A compiled schema node: checks `value`, reporting through `run` (which knows where it is). */
type Check = (value: unknown, run: Run) => void;

/** One validation: the path walked so far (pointer tokens, escaped only for a refusal) and what was found. */
interface Run {
  readonly path: (string | number)[];
  readonly errors: SchemaError[];
  readonly max: number;
}

const NO_ERRORS: readonly SchemaError[] = Object.freeze([]);

const pass: Check = () => {};

/** `1 character`, `2 characters`: a refusal's detail is read by people. */
function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function report(run: Run, detail: string): void {
  if (run.errors.length < run.max) run.errors.push({ pointer: jsonPointer(run.path), detail });
}

/** Where in the schema a node is, for refusals; the schema objects above it, to refuse a cycle. */
interface Site {
  readonly where: string;
  readonly at: readonly string[];
  readonly ancestors: Set<object>;
}

function refuse(site: Site, keyword: string | undefined, message: string): never {
  const pointer = jsonPointer(keyword === undefined ? site.at : [...site.at, keyword]);
  throw new ServiceError('ERR_INVALID_OPTION', `${site.where}: ${pointer === '' ? 'the schema' : `schema ${pointer}`} ${message}`);
}

/** What a keyword's compiler is given: its schema object's site, and its siblings. */
interface KeywordSite extends Site {
  readonly schema: Readonly<Record<string, unknown>>;
  readonly keyword: string;
}

/** Compiles one keyword's value into a check, or `undefined` when it checks nothing (annotations). Refuses a malformed value. */
type KeywordCompiler = (value: unknown, site: KeywordSite) => Check | undefined;

function compile(schema: unknown, site: Site): Check {
  if (schema === true) return pass;
  if (schema === false) return (_value, run) => report(run, 'is not allowed here');
  if (!isPlainObject(schema)) refuse(site, undefined, `must be an object, true or false (JSON Schema 2020-12), got ${describe(schema)}`);
  if (site.ancestors.has(schema)) refuse(site, undefined, 'contains itself ($ref and cycles are not supported)');
  for (const keyword of Object.keys(schema)) {
    if (!Object.hasOwn(KEYWORDS, keyword)) {
      refuse(site, keyword, `uses "${keyword}", which this service does not support (supported: ${Object.keys(KEYWORDS).join(', ')})`);
    }
  }
  site.ancestors.add(schema);
  const checks: Check[] = [];
  // The table's order, not the schema's: refusals come in the same order whatever the key order.
  for (const [keyword, compileKeyword] of Object.entries(KEYWORDS)) {
    if (!Object.hasOwn(schema, keyword)) continue;
    const check = compileKeyword(schema[keyword], { ...site, schema, keyword });
    if (check !== undefined && check !== pass) checks.push(check);
  }
  site.ancestors.delete(schema);
  if (checks.length <= 1) return checks[0] ?? pass;
  return (value, run) => {
    for (const c of checks) {
      if (run.errors.length >= run.max) return;
      c(value, run);
    }
  };
}

/** A subschema's site: below `site`'s keyword, at `tokens`. */
function below(site: KeywordSite, ...tokens: string[]): Site {
  return { where: site.where, at: [...site.at, site.keyword, ...tokens], ancestors: site.ancestors };
}

const DIALECT = /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'] as const;
type TypeName = (typeof TYPES)[number];
const ARTICLE: { readonly [T in TypeName]: string } = {
  null: 'null', boolean: 'a boolean', object: 'an object', array: 'an array', number: 'a number', string: 'a string', integer: 'an integer',
};

/**
 * The subset, keyword by keyword: the one list of what is supported (a keyword not here is
 * refused), each with the compiler of its value. Checks run in this order.
 */
const KEYWORDS: { readonly [keyword: string]: KeywordCompiler } = {
  // Annotations (Core §8.1.1, Validation §9): their shape is checked, they check nothing.
  $schema: (value, site) => {
    if (typeof value !== 'string' || !DIALECT.test(value)) {
      refuse(site, site.keyword, `must be "https://json-schema.org/draft/2020-12/schema" (the dialect this subset is of), got ${describe(value)}`);
    }
    return undefined;
  },
  title: text,
  description: text,
  default: json,
  examples: (value, site) => {
    if (!Array.isArray(value)) refuse(site, site.keyword, 'must be an array');
    return json(value, site);
  },
  // A member the server owns (an id, an `updatedAt`): a PATCH's result holds it, as the current
  // value does. It says so in /openapi.json; it checks nothing (Validation §9.4).
  deprecated: flag,
  readOnly: flag,
  writeOnly: flag,

  // Any type (Validation §6.1).
  type: (value, site) => {
    const names = typeof value === 'string' ? [value] : value;
    if (
      !Array.isArray(names) ||
      names.length === 0 ||
      !names.every((n): n is TypeName => typeof n === 'string' && (TYPES as readonly string[]).includes(n)) ||
      new Set(names).size !== names.length
    ) {
      refuse(site, site.keyword, `must be one of ${TYPES.join(', ')}, or a non-empty list of distinct ones, got ${describe(value)}`);
    }
    const wanted = new Set<TypeName>(names);
    const detail = `must be ${names.map((n) => ARTICLE[n]).join(' or ')}`;
    return (v, run) => {
      if (!hasType(v, wanted)) report(run, detail);
    };
  },
  enum: (value, site) => {
    if (!Array.isArray(value) || value.length === 0) refuse(site, site.keyword, 'must be a non-empty array');
    json(value, site);
    return (v, run) => {
      if (!value.some((allowed) => jsonEqual(v, allowed))) report(run, 'must be one of the values the schema lists (enum)');
    };
  },
  const: (value, site) => {
    json(value, site);
    return (v, run) => {
      if (!jsonEqual(v, value)) report(run, 'must be the value the schema gives (const)');
    };
  },

  // Numbers (Validation §6.2).
  minimum: (value, site) => {
    const min = finite(value, site);
    return (v, run) => {
      if (typeof v === 'number' && v < min) report(run, `must be at least ${min}`);
    };
  },
  maximum: (value, site) => {
    const max = finite(value, site);
    return (v, run) => {
      if (typeof v === 'number' && v > max) report(run, `must be at most ${max}`);
    };
  },

  // Strings (Validation §6.3): lengths in code points. A string of 2n UTF-16 units has at least n.
  minLength: (value, site) => {
    const n = count(value, site);
    return (v, run) => {
      if (typeof v === 'string' && v.length < 2 * n && codePoints(v) < n) report(run, `must be at least ${plural(n, 'character')} long`);
    };
  },
  maxLength: (value, site) => {
    const n = count(value, site);
    return (v, run) => {
      if (typeof v === 'string' && v.length > n && codePoints(v) > n) report(run, `must be at most ${plural(n, 'character')} long`);
    };
  },
  pattern: (value, site) => {
    if (typeof value !== 'string') refuse(site, site.keyword, `must be a string (a regular expression), got ${describe(value)}`);
    let re: RegExp;
    try {
      re = new RegExp(value, 'u');
    } catch (error) {
      refuse(site, site.keyword, `is not a regular expression with the u flag (ECMA-262): ${(error as Error).message}`);
    }
    // No g or y flag: test() keeps no state between calls.
    return (v, run) => {
      if (typeof v === 'string' && !re.test(v)) report(run, `must match the pattern ${value}`);
    };
  },

  // Arrays (Validation §6.4, Core §10.3.1.2).
  minItems: (value, site) => {
    const n = count(value, site);
    return (v, run) => {
      if (Array.isArray(v) && v.length < n) report(run, `must have at least ${plural(n, 'entry', 'entries')}`);
    };
  },
  maxItems: (value, site) => {
    const n = count(value, site);
    return (v, run) => {
      if (Array.isArray(v) && v.length > n) report(run, `must have at most ${plural(n, 'entry', 'entries')}`);
    };
  },
  items: (value, site) => {
    if (Array.isArray(value)) refuse(site, site.keyword, 'must be one schema (2020-12); a list of schemas is prefixItems, which this service does not support');
    const item = compile(value, below(site));
    if (item === pass) return undefined;
    return (v, run) => {
      if (!Array.isArray(v)) return;
      for (let i = 0; i < v.length && run.errors.length < run.max; i++) {
        run.path.push(i);
        item(v[i], run);
        run.path.pop();
      }
    };
  },

  // Objects (Validation §6.5, Core §10.3.2). A member is an own one: `__proto__` of a parsed body included.
  required: (value, site) => {
    if (!Array.isArray(value) || !value.every((n): n is string => typeof n === 'string') || new Set(value).size !== value.length) {
      refuse(site, site.keyword, 'must be an array of distinct strings');
    }
    return (v, run) => {
      if (!isObject(v)) return;
      for (const name of value) if (!Object.hasOwn(v, name)) report(run, `must have the member ${JSON.stringify(name)}`);
    };
  },
  properties: (value, site) => {
    if (!isPlainObject(value)) refuse(site, site.keyword, `must be an object of schemas, got ${describe(value)}`);
    const known = new Map(Object.keys(value).map((name) => [name, compile(value[name], below(site, name))]));
    // additionalProperties applies to the members properties does not name: both are checked here.
    const others = Object.hasOwn(site.schema, 'additionalProperties')
      ? compile(site.schema['additionalProperties'], { where: site.where, at: [...site.at, 'additionalProperties'], ancestors: site.ancestors })
      : pass;
    return members(known, others);
  },
  additionalProperties: (value, site) => (Object.hasOwn(site.schema, 'properties') ? undefined : members(new Map(), compile(value, below(site)))),
};

/** Each member of an object by the schema of its name, or by `others` (additionalProperties). */
function members(known: ReadonlyMap<string, Check>, others: Check): Check {
  if (others === pass && [...known.values()].every((c) => c === pass)) return pass;
  return (value, run) => {
    if (!isObject(value)) return;
    for (const name of Object.keys(value)) {
      if (run.errors.length >= run.max) return;
      const check = known.get(name) ?? others;
      if (check === pass) continue;
      run.path.push(name);
      check(value[name], run);
      run.path.pop();
    }
  };
}

function hasType(value: unknown, wanted: ReadonlySet<TypeName>): boolean {
  switch (typeof value) {
    case 'string':
      return wanted.has('string');
    case 'boolean':
      return wanted.has('boolean');
    case 'number':
      return wanted.has('number') || (wanted.has('integer') && Number.isInteger(value));
    case 'object':
      if (value === null) return wanted.has('null');
      return wanted.has(Array.isArray(value) ? 'array' : 'object');
    default:
      return false;
  }
}

function text(value: unknown, site: KeywordSite): undefined {
  if (typeof value !== 'string') refuse(site, site.keyword, `must be a string, got ${describe(value)}`);
  return undefined;
}

function flag(value: unknown, site: KeywordSite): undefined {
  if (typeof value !== 'boolean') refuse(site, site.keyword, `must be true or false, got ${describe(value)}`);
  return undefined;
}

/** enum, const, default and examples are compared with or shown as JSON: they must be JSON. */
function json(value: unknown, site: KeywordSite): undefined {
  const wrong = notJson(value);
  if (wrong !== undefined) refuse(site, site.keyword, `must be a JSON value, and holds ${wrong}`);
  return undefined;
}

function finite(value: unknown, site: KeywordSite): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  return refuse(site, site.keyword, `must be a number, got ${describe(value)}`);
}

function count(value: unknown, site: KeywordSite): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  return refuse(site, site.keyword, `must be a non-negative integer, got ${describe(value)}`);
}
