// H-4: every response the end-to-end helpers receive is checked against the served OpenAPI
// document (lib/ops/openapi.ts): its route, method and status must be documented, its content type
// must be one the document lists for that response, and a JSON body must validate against the
// documented schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses). A path or method the document
// does not describe may only be refused: 400, 404, 405, 414 or 431, as a problem document.
import { AssertionError } from 'node:assert';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { createService } from '../../lib/service.js';

type Node = { readonly [key: string]: unknown };

export interface CheckedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

const REFUSALS = new Set([400, 404, 405, 414, 431]);
const PROBLEM_TYPES = new Set(['application/problem+json', 'application/json', 'application/problem+xml', 'application/xml', 'text/xml']);
const DOCUMENT_ID = 'https://httpskit.invalid/openapi.json';

export interface Checker {
  check(method: string, url: URL, response: CheckedResponse): void;
}

// Made when the helpers are imported: ajv's first compilation, during a test, would put a few
// hundred milliseconds into the first response a timing-sensitive test awaits. The default is the
// document of a service with every optional route on (P-12, H-5); a service's own is checked
// with its own document (A-12: `openapi` in RequestInit, which startService passes).
const defaultDocument = createService({ store: '/nonexistent/httpskit-openapi-check.json', log: false, onResetToken: () => {}, metricsPort: 9464 }).openapi();
const checkers = new WeakMap<object, Checker>();
// Services started with the same options describe themselves alike: one checker (one ajv) serves them.
const byText = new Map<string, Checker>();
checkerOf(defaultDocument);

function checkerOf(document: object): Checker {
  let checker = checkers.get(document);
  if (checker === undefined) {
    const text = JSON.stringify(document);
    checker = byText.get(text);
    if (checker === undefined) byText.set(text, (checker = createChecker(document as Node)));
    checkers.set(document, checker);
  }
  return checker;
}

/** Throws an AssertionError naming what `document` (default: every optional route on) does not describe. */
export function checkAgainstOpenApi(method: string, url: URL, response: CheckedResponse, document: object = defaultDocument): void {
  checkerOf(document).check(method, url, response);
}

export function createChecker(document: Node): Checker {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(document as object, DOCUMENT_ID, undefined, false);
  const validators = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let v = validators.get(pointer);
    if (v === undefined) validators.set(pointer, (v = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer.split('/').map(encodeURIComponent).join('/')}` })));
    return v;
  };

  // Concrete paths before templated ones (OpenAPI 3.1 §4.8.8.2: a concrete path matches first).
  const paths = Object.entries(document['paths'] as Node)
    .map(([path, item]) => ({ path, item: item as Node, pattern: templateRegex(trimSlash(path)) }))
    .sort((a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')));

  /** Follows a local $ref; returns the node and its JSON pointer. */
  const resolve = (node: Node, pointer: string): { node: Node; pointer: string } => {
    const target = node['$ref'];
    if (typeof target !== 'string') return { node, pointer };
    const parts = target.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    let at: unknown = document;
    for (const part of parts) at = (at as Node)[part];
    return resolve(at as Node, `/${target.slice(2)}`);
  };

  // The problem schema, compiled now: the first compilation warms ajv up (about 150 ms), later
  // ones take a few milliseconds each (see `checker` above).
  validatorAt('/components/schemas/Problem');

  return {
    check(method, url, response) {
      const path = normalizePath(trimSlash(url.pathname));
      const what = `${method} ${url.pathname}${url.search} → ${response.status}`;
      const fail = (message: string): never => {
        throw new AssertionError({ message: `OpenAPI (H-4): ${what}: ${message}` });
      };
      const type = mediaType(response.headers['content-type']);
      const hasBody = response.body.length > 0;
      const found = paths.find((p) => p.pattern.test(path));
      const op = found?.item[method.toLowerCase()] as Node | undefined;
      if (found === undefined || op === undefined) {
        if (!REFUSALS.has(response.status)) fail(`${found === undefined ? 'the path' : 'the method'} is not documented, so only a refusal (${[...REFUSALS].join(', ')}) may answer`);
        if (type === undefined ? hasBody : !PROBLEM_TYPES.has(type)) fail(`a refusal must be a problem document, got ${type ?? 'no content type'}`);
        if (type?.endsWith('json') === true && hasBody && method !== 'HEAD') validate(validatorAt('/components/schemas/Problem'), response.body, fail);
        return;
      }
      const opPointer = `/paths/${escapePointer(found.path)}/${method.toLowerCase()}`;
      const responses = op['responses'] as Node;
      // An exact status first, then its range (`4XX`), as OpenAPI 3.1 §4.8.16 orders them.
      const key = [String(response.status), `${String(response.status)[0]}XX`].find((k) => k in responses);
      if (key === undefined) fail(`status not documented (documented: ${Object.keys(responses).join(', ')})`);
      const { node, pointer } = resolve(responses[key as string] as Node, `${opPointer}/responses/${key as string}`);
      const content = node['content'] as Node | undefined;
      if (type === undefined) {
        if (hasBody) fail('a body without a content type');
        if (content !== undefined && method !== 'HEAD' && response.status !== 304) fail(`documented with a body (${Object.keys(content).join(', ')}), got none`);
        return;
      }
      if (content === undefined) fail(`documented without a body, got ${type}`);
      if (!(type in (content as Node))) fail(`content type ${type} not documented (documented: ${Object.keys(content as Node).join(', ')})`);
      if (type.endsWith('json') && method !== 'HEAD' && response.status !== 304) {
        validate(validatorAt(`${pointer}/content/${escapePointer(type)}/schema`), response.body, fail);
      }
    },
  };
}

function validate(validator: ValidateFunction, body: string, fail: (message: string) => never): void {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    fail(`the body is not JSON: ${body.slice(0, 200)}`);
  }
  if (!validator(value)) fail(`the body does not match the documented schema: ${JSON.stringify(validator.errors)}; body ${body.slice(0, 300)}`);
}

/** The media type of a Content-Type, lowercase, without parameters. */
function mediaType(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  return (header.split(';')[0] as string).trim().toLowerCase();
}

/**
 * The path as the router reads it: percent-encoded unreserved characters are those characters
 * (RFC 3986 §6.2.2.2), and an extension is case-insensitive (N-8): `/api/some%74hing.XML` is
 * `/api/something.xml`.
 */
function normalizePath(path: string): string {
  const decoded = path.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9._~-]/.test(c) ? c : escape;
  });
  return decoded.replace(/\.(json|xml)$/i, (ext) => ext.toLowerCase());
}

/** N-8: one trailing slash is ignored, on both sides. */
function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function templateRegex(path: string): RegExp {
  const source = path
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
