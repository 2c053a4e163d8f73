import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { normalAddress } from './hub.js';

/** Where requests really come from when the host sits behind proxies it trusts (config `trustedProxies`). */
export interface ClientAddresses {
  /**
   * The client's address for a request or socket upgrade: its TCP peer, or, when that peer is a trusted proxy,
   * the right-most X-Forwarded-For entry that is not itself a trusted proxy. From any other peer the header is
   * ignored, so sending one gains nothing. IPv4 as `a.b.c.d` (never `::ffff:a.b.c.d`).
   */
  of(req: IncomingMessage): string;
  /** Whether `address` (a TCP peer) is a trusted proxy, whose connections carry many clients. */
  trusts(address: string): boolean;
}

/** `entry` as an address or range of `trustedProxies` (`10.0.0.5`, `10.0.0.0/8`, `::1`, `fd00::/8`), or null. */
function parseProxyEntry(
  entry: string,
): { address: string; prefix: number | null; family: 'ipv4' | 'ipv6' } | null {
  const slash = entry.indexOf('/');
  const address = normalAddress(slash === -1 ? entry.trim() : entry.slice(0, slash).trim());
  const version = isIP(address);
  if (version === 0) return null;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (slash === -1) return { address, prefix: null, family };
  const prefixText = entry.slice(slash + 1).trim();
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  if (prefix > (version === 4 ? 32 : 128)) return null;
  return { address, prefix, family };
}

/** One hop of X-Forwarded-For as an address (`a.b.c.d`, `a.b.c.d:port`, an IPv6 one, `[v6]:port`), or null. */
function hopAddress(hop: string): string | null {
  let text = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else {
    const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(text);
    if (withPort) text = withPort[1]!;
  }
  const address = normalAddress(text.toLowerCase());
  return isIP(address) === 0 ? null : address;
}

/** The client addresses of a host whose trusted proxies are `trustedProxies` (entries as `parseProxyEntry`). */
export function clientAddresses(trustedProxies: readonly string[]): ClientAddresses {
  const trusted = new BlockList();
  for (const entry of trustedProxies) {
    const parsed = parseProxyEntry(entry);
    if (!parsed)
      throw new Error(`trustedProxies: "${entry}" is not an IP address or a range such as 10.0.0.0/8`);
    if (parsed.prefix === null) trusted.addAddress(parsed.address, parsed.family);
    else trusted.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  const none = trustedProxies.length === 0;

  function trusts(address: string): boolean {
    if (none) return false;
    const version = isIP(address);
    return version !== 0 && trusted.check(address, version === 4 ? 'ipv4' : 'ipv6');
  }

  return {
    trusts,
    of(req) {
      const peer = normalAddress(req.socket.remoteAddress);
      if (!trusts(peer)) return peer;
      // Node joins repeated X-Forwarded-For headers with ", ": the whole chain, nearest hop last.
      const header = req.headers['x-forwarded-for'];
      if (!header) return peer;
      const hops = (Array.isArray(header) ? header.join(',') : header).split(',');
      let client = peer;
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = hopAddress(hops[i]!);
        // What a trusted proxy wrote but is no address: the nearest proxy is all that is known.
        if (hop === null) return client;
        client = hop;
        if (!trusts(hop)) return hop;
      }
      return client;
    },
  };
}
