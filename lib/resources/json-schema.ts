// A-6: the JSON Schema 2020-12 subset a resource's `schema` may use, compiled once (at
// createService) into a validator that lists every refusal with an RFC 6901 pointer into the body.
//
// Keywords (JSON Schema Validation 2020-12 §6, Core §10.3): `type` (a name or a list of names, with
// `integer`), `properties`, `required`, `additionalProperties`, `items` (one schema), `enum`,
// `const`, `minimum`, `maximum`, `minLength`, `maxLength` (code points), `minItems`, `maxItems`,
// `pattern` (ECMA-262 with the `u` flag, unanchored); the annotations `$schema` (2020-12 only),
// `title`, `description`, `default` and `examples` are accepted and do nothing. A schema may also
// be `true` or `false` (Core §4.3.2). Anything else is refused when the schema is compiled: a
// keyword left out silently would let through what its author meant to refuse.
import { ServiceError } from '../errors.js';

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

const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'] as const;
type TypeName = (typeof TYPES)[number];

const DIALECT = /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

/** A compiled schema node: checks `value`, reporting through `run` (which knows where it is). */
type Check = (value: unknown, run: Run) => void;

/** One validation: the path walked so far (pointer tokens, escaped lazily) and what was found. */
interface Run {
  readonly path: (string | number)[];
  readonly errors: SchemaError[];
  readonly max: number;
}

const NO_ERRORS: readonly SchemaError[] = Object.freeze([]);

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

/** Where in the schema a node is, for refusals; the schema objects above it, to refuse a cycle. */
interface Site {
  readonly where: string;
  readonly at: readonly string[];
  readonly ancestors: Set<object>;
}

function refuse(site: Site, keyword: string | undefined, message: string): never {
  const pointer = toPointer(keyword === undefined ? site.at : [...site.at, keyword]);
  throw new ServiceError('ERR_INVALID_OPTION', `${site.where}: ${pointer === '' ? 'the schema' : `schema ${pointer}`} ${message}`);
}

