import { expect } from 'chai';
import { isPublicAddress } from '../../../src/services/outbound-address.ts';

// The SSRF rule for outbound requests made on someone else's word, on resolved addresses.

describe('outbound addresses', () => {
  it('refuses loopback, unspecified, private, link-local, mapped and translated addresses in every family', () => {
    for (const a of [
      '127.0.0.1', '127.0.0.2', '127.255.255.254', '0.0.0.0', '10.0.0.1', '100.64.0.1', '169.254.169.254', '172.16.0.1', '172.31.255.255',
      '192.168.1.1', '198.18.0.1', '224.0.0.1', '255.255.255.255',
      '::', '::1', '::127.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:8.8.8.8', '64:ff9b::7f00:1',
      '2002:7f00:1::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'ff02::1', '2001:db8::1',
    ]) expect(isPublicAddress(a), a).to.equal(false);
  });

  it('refuses what is not an address: names and bracketed literals are resolved by the caller first', () => {
    for (const a of ['localhost', 'LOCALHOST', '[::1]', '2130706433', '0x7f.0.0.1', '', 'example.com']) expect(isPublicAddress(a), a).to.equal(false);
  });

  it('allows public addresses of both families', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e']) expect(isPublicAddress(a), a).to.equal(true);
  });
});
