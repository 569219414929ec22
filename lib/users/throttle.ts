// P-8 throttling: the policy and its state live in the store's throttle ledger (lib/store/ledgers.ts,
// one per store: lib/store/file, memory, postgres); this file keeps what they all
// share: the key an address is counted under.
import { isIP } from 'node:net';

/**
 * The key an address is throttled under: IPv4 as is, IPv6 by its /64 prefix, because one host
 * usually holds a whole /64 and could otherwise rotate through 2^64 addresses (RFC 7707 §2).
 */
export function addressKey(address: string): string {
  const bare = address.split('%', 1)[0] ?? address;
  if (isIP(bare) !== 6) return address;
  const [head = '', tail] = bare.toLowerCase().split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const backGroups = back.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - backGroups)).fill('0'), ...back];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
