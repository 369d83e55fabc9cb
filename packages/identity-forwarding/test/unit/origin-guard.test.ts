import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isLoopbackHostname,
  mcpOriginGuard,
  normalizeOrigin,
  OriginNotAllowedError,
  type McpOriginGuardOptions,
} from '../../src/express/origin-guard';

/**
 * What the guard decides on a request with exactly `rawHeaders` (as node:http gives them: `Host`
 * and `Origin` in `headers` from their first line): `undefined` when passed on, else the error.
 */
function decide(options: McpOriginGuardOptions | undefined, rawHeaders: string[]): unknown {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if ((name === 'host' || name === 'origin') && headers[name] === undefined)
      headers[name] = rawHeaders[i + 1] as string;
  }
  const req = { rawHeaders, headers } as unknown as IncomingMessage;
  const calls: unknown[][] = [];
  mcpOriginGuard(options)(req, {} as ServerResponse, (...args: unknown[]) => calls.push(args));
  expect(calls).toHaveLength(1);
  expect(calls[0]?.length).toBeLessThanOrEqual(1);
  return calls[0]?.[0];
}

const refusal = (message: string) =>
  expect.objectContaining({ code: 'origin_not_allowed', status: 403, type: 'permission_error', message });
const NO_HOST = 'The request must name the gateway in exactly one Host header.';
const LOOPBACK_HOST =
  'The Host header does not name this gateway: without PUBLIC_BASE_URL, only a loopback name or address does.';
const PUBLIC_HOST = 'The Host header does not name this gateway.';
const ORIGIN = "Pages of this origin may not call the gateway's MCP servers.";

describe('MCP origin guard without a public origin (the gateway listens on loopback)', () => {
  const options = { allowedOrigins: ['https://App.Example.com:443', ' http://localhost:3000 '] };

  it.each([
    '127.0.0.1:8787',
    'localhost:9999',
    'LOCALHOST',
    'localhost',
    '127.0.0.2:80',
    '127.255.255.254',
    '[::1]:8787',
    '[0:0:0:0:0:0:0:1]',
    '[::1]',
  ])('forwards the loopback Host %s', (host) => {
    expect(decide(options, ['Host', host])).toBeUndefined();
    expect(decide(undefined, ['host', host])).toBeUndefined();
  });

  it.each([
    ['a public name', 'evil.example.com'],
    ['a look-alike of 127.0.0.1', '127.0.0.1.evil.com'],
    ['a look-alike of localhost', 'localhost.evil'],
    ['localhost with a trailing dot', 'localhost.'],
    ['a private address', '192.168.1.10:8787'],
    ['an address with 127 elsewhere', '10.127.0.1'],
    ['the unspecified address', '0.0.0.0:8787'],
    ['an IPv6 address that is not loopback', '[::2]'],
    ['an IPv4-mapped loopback in IPv6', '[::ffff:127.0.0.1]'],
    ['an invalid IPv6 address', '[1:2]'],
    ['a port out of range', '127.0.0.1:99999'],
    ['user information before the host', 'evil.com@127.0.0.1'],
    ['a path', '127.0.0.1/x'],
    ['an empty value', ''],
  ])('refuses a Host that is not the gateway: %s', (_what, host) => {
    expect(decide(options, ['Host', host])).toEqual(refusal(LOOPBACK_HOST));
  });

  it('refuses a request with two Host headers, or none', () => {
    expect(decide(options, ['Host', 'localhost', 'Host', 'evil.example.com'])).toEqual(refusal(NO_HOST));
    expect(decide(options, ['Host', 'localhost', 'HOST', 'localhost'])).toEqual(refusal(NO_HOST));
    expect(decide(options, [])).toEqual(refusal(NO_HOST));
    expect(decide(options, ['X-Host', 'localhost'])).toEqual(refusal(NO_HOST));
    // A header whose value is "Host" is not a Host header.
    expect(decide(options, ['Host', 'localhost', 'X-Name', 'Host'])).toBeUndefined();
  });

  it.each([
    ['its own origin', 'http://127.0.0.1:8787', '127.0.0.1:8787'],
    ['its own origin, default port written', 'http://localhost:80', 'localhost'],
    ['its own origin in capitals', 'HTTP://LocalHost:8787', 'localhost:8787'],
    ['its own origin, IPv6', 'http://[::1]:8787', '[::1]:8787'],
    ['a listed origin', 'http://localhost:3000', '127.0.0.1:8787'],
    ['a listed origin, normalised', 'https://app.example.com', '127.0.0.1:8787'],
    ['a listed origin, with its default port', 'https://APP.example.com:443', '127.0.0.1:8787'],
  ])('forwards an Origin that is %s', (_what, origin, host) => {
    expect(decide(options, ['Host', host, 'Origin', origin])).toBeUndefined();
    expect(decide(options, ['Origin', origin, 'host', host])).toBeUndefined();
  });

  it('forwards a request without Origin, or with one only as a header value', () => {
    expect(decide(options, ['Host', '127.0.0.1:8787'])).toBeUndefined();
    expect(decide(options, ['Host', '127.0.0.1:8787', 'X-Name', 'Origin'])).toBeUndefined();
  });

  it.each([
    ['a page of the attacker', 'http://evil.example.com'],
    ['a look-alike of the gateway', 'http://127.0.0.1.evil.com'],
    ['the gateway on another scheme', 'https://127.0.0.1:8787'],
    ['the gateway on another port', 'http://127.0.0.1:1'],
    ['another loopback name than Host', 'http://localhost:8787'],
    ['a listed origin on another scheme', 'http://app.example.com'],
    ['a listed origin on another port', 'https://app.example.com:8443'],
    ['a file page', 'file://'],
    ['a websocket scheme', 'ws://127.0.0.1:8787'],
    ['an opaque origin', 'null'],
    ['an origin with a path', 'http://127.0.0.1:8787/'],
    ['an empty value', ''],
  ])('refuses an Origin that is %s', (_what, origin) => {
    expect(decide(options, ['Host', '127.0.0.1:8787', 'Origin', origin])).toEqual(refusal(ORIGIN));
  });

  it('refuses two Origin headers even when each would pass', () => {
    const own = 'http://127.0.0.1:8787';
    expect(decide(options, ['Host', '127.0.0.1:8787', 'Origin', own, 'origin', own])).toEqual(refusal(ORIGIN));
  });

  it('makes errors of its own class', () => {
    const error = decide(options, ['Host', 'evil.example.com']);
    expect(error).toBeInstanceOf(OriginNotAllowedError);
  });
});

