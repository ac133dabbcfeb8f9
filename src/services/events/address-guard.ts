import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { AppError } from '../../errors.ts';

// Webhook URLs are chosen by an admin, but a URL is not an address: a name that resolves to
// 127.0.0.1, 169.254.169.254 (a cloud's metadata service) or a private network would turn the
// sender into a way to reach what only the gateway can (SSRF). So the address is checked where it
// is used, after resolution at send time, and a name that later resolves elsewhere is refused then.

const notPublic = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) notPublic.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) notPublic.addSubnet(net, bits, 'ipv6');

/** Whether `ip` is an address on the public internet (an IPv4-mapped IPv6 address is judged as its IPv4). */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return !notPublic.check(ip, 'ipv4');
  if (family !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return isPublicAddress(mapped[1]!);
  return !notPublic.check(ip, 'ipv6');
}

/** Refuses what no endpoint may be: not https, credentials in the URL, a literal private address. */
export function checkEndpointUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('VALIDATION_FAILED', 'The URL is not a URL.', { errors: [{ path: 'url', message: 'not a URL' }] });
  }
  const refuse = (message: string) => {
    throw new AppError('VALIDATION_FAILED', `The URL ${message}.`, { errors: [{ path: 'url', message }] });
  };
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) refuse('must be https');
  if (url.username || url.password) refuse('may not hold credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) refuse('must name a public address');
  return url;
}

/** A resolver for the sender's connections that refuses any name resolving to an address not public. */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused || addresses.length === 0) {
      const e = Object.assign(new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, not a public address`), { code: 'EADDRNOTPUBLIC' });
      return callback(e, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};
