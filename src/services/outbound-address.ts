import { BlockList, isIP } from 'node:net';

// Where a request the gateway makes on someone else's word may go: a client's metadata document
// URL, a webhook URL. Whoever writes the URL chooses where the gateway connects, so a name or
// literal that leads to the gateway's own machine or the networks behind it (SSRF: the admin port
// on loopback, a cloud metadata service on link-local, a database on a private range) is refused.
// The rule takes a resolved address, never a name: callers resolve first, check every address,
// then connect to the one they checked, so a name cannot be rebound between check and connect.

const IPV4_SPECIAL: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network", and the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
];

const IPV6_SPECIAL: readonly [string, number][] = [
  ['::', 96], // unspecified, loopback and the old IPv4-compatible form (::127.0.0.1)
  ['::ffff:0:0', 96], // IPv4-mapped: whatever IPv4 address it carries, the answer is no
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT): behind a translator it reaches the IPv4 address it carries
  ['64:ff9b::', 96], // NAT64: reaches any IPv4 address, private ones included
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['100:0:0:1::', 64], // the dummy prefix (IANA special-purpose registry): not globally reachable
  ['2001::', 23], // protocol assignments (Teredo among them)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds an IPv4 address
  ['3fff::', 20], // documentation, the second prefix (RFC 9637)
  ['5f00::', 16], // segment routing (SRv6) SIDs (RFC 9602): inside one operator's network only
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // the old site-local
  ['ff00::', 8], // multicast
];

// Two lists: one BlockList holding both families checks an IPv4 address against the IPv4-mapped
// rule too, and would refuse every IPv4 address.
const specialV4 = new BlockList();
for (const [net, bits] of IPV4_SPECIAL) specialV4.addSubnet(net, bits, 'ipv4');
const specialV6 = new BlockList();
for (const [net, bits] of IPV6_SPECIAL) specialV6.addSubnet(net, bits, 'ipv6');

/**
 * Whether an outbound request may connect to `address`, a resolved IP address as `dns.lookup`
 * answers it (no brackets). Anything that is not an address, or carries a zone, is refused.
 */
export function isPublicAddress(address: string): boolean {
  if (address.includes('%')) return false;
  const family = isIP(address);
  if (family === 0) return false;
  return family === 4 ? !specialV4.check(address, 'ipv4') : !specialV6.check(address, 'ipv6');
}