describe('MCP origin guard with a public origin', () => {
  const options = { publicOrigin: 'https://Gateway.example.com:443', allowedOrigins: ['https://app.example.com'] };

  it.each(['gateway.example.com', 'Gateway.Example.COM:443'])('forwards Host %s', (host) => {
    expect(decide(options, ['Host', host, 'Origin', 'https://gateway.example.com'])).toBeUndefined();
    expect(decide(options, ['Host', host, 'Origin', 'https://app.example.com'])).toBeUndefined();
    expect(decide(options, ['Host', host])).toBeUndefined();
  });

  it.each([
    ['a loopback address', '127.0.0.1:8787'],
    ['localhost', 'localhost'],
    ['the public name on another port', 'gateway.example.com:8443'],
    ['the public name on port 80', 'gateway.example.com:80'],
    ['a sub-domain', 'a.gateway.example.com'],
    ['a suffix look-alike', 'gateway.example.com.evil.com'],
    ['not a host', 'gateway.example.com/x'],
  ])('refuses Host %s', (_what, host) => {
    expect(decide(options, ['Host', host])).toEqual(refusal(PUBLIC_HOST));
  });

  it('refuses the public origin over http, and the origin of a loopback Host', () => {
    expect(decide(options, ['Host', 'gateway.example.com', 'Origin', 'http://gateway.example.com'])).toEqual(
      refusal(ORIGIN),
    );
    expect(decide(options, ['Host', 'gateway.example.com', 'Origin', 'http://localhost'])).toEqual(refusal(ORIGIN));
  });

  it('reads default ports by the scheme of the public origin', () => {
    const http = { publicOrigin: 'http://gw.example:8080' };
    expect(decide(http, ['Host', 'gw.example:8080', 'Origin', 'http://gw.example:8080'])).toBeUndefined();
    expect(decide(http, ['Host', 'gw.example'])).toEqual(refusal(PUBLIC_HOST));
    const plain = { publicOrigin: 'http://gw.example' };
    expect(decide(plain, ['Host', 'gw.example:80', 'Origin', 'http://gw.example:80'])).toBeUndefined();
    expect(decide(plain, ['Host', 'gw.example:443'])).toEqual(refusal(PUBLIC_HOST));
  });
});

