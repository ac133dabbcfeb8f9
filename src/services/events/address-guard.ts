import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { AppError } from '../../errors.ts';
import { isPublicAddress } from '../outbound-address.ts';

// Webhook URLs are chosen by an admin, but a URL is not an address: a name that resolves to
// 127.0.0.1, 169.254.169.254 (a cloud's metadata service) or a private network would turn the
// sender into a way to reach what only the gateway can (SSRF). So the address is checked where it
// is used, after resolution at send time, and a name that later resolves elsewhere is refused then.
// Which addresses are public is one rule for every outbound request (services/outbound-address.ts).

export { isPublicAddress };

/** The longest endpoint URL, as stored and sent (the parsed form, which can be far longer than the text given). */
export const MAX_URL_LENGTH = 2048;

/** Refuses what no endpoint may be: not https, credentials in the URL, port 0, a literal private address. */
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
  // Port 0 is no port: nothing listens there, and a connection to it fails on every attempt.
  if (url.port === '0') refuse('may not name port 0');
  if (url.href.length > MAX_URL_LENGTH) refuse(`is longer than ${MAX_URL_LENGTH} characters once normalized`);
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
      const message = `${hostname} resolves to ${refused?.address ?? 'nothing'}, not a public address`;
      const e = Object.assign(new Error(message), { code: 'EADDRNOTPUBLIC' });
      return callback(e, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};
