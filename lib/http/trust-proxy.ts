import { BlockList, isIP } from 'node:net';

/**
 * The trusted-proxy rule (CONTRACT T-5): `ADDR[,ADDR|CIDR…]` parsed once. From a trusted peer,
 * `X-Forwarded-Proto: https` counts as HTTPS and the nearest untrusted `X-Forwarded-For` entry is
 * the client's address. From anyone else both headers are ignored.
 */
export interface TrustProxy {
  readonly isTrusted: (address: string) => boolean;
}

/** Parses the list; throws TypeError (programmer/operator input) on an entry that is not an address or CIDR. */
export function parseTrustProxy(list: string | readonly string[]): TrustProxy {
  const entries = (typeof list === 'string' ? list.split(',') : list).map((s) => s.trim()).filter((s) => s !== '');
  const blocks = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const address = slash < 0 ? entry : entry.slice(0, slash);
    const family = isIP(address);
    if (family === 0) throw new TypeError(`not an IP address or CIDR range: "${entry}"`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      blocks.addAddress(address, type);
      continue;
    }
    const bits = entry.slice(slash + 1);
    const prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
    if (!(prefix >= 0 && prefix <= (family === 4 ? 32 : 128))) throw new TypeError(`bad prefix length in "${entry}"`);
    blocks.addSubnet(address, prefix, type);
  }
  return {
    isTrusted(address) {
      if (entries.length === 0) return false; // the usual case, asked once per request: no parsing
      const plain = unmapIPv4(address);
      const family = isIP(plain);
      if (family === 0) return false;
      return blocks.check(plain, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/** `::ffff:127.0.0.1` → `127.0.0.1` (dual-stack sockets report IPv4 peers this way). */
export function unmapIPv4(address: string): string {
  return address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** The client address per T-5: walk X-Forwarded-For right to left past trusted hops. */
export function clientAddress(peer: string, forwardedFor: string | undefined, trust: TrustProxy): string {
  const direct = unmapIPv4(peer);
  if (forwardedFor === undefined || !trust.isTrusted(direct)) return direct;
  const hops = forwardedFor.split(',').map((s) => unmapIPv4(s.trim()));
  let nearest = direct;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (isIP(hop) === 0) return nearest;
    nearest = hop;
    if (!trust.isTrusted(hop)) return hop;
  }
  return nearest;
}