describe('mcpOriginGuard options', () => {
  it.each([
    [{ publicOrigin: 'https://gateway.example.com/path' }, /publicOrigin must be an http\(s\) origin/],
    [{ publicOrigin: 'ftp://gateway.example.com' }, /publicOrigin must be an http\(s\) origin/],
    [{ allowedOrigins: ['app.example.com'] }, /allowedOrigins: "app.example.com" is not an origin/],
    [{ allowedOrigins: 'https://app.example.com' }, /allowedOrigins must be a list/],
    [{ allowedOrigin: [] }, /has no option "allowedOrigin"/],
  ])('refuses %j at the factory', (options, message) => {
    expect(() => mcpOriginGuard(options as McpOriginGuardOptions)).toThrow(message);
  });

  it('says what to write', () => {
    const message = (options: unknown) => {
      try {
        mcpOriginGuard(options as McpOriginGuardOptions);
      } catch (error) {
        expect(error).toBeInstanceOf(TypeError);
        return (error as Error).message;
      }
      return undefined;
    };
    for (const options of [null, 'https://a.example', 5])
      expect(message(options)).toBe('mcpOriginGuard takes { publicOrigin?, allowedOrigins? }.');
    expect(message({ [`x${'y'.repeat(60)}`]: 1 })).toBe(
      `mcpOriginGuard has no option "x${'y'.repeat(39)}"; it takes publicOrigin and allowedOrigins.`,
    );
    const looksLikeOne = { toString: () => 'https://gateway.example.com' };
    for (const publicOrigin of [5, '', 'gateway.example.com', 'https://a.example/', looksLikeOne])
      expect(message({ publicOrigin })).toBe(
        'publicOrigin must be an http(s) origin such as "https://gateway.example.com".',
      );
    expect(message({ allowedOrigins: { 0: 'https://a.example' } })).toBe(
      'allowedOrigins must be a list of origins such as ["https://app.example.com"].',
    );
    expect(message({ allowedOrigins: [looksLikeOne] })).toBe(
      'allowedOrigins: "https://gateway.example.com" is not an origin; write scheme://host[:port] such as "https://app.example.com".',
    );
    expect(message({ allowedOrigins: ['https://a.example', 5] })).toBe(
      'allowedOrigins: "5" is not an origin; write scheme://host[:port] such as "https://app.example.com".',
    );
    expect(message({ allowedOrigins: [`https://a.example/${'p'.repeat(200)}`] })).toBe(
      `allowedOrigins: "${`https://a.example/${'p'.repeat(200)}`.slice(0, 100)}" is not an origin; write scheme://host[:port] such as "https://app.example.com".`,
    );
    // An unset option is the default.
    expect(message({ publicOrigin: undefined, allowedOrigins: undefined })).toBeUndefined();
    expect(message(undefined)).toBeUndefined();
  });

  it('refuses to be mounted without being called', () => {
    const req = { method: 'POST', socket: {}, headers: {} };
    expect(() => mcpOriginGuard(req as McpOriginGuardOptions)).toThrow(/mcpOriginGuard is a factory/);
  });

  it('normalises origins as browsers compare them', () => {
    expect(normalizeOrigin('HTTPS://App.Example.com:443')).toBe('https://app.example.com');
    expect(normalizeOrigin('http://a.example:80')).toBe('http://a.example');
    expect(normalizeOrigin('http://a.example:8080')).toBe('http://a.example:8080');
    expect(normalizeOrigin('http://[0:0::1]:80')).toBe('http://[::1]');
    expect(normalizeOrigin('http://127.1')).toBe('http://127.0.0.1');
    expect(normalizeOrigin('http://a.example/')).toBeUndefined();
    expect(normalizeOrigin('http://user@a.example')).toBeUndefined();
    expect(normalizeOrigin('null')).toBeUndefined();
    expect(normalizeOrigin('ftp://a.example')).toBeUndefined();
    expect(normalizeOrigin('ws://a.example')).toBeUndefined();
    expect(normalizeOrigin('http://[x]')).toBeUndefined();
    expect(normalizeOrigin('http://a.example:99999')).toBeUndefined();
    expect(normalizeOrigin('http://a_b.example')).toBeUndefined();
    expect(normalizeOrigin('http://a.example?x')).toBeUndefined();
    expect(normalizeOrigin(' http://a.example')).toBeUndefined();
  });

  it('knows the loopback host names', () => {
    for (const name of ['localhost', '[::1]', '127.0.0.1', '127.255.255.255', '127.0.0.0'])
      expect(isLoopbackHostname(name)).toBe(true);
    for (const name of ['LOCALHOST.', 'localhost.', '::1', '[::2]', '128.0.0.1', '1.127.0.0', '127.example', '127.1'])
      expect(isLoopbackHostname(name)).toBe(false);
  });
});

describe('MCP origin guard over many requests', () => {
  /** One guard deciding request after request, as the gateway mounts it. */
  function decider(options?: McpOriginGuardOptions) {
    const guard = mcpOriginGuard(options);
    return (host: string, origin?: string): unknown => {
      const rawHeaders = origin === undefined ? ['Host', host] : ['Host', host, 'Origin', origin];
      const req = { rawHeaders, headers: { host, origin } } as unknown as IncomingMessage;
      let decided: unknown = 'not called';
      guard(req, {} as ServerResponse, (error?: unknown) => (decided = error));
      return decided;
    };
  }

  it('reads each Host anew when it changes, loopback and public alike', () => {
    const loopback = decider();
    expect(loopback('127.0.0.1:8787')).toBeUndefined();
    expect(loopback('evil.example.com')).toEqual(refusal(LOOPBACK_HOST));
    expect(loopback('evil.example.com')).toEqual(refusal(LOOPBACK_HOST));
    expect(loopback('localhost:9999', 'http://localhost:9999')).toBeUndefined();
    // The origin of the Host before is not this request's origin.
    expect(loopback('127.0.0.1:8787', 'http://localhost:9999')).toEqual(refusal(ORIGIN));
    expect(loopback('127.0.0.1:8787', 'http://127.0.0.1:8787')).toBeUndefined();

    const publicGuard = decider({ publicOrigin: 'https://gateway.example.com' });
    expect(publicGuard('gateway.example.com')).toBeUndefined();
    expect(publicGuard('localhost')).toEqual(refusal(PUBLIC_HOST));
    expect(publicGuard('gateway.example.com:443', 'https://gateway.example.com')).toBeUndefined();
  });
});