function compile(schema: unknown, site: Site): Check {
  if (schema === true) return pass;
  if (schema === false) return (_value, run) => report(run, 'is not allowed here');
  if (!isPlainObject(schema)) refuse(site, undefined, `must be an object, true or false (JSON Schema 2020-12), got ${describe(schema)}`);
  if (site.ancestors.has(schema)) refuse(site, undefined, 'contains itself ($ref and cycles are not supported)');
  site.ancestors.add(schema);
  const s = schema as Readonly<Record<string, unknown>>;
  for (const keyword of Object.keys(s)) {
    if (!Object.hasOwn(KEYWORDS, keyword)) {
      refuse(site, keyword, `uses "${keyword}", which this service does not support (supported: ${Object.keys(KEYWORDS).join(', ')})`);
    }
  }
  const checks: Check[] = [];
  const has = (keyword: string): boolean => Object.hasOwn(s, keyword);
  const sub = (...tokens: string[]): Site => ({ where: site.where, at: [...site.at, ...tokens], ancestors: site.ancestors });

  if (has('$schema') && (typeof s['$schema'] !== 'string' || !DIALECT.test(s['$schema']))) {
    refuse(site, '$schema', `must be "https://json-schema.org/draft/2020-12/schema" (the dialect this subset is of), got ${describe(s['$schema'])}`);
  }
  for (const keyword of ['title', 'description'] as const) if (has(keyword) && typeof s[keyword] !== 'string') refuse(site, keyword, 'must be a string');
  if (has('default')) jsonValue(s['default'], sub('default'));
  if (has('examples')) {
    if (!Array.isArray(s['examples'])) refuse(site, 'examples', 'must be an array');
    jsonValue(s['examples'], sub('examples'));
  }

  if (has('type')) checks.push(typeCheck(s['type'], site));
  if (has('enum')) {
    const values = s['enum'];
    if (!Array.isArray(values) || values.length === 0) refuse(site, 'enum', 'must be a non-empty array');
    jsonValue(values, sub('enum'));
    checks.push((value, run) => {
      if (!values.some((v) => jsonEqual(value, v))) report(run, 'must be one of the values the schema lists (enum)');
    });
  }
  if (has('const')) {
    const expected = s['const'];
    jsonValue(expected, sub('const'));
    checks.push((value, run) => {
      if (!jsonEqual(value, expected)) report(run, 'must be the value the schema gives (const)');
    });
  }

  // Numbers.
  if (has('minimum')) {
    const min = finite(s['minimum'], site, 'minimum');
    checks.push((value, run) => {
      if (typeof value === 'number' && value < min) report(run, `must be at least ${min}`);
    });
  }
  if (has('maximum')) {
    const maxValue = finite(s['maximum'], site, 'maximum');
    checks.push((value, run) => {
      if (typeof value === 'number' && value > maxValue) report(run, `must be at most ${maxValue}`);
    });
  }

  // Strings.
  if (has('minLength')) {
    const n = count(s['minLength'], site, 'minLength');
    checks.push((value, run) => {
      if (typeof value === 'string' && value.length < 2 * n && codePoints(value) < n) report(run, `must be at least ${n} characters long`);
    });
  }
  if (has('maxLength')) {
    const n = count(s['maxLength'], site, 'maxLength');
    checks.push((value, run) => {
      if (typeof value === 'string' && value.length > n && codePoints(value) > n) report(run, `must be at most ${n} characters long`);
    });
  }
  if (has('pattern')) {
    const source = s['pattern'];
    if (typeof source !== 'string') refuse(site, 'pattern', `must be a string (a regular expression), got ${describe(source)}`);
    let re: RegExp;
    try {
      re = new RegExp(source, 'u');
    } catch (error) {
      refuse(site, 'pattern', `is not a regular expression with the u flag (ECMA-262): ${(error as Error).message}`);
    }
    checks.push((value, run) => {
      if (typeof value === 'string' && !re.test(value)) report(run, `must match the pattern ${source}`);
    });
  }

  // Arrays.
  if (has('minItems')) {
    const n = count(s['minItems'], site, 'minItems');
    checks.push((value, run) => {
      if (Array.isArray(value) && value.length < n) report(run, `must have at least ${n} entries`);
    });
  }
  if (has('maxItems')) {
    const n = count(s['maxItems'], site, 'maxItems');
    checks.push((value, run) => {
      if (Array.isArray(value) && value.length > n) report(run, `must have at most ${n} entries`);
    });
  }
  if (has('items')) {
    if (Array.isArray(s['items'])) refuse(site, 'items', 'must be one schema (2020-12); a list of schemas is prefixItems, which this service does not support');
    const item = compile(s['items'], sub('items'));
    if (item !== pass) {
      checks.push((value, run) => {
        if (!Array.isArray(value)) return;
        for (let i = 0; i < value.length && run.errors.length < run.max; i++) {
          run.path.push(i);
          item(value[i], run);
          run.path.pop();
        }
      });
    }
  }

  // Objects.
  if (has('required')) {
    const names = s['required'];
    if (!Array.isArray(names) || !names.every((n): n is string => typeof n === 'string') || new Set(names).size !== names.length) {
      refuse(site, 'required', 'must be an array of distinct strings');
    }
    checks.push((value, run) => {
      if (!isObject(value)) return;
      for (const name of names) if (!Object.hasOwn(value, name)) report(run, `must have the member ${JSON.stringify(name)}`);
    });
  }
  let known: ReadonlyMap<string, Check> = new Map();
  if (has('properties')) {
    const props = s['properties'];
    if (!isPlainObject(props)) refuse(site, 'properties', `must be an object of schemas, got ${describe(props)}`);
    known = new Map(Object.keys(props).map((name) => [name, compile(props[name], sub('properties', name))]));
  }
  const others = has('additionalProperties') ? compile(s['additionalProperties'], sub('additionalProperties')) : pass;
  if (known.size > 0 || others !== pass) checks.push(membersCheck(known, others));

  site.ancestors.delete(schema);
  if (checks.length === 0) return pass;
  if (checks.length === 1) return checks[0] as Check;
  return (value, run) => {
    for (const c of checks) {
      if (run.errors.length >= run.max) return;
      c(value, run);
    }
  };
}

