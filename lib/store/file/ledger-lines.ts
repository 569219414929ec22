// The file ledger's line codec: one JSON object per line of `<store>.ledger`, as pure functions.
//
// {"f":[account|null,address,at,lease?]} failure · {"s":account} success · {"a":[account,failures,lockedUntil]}
// account state (compaction) · {"n":[nonce,nc,expiresAt]} · {"i":[account,at]} ·
// {"l":[lease,account|null,address,expiresAt]} attempt in flight · {"e":lease} (alone or on an "s" line) it ended ·
// {"p":[server,pid,host,start?]} a server joined (start: its process's, where /proc says it) · {"q":server} it left · {"k":[server,newcomer]} its leases are written.

export type LedgerLine =
  | { readonly kind: 'failure'; readonly account: string | null; readonly address: string; readonly at: number; readonly lease?: string | undefined }
  /** A success that forgets `account`'s failures, and/or the end of a published lease. */
  | { readonly kind: 'success'; readonly account?: string | undefined; readonly ended?: string | undefined }
  | { readonly kind: 'account'; readonly account: string; readonly failures: number; readonly lockedUntil: number }
  | { readonly kind: 'nonce'; readonly nonce: string; readonly nc: number; readonly expiresAt: number }
  | { readonly kind: 'issued'; readonly account: string; readonly at: number }
  | { readonly kind: 'lease'; readonly id: string; readonly account: string | null; readonly address: string; readonly expiresAt: number }
  | { readonly kind: 'joined'; readonly server: string; readonly pid: number; readonly host: string; readonly start?: string | undefined }
  | { readonly kind: 'left'; readonly server: string }
  | { readonly kind: 'ack'; readonly from: string; readonly to: string };

/** The line's text, with its newline. */
export function encodeLine(line: LedgerLine): string {
  return `${JSON.stringify(toJson(line))}\n`;
}

function toJson(line: LedgerLine): unknown {
  switch (line.kind) {
    case 'failure':
      return { f: [line.account, line.address, line.at, ...(line.lease === undefined ? [] : [line.lease])] };
    case 'success':
      return { ...(line.account === undefined ? {} : { s: line.account }), ...(line.ended === undefined ? {} : { e: line.ended }) };
    case 'account':
      return { a: [line.account, line.failures, line.lockedUntil] };
    case 'nonce':
      return { n: [line.nonce, line.nc, line.expiresAt] };
    case 'issued':
      return { i: [line.account, line.at] };
    case 'lease':
      return { l: [line.id, line.account, line.address, line.expiresAt] };
    case 'joined':
      return { p: [line.server, line.pid, line.host, ...(line.start === undefined ? [] : [line.start])] };
    case 'left':
      return { q: line.server };
    case 'ack':
      return { k: [line.from, line.to] };
  }
}

/**
 * What a line says; 'unparsable' for text that is not JSON, 'unknown' for a JSON value of no kind
 * this version knows (both are skipped by the reader, with a warning). A line with an "e" member
 * and a kind of its own is that kind with the lease ended too: `ended` is returned beside it.
 */
export function decodeLine(text: string): { readonly line?: LedgerLine; readonly ended?: string } | 'unparsable' | 'unknown' {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'unparsable';
  }
  if (typeof value !== 'object' || value === null) return {};
  const e = value as Record<string, unknown>;
  const ended = typeof e['e'] === 'string' ? e['e'] : undefined;
  if (ended !== undefined && Object.keys(e).length === 1) return { ended };
  const line = kindOf(e);
  if (line === undefined) return 'unknown';
  return ended === undefined ? { line } : { line, ended };
}

function kindOf(e: Record<string, unknown>): LedgerLine | undefined {
  const { f, l, s, a, n, i, p, q, k } = e;
  if (Array.isArray(f) && (typeof f[0] === 'string' || f[0] === null) && typeof f[1] === 'string' && typeof f[2] === 'number') {
    return { kind: 'failure', account: f[0], address: f[1], at: f[2], lease: typeof f[3] === 'string' ? f[3] : undefined };
  }
  if (Array.isArray(l) && typeof l[0] === 'string' && (typeof l[1] === 'string' || l[1] === null) && typeof l[2] === 'string' && typeof l[3] === 'number') {
    return { kind: 'lease', id: l[0], account: l[1], address: l[2], expiresAt: l[3] };
  }
  if (typeof s === 'string') return { kind: 'success', account: s };
  if (Array.isArray(a) && typeof a[0] === 'string' && typeof a[1] === 'number' && typeof a[2] === 'number') {
    return { kind: 'account', account: a[0], failures: a[1], lockedUntil: a[2] };
  }
  if (Array.isArray(n) && typeof n[0] === 'string' && typeof n[1] === 'number' && typeof n[2] === 'number') return { kind: 'nonce', nonce: n[0], nc: n[1], expiresAt: n[2] };
  if (Array.isArray(i) && typeof i[0] === 'string' && typeof i[1] === 'number') return { kind: 'issued', account: i[0], at: i[1] };
  if (Array.isArray(p) && typeof p[0] === 'string' && typeof p[1] === 'number' && typeof p[2] === 'string') {
    return { kind: 'joined', server: p[0], pid: p[1], host: p[2], ...(typeof p[3] === 'string' ? { start: p[3] } : {}) };
  }
  if (typeof q === 'string') return { kind: 'left', server: q };
  if (Array.isArray(k) && typeof k[0] === 'string' && typeof k[1] === 'string') return { kind: 'ack', from: k[0], to: k[1] };
  return undefined;
}
