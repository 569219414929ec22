// The response invariants of the hostile tests (docs/CONTRACT.md E-1, E-3, L-2, T-4): what every
// response must satisfy whatever the request was. Returns the list of broken ones (empty: fine).
import { parseXml } from '../../helpers/xml-parse.js';
import type { RawResponse } from './raw-http.js';

export interface InvariantOptions {
  /** The request as sent; a needle found in it may be echoed back legitimately (param1). */
  readonly request: Buffer;
  readonly method: string;
  /** Strings that must never appear in a response: paths, hashes, passwords, secrets. */
  readonly secrets: readonly string[];
}

// A V8 stack frame ("    at fn (/x/y.ts:1:2)" or "at file:///x.js:1:2").
const STACK_FRAME = /\bat (?:[^\s()]+ \()?(?:file:\/\/|node:|\/)[^\s()]*:\d+:\d+\)?/;
const JSON_TYPES = new Set(['application/json', 'application/problem+json']);
const XML_TYPES = new Set(['application/xml', 'text/xml', 'application/problem+xml']);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export function responseViolations(response: RawResponse, o: InvariantOptions): string[] {
  const out: string[] = [];
  const one = (name: string): string | undefined => response.headers.get(name)?.[0];

  // L-2: no 5xx but 503 from overload, and that one says so.
  if (response.status >= 500 && response.status !== 503) out.push(`status ${response.status}`);

  // T-4: every response carries the two security headers.
  if (one('x-content-type-options') !== 'nosniff') out.push('missing X-Content-Type-Options: nosniff');
  if (one('content-security-policy') === undefined) out.push('missing Content-Security-Policy');

  // The body parses as its Content-Type says (E-1, N-6, N-10).
  const type = one('content-type');
  const hasBody = o.method !== 'HEAD' && response.status !== 304 && response.status !== 204;
  let text = '';
  if (response.body.length > 0) {
    try {
      text = strictUtf8.decode(response.body);
    } catch {
      out.push('body is not UTF-8');
    }
  }
  if (type === undefined) {
    if (response.body.length > 0) out.push('a body without Content-Type');
  } else {
    const media = (type.split(';')[0] ?? '').trim().toLowerCase();
    if (!/;\s*charset=utf-8\s*$/i.test(type)) out.push(`Content-Type without charset=utf-8: ${type}`);
    if (hasBody) {
      if (JSON_TYPES.has(media)) {
        try {
          const value: unknown = JSON.parse(text);
          if (media === 'application/problem+json') out.push(...problemViolations(value, response.status));
        } catch (error) {
          out.push(`body is not JSON: ${(error as Error).message}`);
        }
      } else if (XML_TYPES.has(media)) {
        try {
          const root = parseXml(text);
          if (media === 'application/problem+xml' && (root.name !== 'problem' || root.ns !== 'urn:ietf:rfc:7807')) out.push('problem+xml root is not <problem> in urn:ietf:rfc:7807');
        } catch (error) {
          out.push(`body is not well-formed XML: ${(error as Error).message}`);
        }
      } else {
        out.push(`unexpected Content-Type ${type}`);
      }
    }
  }
  if (response.status === 503 && hasBody && !text.includes('/problems/overloaded')) out.push('503 that is not an overload problem');

  // E-3 / P-11: no stack trace, file path, hash or secret, unless the request itself carried it.
  const whole = `${response.head}\r\n\r\n${text}`;
  const sent = o.request.toString('utf8') + o.request.toString('latin1');
  const frame = STACK_FRAME.exec(whole);
  if (frame !== null && !sent.includes(frame[0])) out.push(`stack frame in the response: ${frame[0]}`);
  for (const secret of o.secrets) {
    if (secret !== '' && whole.includes(secret) && !sent.includes(secret)) out.push(`response leaks ${JSON.stringify(secret.slice(0, 40))}`);
  }
  return out;
}

function problemViolations(value: unknown, status: number): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['problem+json body is not an object'];
  const p = value as Record<string, unknown>;
  const out: string[] = [];
  if (typeof p['type'] !== 'string' || !/^\/problems\/[a-z-]+$/.test(p['type'])) out.push(`problem type ${JSON.stringify(p['type'])}`);
  if (typeof p['title'] !== 'string') out.push('problem without title');
  if (p['status'] !== status) out.push(`problem status ${JSON.stringify(p['status'])} on a ${status} response`);
  return out;
}
