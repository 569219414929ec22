// What a resource is: a loader of a JSON-compatible value, given the query and a
// context that can authenticate the request's caller; or a definition with methods and items. The
// representation path (lib/handlers/representation.ts) does everything else: selection,
// serialization, ETag/304, Vary, Content-Location, Link, 406.

/** The authenticated caller of a request (Basic; Digest when on). */
export interface Caller {
  readonly name: string;
  readonly role: 'user' | 'admin';
}

/** What a loader may know about its request, besides the query. */
export interface ResourceContext {
  /** The resource's name from the path, percent-decoded, without the `.json`/`.xml` extension. */
  readonly name: string;
  /**
   * Authenticates the request's caller as the password routes do (Basic; Digest when on; P-8
   * throttling applies). Resolves to the caller; rejects with an HttpError the loader should let
   * through: 401 with the challenges, 403 `https-required` on plain HTTP (credentials never travel
   * in clear), 429 when throttled, 503 when overloaded. Once called, the response is
   * `Cache-Control: private, no-cache`: it depends on who asked.
   */
  authenticate(): Promise<Caller>;
}

/** The context of an item's method: the resource's context plus the item's id. */
export interface ItemContext extends ResourceContext {
  /** The item's id from the path (one segment), percent-decoded, without the `.json`/`.xml` extension. */
  readonly id: string;
}

/**
 * A resource's loader: a function of the query (a fresh `URLSearchParams`) and the request's
 * context, returning a JSON-compatible value or a promise of one. Throw (or reject with) an
 * `HttpError` to refuse: `problem(403, 'forbidden')`, `problem(404, 'not-found')`, …
 */
export type ResourceLoader = (query: URLSearchParams, context: ResourceContext) => unknown;

/** What `post` returns: the new item's id (its URL is `/api/<name>/<id>`) and its value. */
export interface Created {
  readonly id: string | number;
  readonly value: unknown;
}

/**
 * A resource with methods and items. Every method may return a promise, and may throw an
 * `HttpError` to refuse. Bodies are JSON, checked by `parse` or `schema` before a method sees
 * them. `Body` is what `post` and `item.put` are given: what `parse` returns, or what `schema`
 * admits (`ResourceDefinition<Book>`: the schema is yours to keep in step with the type, as with
 * any JSON Schema). Methods are written as methods, so a definition of any `Body` is a
 * `ResourceDefinition`.
 * @example const books: ResourceDefinition<Book> = { schema: BOOK_SCHEMA, post: (book) => ({ id: add(book), value: book }) };
 */
export interface ResourceDefinition<Body = unknown> {
  /** GET|HEAD /api/<name>[.json|.xml]: the collection's value. */
  get?(query: URLSearchParams, context: ResourceContext): unknown;
  /** POST /api/<name>: creates an item; 201 with `Location: /api/<name>/<id>` and `value`. */
  post?(body: Body, context: ResourceContext): Created | Promise<Created>;
  item?: {
    /** GET|HEAD /api/<name>/<id>[.json|.xml]: the item's value; `undefined` is 404. */
    get?(id: string, query: URLSearchParams, context: ItemContext): unknown;
    /** PUT /api/<name>/<id>: stores `body`; answers 200 with what it returns (201 when `get` said the item did not exist; 204 for `undefined`). */
    put?(id: string, body: Body, context: ItemContext): unknown;
    /** DELETE /api/<name>/<id>: 204, or 404 when it returns `false`. */
    delete?(id: string, context: ItemContext): unknown;
  };
  /** A JSON Schema (the A-6 subset) every body (POST, PUT, a PATCH's result) must satisfy: else 422. */
  schema?: Readonly<Record<string, unknown>> | boolean;
  /** Checks and converts a body (any validator); a throw is 422 with its message. Used instead of `schema`. */
  parse?(body: unknown): Body | Promise<Body>;
  /** Largest request body, in bytes. @default 1048576 */
  maxBodyBytes?: number;
  /** Answer 428 to a PUT, PATCH or DELETE without If-Match or If-None-Match; needs `item.get`. @default false */
  requireConditional?: boolean;
  xml?: {
    /** The XML root element of an item. @default 'item' */
    itemRoot?: string;
  };
}

/** What an embedder registers under a name: a loader or a definition. */
export type ResourceEntry = ResourceLoader | ResourceDefinition;

/** A loader with the XML shape of its value. */
export interface Resource {
  readonly load: ResourceLoader;
  /** The XML root element (N-9: the resource's name; R-1: `user`). */
  readonly root: string;
  /** Array members written as repeated elements without a wrapper (toXml's `unwrap`). */
  readonly unwrap?: Readonly<Record<string, string>>;
}
