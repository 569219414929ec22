// What a resource is: a loader of a JSON-compatible value, given the query and a context
// that can authenticate the request's caller. The representation path (lib/handlers/representation.ts)
// does everything else: selection, serialization, ETag/304, Vary, Content-Location, Link, 406.

/** The authenticated caller of a request (Basic; Digest when on). */
export interface Caller {
  readonly name: string;
  readonly role: 'user' | 'admin';
}

/** What a loader may know about its request, besides the query. */
export interface ResourceContext {
  /** The name from the path, percent-decoded, without the `.json`/`.xml` extension. */
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

/**
 * A resource's loader: a function of the query (a fresh `URLSearchParams`) and the request's
 * context, returning a JSON-compatible value or a promise of one. Throw (or reject with) an
 * `HttpError` to refuse: `problem(403, 'forbidden')`, `problem(404, 'not-found')`, …
 */
export type ResourceLoader = (query: URLSearchParams, context: ResourceContext) => unknown;

/** A loader with the XML shape of its value. */
export interface Resource {
  readonly load: ResourceLoader;
  /** The XML root element (N-9: the resource's name; R-1: `user`). */
  readonly root: string;
  /** Array members written as repeated elements without a wrapper (toXml's `unwrap`). */
  readonly unwrap?: Readonly<Record<string, string>>;
}
