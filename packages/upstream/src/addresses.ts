/**
 * Which IP addresses the gateway refuses to connect to when it fetches a URL somebody else chose
 * (a client metadata document, an authorization server's metadata, an identity provider's token
 * endpoint): framework-free and without dependencies. Shared by `@gw/oauth` and
 * `@gw/upstream-auth` so that both refuse the same ranges.
 */
import { isIP, type LookupFunction } from 'node:net';

/** One resolved address of a host, as `dns.lookup(host, { all: true })` answers it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * What an IP address is, for the fetch guards:
 * - `public`: anything not listed below;
 * - `loopback`: 127/8, ::1;
 * - `private`: RFC 1918, CGNAT 100.64/10, unique local fc00::/7, site-local fec0::/10;
 * - `link_local`: 169.254/16, fe80::/10;
 * - `metadata`: cloud instance metadata (169.254.169.254, 169.254.170.2, fd00:ec2::254,
 *   100.100.100.200, 168.63.129.16);
 * - `unspecified`: 0/8, ::;
 * - `multicast`: 224/4, ff00::/8;
 * - `reserved`: the other special-use ranges of RFC 6890 (documentation, benchmarking, 240/4...);
 * - `invalid`: not an IP address.
 * IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 addresses are classified by their IPv4 part.
 */
export type AddressClass =
  'public' | 'loopback' | 'private' | 'link_local' | 'metadata' | 'unspecified' | 'multicast' | 'reserved' | 'invalid';

/** Cloud instance metadata addresses (AWS, ECS, GCP, Azure, Alibaba), refused even where private ones are allowed. */
const METADATA_ADDRESSES_V4 = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16']);

/** Host names that answer cloud instance metadata, refused by name before any lookup. */
export const METADATA_HOST_NAMES: ReadonlySet<string> = new Set([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
]);

/** IPv4 special-use ranges (RFC 6890): [first address, prefix length, class]. */
const SPECIAL_V4: readonly (readonly [string, number, AddressClass])[] = [
  ['0.0.0.0', 8, 'unspecified'], // "this network", unspecified
  ['10.0.0.0', 8, 'private'], // RFC 1918
  ['100.64.0.0', 10, 'private'], // shared address space, CGNAT (RFC 6598)
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'], // link-local, cloud instance metadata (169.254.169.254)
  ['172.16.0.0', 12, 'private'], // RFC 1918
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'], // RFC 1918
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'], // documentation
  ['203.0.113.0', 24, 'reserved'], // documentation
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // reserved, broadcast
];

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function classifyV4(value: number): AddressClass {
  const dotted = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
  if (METADATA_ADDRESSES_V4.has(dotted)) return 'metadata';
  for (const [base, prefix, kind] of SPECIAL_V4) {
    const start = ipv4Number(base);
    if (value >= start && value < start + 2 ** (32 - prefix)) return kind;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part included). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = ipv4Number(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

function classifyV6(groups: readonly number[]): AddressClass {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const embeddedV4 = (hi: number, lo: number) => classifyV4(hi * 65536 + lo);
  if (groups.slice(0, 7).every((g) => g === 0)) {
    if (g7 === 0) return 'unspecified'; // ::
    if (g7 === 1) return 'loopback'; // ::1
  }
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0))
    return embeddedV4(g6, g7); // IPv4-mapped and -compatible
  if (g0 === 0x64 && g1 === 0xff9b) return embeddedV4(g6, g7); // NAT64 (RFC 6052, 8215)
  if (g0 === 0x2002) return embeddedV4(g1, g2); // 6to4
  if (g0 === 0xfd00 && g1 === 0xec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254)
    return 'metadata'; // AWS instance metadata over IPv6
  if ((g0 & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // site-local fec0::/10 (deprecated)
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  if (g0 === 0x2001 && g1 === 0xdb8) return 'reserved'; // documentation
  if (g0 === 0x2001 && g1 < 0x200) return 'reserved'; // IETF protocol assignments, Teredo
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return 'reserved'; // discard-only
  return g0 === 0 ? 'reserved' : 'public'; // the rest of ::/16 (IPv4-translated and other embedded forms)
}

/** What `address` is (see {@link AddressClass}); a string that is not an IP address is `invalid`. */
export function classifyAddress(address: string): AddressClass {
  const family = isIP(typeof address === 'string' ? (address.split('%')[0] ?? '') : '');
  if (family === 4) return classifyV4(ipv4Number(address));
  if (family === 6) return classifyV6(ipv6Groups(address));
  return 'invalid';
}

/** Options of {@link isRefusedAddress}. */
export interface RefusedAddressOptions {
  /**
   * Accept loopback and private addresses (an internal identity provider or authorization
   * server). Link-local, metadata, unspecified, multicast, reserved and invalid addresses are
   * refused all the same. Default false: only public addresses are accepted.
   */
  allowPrivate?: boolean;
}

/**
 * Whether a fetch guard refuses to connect to `address`: everything but a public address by
 * default; with `allowPrivate`, everything but a public, loopback or private address.
 */
export function isRefusedAddress(address: string, options: RefusedAddressOptions = {}): boolean {
  const kind = classifyAddress(address);
  if (kind === 'public') return false;
  return !(options.allowPrivate === true && (kind === 'loopback' || kind === 'private'));
}

/**
 * A `lookup` for `http.request` that answers only `addresses` (already checked): the connection
 * is made to exactly the addresses checked, with no second resolution that could be rebound.
 */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    const wanted =
      lookupOptions.family === 4 || lookupOptions.family === 6
        ? addresses.filter((a) => a.family === lookupOptions.family)
        : addresses;
    const answer = wanted.length > 0 ? wanted : addresses;
    if (lookupOptions.all)
      callback(
        null,
        answer.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, answer[0]!.address, answer[0]!.family);
  };
}
