import { classifyAddress, isRefusedAddress } from '../src';

describe('classifyAddress and isRefusedAddress', () => {
  it.each([
    ['10.0.0.5', 'private'],
    ['172.16.3.4', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
    ['not-an-ip', 'invalid'],
  ])('classifies %s as %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('allows loopback and private addresses only when asked, link-local and metadata never', () => {
    expect(isRefusedAddress('8.8.8.8')).toBe(false);
    expect(isRefusedAddress('10.1.2.3')).toBe(true);
    expect(isRefusedAddress('127.0.0.1')).toBe(true);
    expect(isRefusedAddress('10.1.2.3', { allowPrivate: true })).toBe(false);
    expect(isRefusedAddress('127.0.0.1', { allowPrivate: true })).toBe(false);
    for (const address of ['169.254.169.254', 'fe80::1', 'fd00:ec2::254', '0.0.0.0', 'ff02::1', 'x'])
      expect(isRefusedAddress(address, { allowPrivate: true })).toBe(true);
  });
});
