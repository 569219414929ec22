/// <reference types="node" preserve="true" />
// The reference above is kept in index.d.ts: the declarations use Node's types (Buffer, node:http),
// and TypeScript 6 and later load no @types package unless a file or the tsconfig asks for it.
// The public entry point: every export is named here; nothing else is public.
export { createService } from './service.js';
export type { Service, UserOperations } from './service.js';
export type { HttpRequest, HttpResponse, RequestHandler } from './http/messages.js';
export type { FetchHandler, FetchInit } from './http/fetch-adapter.js';
export type { CertificatePair } from './tls/certificate-pair.js';
export type { ServiceOptions, ResetTokenEvent, PasswordChangedEvent, UserChangedEvent } from './config.js';
export type { ResourceLoader, ResourceContext, ResourceDefinition, ResourceEntry, ItemContext, Created, Caller } from './resources/resource.js';
export type { Role, UserInfo } from './users/users.js';
export { PasswordPolicyError } from './users/users.js';
export type { PolicyViolation } from './users/policy.js';

export { parseAccept } from './negotiate/accept.js';
export type { MediaRange } from './negotiate/accept.js';
export { negotiate, negotiateAll, createNegotiator } from './negotiate/negotiate.js';
export type { NegotiateOptions, NegotiatorOptions } from './negotiate/negotiate.js';

export { toXml, encodeXmlName, decodeXmlName } from './representation/xml.js';
export type { XmlOptions } from './representation/xml.js';

export { HttpError, problem, renderProblem } from './http/problem.js';
export type { Problem, ProblemSlug, ProblemExtra, ProblemFormat, ProblemMediaType } from './http/problem.js';
export { ServiceError } from './errors.js';
export type { ErrorCode } from './errors.js';

// Not exported on purpose: the router, the dispatcher, the store format, the hashing and
// throttling internals. They are implementation details; changing them is not a breaking change.