/** The keywords of the subset (the values only mark membership). */
const KEYWORDS: Readonly<Record<string, true>> = Object.freeze({
  type: true, properties: true, required: true, additionalProperties: true, items: true, enum: true, const: true,
  minimum: true, maximum: true, minLength: true, maxLength: true, minItems: true, maxItems: true, pattern: true,
  $schema: true, title: true, description: true, default: true, examples: true,
});

const pass: Check = () => {};

/** `properties` and `additionalProperties` (Core §10.3.2.1, §10.3.2.3): each member by its name's schema, or the others'. */
function membersCheck(known: ReadonlyMap<string, Check>, others: Check): Check {
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

function typeCheck(type: unknown, site: Site): Check {
  const names = typeof type === 'string' ? [type] : type;
  if (
    !Array.isArray(names) ||
    names.length === 0 ||
    !names.every((n): n is TypeName => typeof n === 'string' && (TYPES as readonly string[]).includes(n)) ||
    new Set(names).size !== names.length
  ) {
    refuse(site, 'type', `must be one of ${TYPES.join(', ')}, or a non-empty list of distinct ones, got ${describe(type)}`);
  }
  const wanted = new Set<TypeName>(names);
  const detail = `must be ${names.map((n) => ARTICLE[n]).join(' or ')}`;
  return (value, run) => {
    if (!hasType(value, wanted)) report(run, detail);
  };
}

const ARTICLE: { readonly [T in TypeName]: string } = {
  null: 'null', boolean: 'a boolean', object: 'an object', array: 'an array', number: 'a number', string: 'a string', integer: 'an integer',
};

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

function report(run: Run, detail: string): void {
  if (run.errors.length < run.max) run.errors.push({ pointer: toPointer(run.path), detail });
}

/** RFC 6901 §3: `~` is written `~0` and `/` is written `~1`. */
function toPointer(tokens: readonly (string | number)[]): string {
  let pointer = '';
  for (const t of tokens) pointer += '/' + (typeof t === 'number' ? String(t) : t.replaceAll('~', '~0').replaceAll('/', '~1'));
  return pointer;
}

/** Code points (Validation §6.3.1: a string's length is its number of characters), lone surrogates counting one each. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object literal, or one made by JSON.parse or Object.create(null): not an array, a Map, a class instance (a zod schema). */
function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Equality of JSON values (Validation §4.2.2): same type; numbers by value; arrays entry by entry; objects member by member, in any order. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}

/** Refuses what is not a JSON value (enum, const, default, examples are compared or shown as JSON). */
function jsonValue(value: unknown, site: Site, ancestors: Set<object> = new Set()): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number' && Number.isFinite(value)) return;
  if (!Array.isArray(value) && !isPlainObject(value)) refuse(site, undefined, `must be a JSON value, and holds ${describe(value)}`);
  if (ancestors.has(value)) refuse(site, undefined, 'must be a JSON value (it contains itself)');
  ancestors.add(value);
  for (const k of Object.keys(value)) jsonValue((value as Record<string, unknown>)[k], site, ancestors);
  ancestors.delete(value);
}

function finite(value: unknown, site: Site, keyword: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  return refuse(site, keyword, `must be a number, got ${describe(value)}`);
}

function count(value: unknown, site: Site, keyword: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  return refuse(site, keyword, `must be a non-negative integer, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object') return Object.getPrototypeOf(value) === Object.prototype ? 'an object' : `a ${value.constructor?.name ?? 'non-plain'} object`;
  return typeof value;
}
