import { createHash } from 'node:crypto';
import aws4 from 'aws4';
import { resolveCustomHost, isAllowedBedrockHost } from '../../src/core/custom-host';
import { resolveIntegration } from '../../src/core/integration';
import { Secret } from '../../src/core/secret';
import {
  BEDROCK_SIGNING_SERVICE,
  IntegrationSigner,
  canonicalPath,
  canonicalQuery,
  parseQuery,
  type RequestToSign,
} from '../../src/core/signer';

const kb = resolveIntegration({
  slug: 'kb',
  accessKeyId: 'AKIATESTGATEWAY0001',
  secretAccessKey: 'test/secret+key/for/the/gateway/0123456789',
  region: 'eu-west-1',
  allowedHosts: ['http://127.0.0.1:9100', `https://${'a'.repeat(504)}`, `https://${'b'.repeat(505)}`],
} as never);
const MESSAGE =
  "The custom host is not allowed: use an https Bedrock agent endpoint such as bedrock-agent-runtime.us-east-1.amazonaws.com, or one of the integration's allowedHosts.";
const refusal = (host: string) => {
  try {
    resolveCustomHost(host, kb);
  } catch (error) {
    return error as { code?: string; message: string };
  }
  return undefined;
};
const target = (host: string) => {
  const t = resolveCustomHost(host, kb);
  return [t.origin.href, t.region];
};

describe('resolveCustomHost', () => {
  it('signs a Bedrock agent host for the region in its name', () => {
    expect(target('bedrock-agent-runtime.us-east-1.amazonaws.com')).toEqual([
      'https://bedrock-agent-runtime.us-east-1.amazonaws.com/',
      'us-east-1',
    ]);
    expect(target('https://bedrock-agent.eu-central-1.amazonaws.com')).toEqual([
      'https://bedrock-agent.eu-central-1.amazonaws.com/',
      'eu-central-1',
    ]);
    expect(target('HTTPS://bedrock-agent-runtime-fips.us-gov-west-1.amazonaws.com:443/')).toEqual([
      'https://bedrock-agent-runtime-fips.us-gov-west-1.amazonaws.com/',
      'us-gov-west-1',
    ]);
    expect(target('  bedrock-agent.cn-north-1.amazonaws.com.cn\t')).toEqual([
      'https://bedrock-agent.cn-north-1.amazonaws.com.cn/',
      'cn-north-1',
    ]);
    expect(target('bedrock-agent.us-isob-east-12.amazonaws.com')[1]).toBe('us-isob-east-12');
    expect(target('bedrock-agent.us-iso-east-1.amazonaws.com')[1]).toBe('us-iso-east-1');
  });
  it('signs an allowed origin exactly, for the integration region', () => {
    expect(target('http://127.0.0.1:9100')).toEqual(['http://127.0.0.1:9100/', 'eu-west-1']);
    expect(target('http://127.0.0.1:9100/')).toEqual(['http://127.0.0.1:9100/', 'eu-west-1']);
    expect(refusal('127.0.0.1:9100')?.message).toBe(MESSAGE); // https, not the allowed origin
    expect(refusal('http://127.0.0.1:9101')?.message).toBe(MESSAGE);
  });
  it.each([
    ['another host', 'evil.example'],
    ['http', 'http://bedrock-agent-runtime.us-east-1.amazonaws.com'],
    ['another port', 'bedrock-agent-runtime.us-east-1.amazonaws.com:8443'],
    ['another service', 'bedrock-runtime.us-east-1.amazonaws.com'],
    ['a suffix', 'bedrock-agent-runtime.us-east-1.amazonaws.com.evil.example'],
    ['a prefix', 'xbedrock-agent-runtime.us-east-1.amazonaws.com'],
    ['a bad region', 'bedrock-agent-runtime.useast1.amazonaws.com'],
    ['a long region number', 'bedrock-agent-runtime.us-east-123.amazonaws.com'],
    ['a path', 'bedrock-agent-runtime.us-east-1.amazonaws.com/x'],
    ['a path on an allowed origin', 'http://127.0.0.1:9100/x'],
    ['a query', 'bedrock-agent-runtime.us-east-1.amazonaws.com?a=1'],
    ['an empty query', 'bedrock-agent-runtime.us-east-1.amazonaws.com?'],
    ['an empty fragment', 'https://bedrock-agent-runtime.us-east-1.amazonaws.com#'],
    ['empty userinfo', 'https://@bedrock-agent-runtime.us-east-1.amazonaws.com'],
    ['userinfo', 'https://u:p@bedrock-agent-runtime.us-east-1.amazonaws.com'],
    ['an empty text', '   '],
    ['a tab inside', 'bedrock-agent-runtime.us-east-1.amazon\taws.com'],
    ['a newline inside', 'bedrock-agent-runtime.us-east-\n1.amazonaws.com'],
    ['a space inside', 'bedrock-agent-runtime.us-east-1 .amazonaws.com'],
    ['a backslash', 'https://bedrock-agent-runtime.us-east-1.amazonaws.com\\'],
    ['text that does not parse', 'https://'],
    ['another scheme', 'ftp://bedrock-agent-runtime.us-east-1.amazonaws.com'],
  ])('refuses %s', (_what, host) => {
    expect(refusal(host)).toMatchObject({ code: 'custom_host_not_allowed', message: MESSAGE });
  });
  it('accepts 512 characters and refuses 513, even for an allowed origin', () => {
    expect(target(`https://${'a'.repeat(504)}`)[1]).toBe('eu-west-1');
    expect(refusal(`https://${'b'.repeat(505)}`)?.message).toBe(MESSAGE);
  });
  it('isAllowedBedrockHost needs https on the default port', () => {
    expect(isAllowedBedrockHost(new URL('https://bedrock-agent.us-east-1.amazonaws.com'))).toBe(true);
    expect(isAllowedBedrockHost(new URL('http://bedrock-agent.us-east-1.amazonaws.com'))).toBe(false);
    expect(isAllowedBedrockHost(new URL('https://bedrock-agent.us-east-1.amazonaws.com:444'))).toBe(false);
    expect(isAllowedBedrockHost(new URL('https://example.com'))).toBe(false);
  });
});

describe('parseQuery', () => {
  const plain = (query: string) => ({ ...parseQuery(query) });
  it('decodes pairs, skipping empty ones', () => {
    expect(plain('a=1&&b=2&')).toEqual({ a: '1', b: '2' });
    expect(plain('&')).toEqual({});
    expect(plain('')).toEqual({});
    expect(plain('flag&x=')).toEqual({ flag: '', x: '' });
    expect(plain('k=v=w')).toEqual({ k: 'v=w' });
    expect(plain('%41%3D=%42%20')).toEqual({ 'A=': 'B ' });
    expect(plain('a=%E0%A4%A&%ZZ=1')).toEqual({ a: '%E0%A4%A', '%ZZ': '1' });
  });
  it('keeps every value of a repeated parameter, in order', () => {
    expect(plain('a=1&a=2&a=3&b=x&a=4')).toEqual({ a: ['1', '2', '3', '4'], b: 'x' });
  });
  it('has no prototype, and refuses __proto__ however it is written', () => {
    const params = parseQuery('constructor=1&toString=2&hasOwnProperty=3');
    expect(Object.getPrototypeOf(params)).toBeNull();
    expect({ ...params }).toEqual({ constructor: '1', toString: '2', hasOwnProperty: '3' });
    for (const query of ['__proto__=1', 'a=1&__proto__', '%5F%5Fproto%5F%5F=x'])
      expect(() => parseQuery(query)).toThrow(
        expect.objectContaining({
          code: 'unsupported_query_parameter',
          message: 'A query parameter may not be named "__proto__".',
        }),
      );
  });
});

describe('IntegrationSigner', () => {
  // AWS's published SigV4 test suite (service "service", us-east-1, 2015-08-30T12:36:00Z).
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: new Secret('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'),
    sessionToken: undefined,
  };
  const sessionToken =
    'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';
  const date = new Date('2015-08-30T12:36:00Z');
  const sign = (signer: IntegrationSigner, extra: Partial<Parameters<IntegrationSigner['sign']>[0]> = {}) =>
    signer.sign(
      {
        method: 'GET',
        origin: new URL('https://example.amazonaws.com'),
        path: '/',
        query: '',
        headers: {},
        body: Buffer.from(''),
        ...extra,
      },
      'us-east-1',
      date,
    );
  const auth = (signedHeaders: string, signature: string) =>
    `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=${signedHeaders}, Signature=${signature}`;

  it('matches the published vectors', async () => {
    const signer = new IntegrationSigner(credentials, 'service');
    const vanilla = await sign(signer);
    expect(vanilla.authorization).toBe(
      auth('host;x-amz-date', '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'),
    );
    expect(vanilla.host).toBe('example.amazonaws.com');
    expect(vanilla['x-amz-date']).toBe('20150830T123600Z');
    expect(vanilla['x-amz-security-token']).toBeUndefined();
    expect((await sign(signer, { query: 'Param2=value2&Param1=value1' })).authorization).toBe(
      auth('host;x-amz-date', 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500'),
    );
    expect((await sign(signer, { path: '/\u1234' })).authorization).toBe(
      auth('host;x-amz-date', '8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85'),
    );
    const form = await sign(signer, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from('Param1=value1'),
    });
    expect(form.authorization).toBe(
      auth('content-type;host;x-amz-date', 'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a'),
    );
    expect(form['content-type']).toBe('application/x-www-form-urlencoded');
  });
  it('adds the session token', async () => {
    const signer = new IntegrationSigner({ ...credentials, sessionToken: new Secret(sessionToken) }, 'service');
    const headers = await sign(signer, { method: 'POST' });
    expect(headers.authorization).toBe(
      auth('host;x-amz-date;x-amz-security-token', '85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead'),
    );
    expect(headers['x-amz-security-token']).toBe(sessionToken);
  });
  it('signs the host with its port, as bedrock by default, without a payload checksum header', async () => {
    expect(BEDROCK_SIGNING_SERVICE).toBe('bedrock');
    const signer = new IntegrationSigner(credentials);
    const headers = await sign(signer, { origin: new URL('http://127.0.0.1:9100') });
    expect(headers.host).toBe('127.0.0.1:9100');
    expect(headers.authorization).toContain('/us-east-1/bedrock/aws4_request');
    expect(headers['x-amz-content-sha256']).toBeUndefined();
    const other = await sign(new IntegrationSigner(credentials), { origin: new URL('http://127.0.0.1:9101') });
    expect(other.authorization).not.toBe(headers.authorization);
  });
  it('signs for the region given, at the current time by default', async () => {
    const signer = new IntegrationSigner(credentials);
    const headers = await signer.sign(
      {
        method: 'GET',
        origin: new URL('https://h.example'),
        path: '/',
        query: '',
        headers: {},
        body: new Uint8Array(),
      },
      'eu-west-3',
    );
    expect(headers.authorization).toContain('/eu-west-3/bedrock/aws4_request');
    const today = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    expect(headers['x-amz-date']?.slice(0, 8)).toBe(today);
  });
});

describe('canonicalPath', () => {
  it.each([
    ['/', '/'],
    ['', ''],
    ['/a/b', '/a/b'],
    ['/a/b/', '/a/b/'],
    ['a/b', 'a/b'],
    ['/a//b///c', '/a/b/c'],
    ['/a/./b/.', '/a/b'],
    ['/a/../b', '/b'],
    ['/a/b/../../..', '/'],
    ['/../a', '/a'],
    ['/./', '/'],
    ['//', '/'],
    ['/a/b/../', '/a/'],
    ['/example space/', '/example%20space/'],
    ['/a%20b/c%2Fd', '/a%2520b/c%252Fd'],
    ["/!'()*", '/%21%27%28%29%2A'],
    ['/\u1234', '/%E1%88%B4'],
    ['/-_.~', '/-_.~'],
    // Dot segments at the end or the start, alone: resolved, never taken as plain paths.
    ['/a/.', '/a'],
    ['/a/b/..', '/a'],
    ['./a', 'a'],
    ['../a', 'a'],
    ['.', ''],
    ['/a.b/.c/..d', '/a.b/.c/..d'],
    [
      '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
      '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%253A0/invoke',
    ],
  ])('%j is signed as %j', (path, expected) => {
    expect(canonicalPath(path)).toBe(expected);
  });
});

describe('canonicalQuery', () => {
  const query = (params: Record<string, string | string[]>) =>
    canonicalQuery(Object.assign(Object.create(null), params));
  it('encodes names and values the RFC 3986 way, sorted by encoded name, then by value', () => {
    expect(query({})).toBe('');
    expect(query({ b: '2', a: '1', B: '3', _: '4' })).toBe('B=3&_=4&a=1&b=2');
    expect(query({ "n!'()*": "v!'()*" })).toBe('n%21%27%28%29%2A=v%21%27%28%29%2A');
    expect(query({ 'a b': 'c d/e', '-_.~': '\u1234' })).toBe('-_.~=%E1%88%B4&a%20b=c%20d%2Fe');
    expect(query({ a: ['3', '1', '2'], b: '' })).toBe('a=1&a=2&a=3&b=');
  });
  it('leaves out a parameter without values and the signature itself, whatever its case', () => {
    expect(query({ a: [], b: '1' })).toBe('b=1');
    expect(query({ a: '1', 'X-Amz-Signature': 's', 'x-amz-signature': 't', 'X-AMZ-SIGNATURE': 'u' })).toBe('a=1');
    expect(query({ 'x-amz-signaturex': 's' })).toBe('x-amz-signaturex=s');
  });
});

describe('IntegrationSigner canonicalisation', () => {
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: new Secret('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'),
    sessionToken: undefined,
  };
  const date = new Date('2015-08-30T12:36:00Z');
  const request = (extra: Partial<RequestToSign> = {}): RequestToSign => ({
    method: 'GET',
    origin: new URL('https://example.amazonaws.com'),
    path: '/',
    query: '',
    headers: {},
    body: Buffer.from(''),
    ...extra,
  });
  const signed = (extra: Partial<RequestToSign> = {}, signer = new IntegrationSigner(credentials, 'service')) =>
    signer.signNow(request(extra), 'us-east-1', date);
  const authorization = (extra: Partial<RequestToSign> = {}) => signed(extra).authorization;
  const signedHeaders = (extra: Partial<RequestToSign> = {}) =>
    /SignedHeaders=([^,]*),/.exec(authorization(extra) ?? '')?.[1];
  const byAws4 = (extra: Partial<RequestToSign>) => {
    const r = request(extra);
    const query = r.query === '' ? '' : `?${r.query}`;
    const result = aws4.sign(
      {
        host: r.origin.host,
        method: r.method,
        path: `${r.path}${query}`,
        service: 'service',
        region: 'us-east-1',
        headers: { ...r.headers, 'X-Amz-Date': '20150830T123600Z' },
        body: r.body.length > 0 ? Buffer.from(r.body) : undefined,
      },
      { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey.reveal() },
    ) as { headers: Record<string, string> };
    return result.headers.Authorization;
  };

  it.each([
    ['/a/./b/../c//d/', ''],
    ['/x%20y/%E1%88%B4', ''],
    ["/!'()*", ''],
    ['/', "b=2&a=1&a=0&c!=(x)*&d=%2F%20'&e"],
    ['/q', 'Action=ListUsers&Version=2010-05-08&flag'],
    ['/q', 'z=%41&y=2&y=1&y=%2A'],
  ])('signs path %j and query %j as aws4 does', (path, query) => {
    const extra = {
      path,
      query,
      method: 'POST',
      body: Buffer.from('{"a":1}'),
      headers: { 'content-type': 'x/y', 'content-length': '7' },
    };
    expect(authorization(extra)).toBe(byAws4(extra));
  });
  it('signs a text body as its UTF-8 bytes, as aws4 signs those bytes', () => {
    const text = '{"a":"é€ \u{1F600}"}';
    const extra = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
    };
    expect(authorization({ ...extra, body: text })).toBe(authorization({ ...extra, body: Buffer.from(text) }));
    expect(authorization({ ...extra, body: text })).toBe(byAws4({ ...extra, body: Buffer.from(text) }));
    expect(authorization({ ...extra, body: text })).not.toBe(
      authorization({ ...extra, body: Buffer.from(text, 'latin1') }),
    );
  });
  it('matches more published vectors: unreserved query characters, a space in the path, relative paths', () => {
    const unreserved = '-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    expect(authorization({ query: `${unreserved}=${unreserved}` })).toBe(
      byAws4({ query: `${unreserved}=${unreserved}` }),
    );
    expect(authorization({ path: '/example/..' })).toBe(authorization());
    expect(authorization({ path: '/./' })).toBe(authorization());
    expect(authorization({ path: '//' })).toBe(authorization());
    expect(authorization({ path: '/example/../' })).toBe(authorization());
  });
  it('replaces the authorization, x-amz-date and date headers given, whatever their case', () => {
    const headers = signed({
      headers: { Authorization: 'old', 'X-Amz-Date': '19990101T000000Z', DATE: 'yesterday', 'X-Other': 'kept' },
    });
    expect(Object.keys(headers).sort()).toEqual(['X-Other', 'authorization', 'host', 'x-amz-date']);
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.authorization).toBe(authorization({ headers: { 'X-Other': 'kept' } }));
  });
  it('adds a session token header only when there is one', () => {
    expect(Object.keys(signed()).sort()).toEqual(['authorization', 'host', 'x-amz-date']);
    const empty = new IntegrationSigner({ ...credentials, sessionToken: new Secret('') }, 'service');
    expect(Object.keys(signed({}, empty)).sort()).toEqual(['authorization', 'host', 'x-amz-date']);
    expect(signed({}, empty).authorization).toBe(authorization());
  });
  it('leaves out the headers AWS does not sign, proxy-* and sec-*, and signs the others', () => {
    const unsigned = {
      'User-Agent': 'sdk',
      'proxy-authorization': 'Basic x',
      'Sec-Fetch-Mode': 'cors',
      'X-Amzn-Trace-Id': 'Root=1',
      connection: 'keep-alive',
      Expect: '100-continue',
      'transfer-encoding': 'chunked',
    };
    expect(authorization({ headers: unsigned })).toBe(authorization());
    expect(signedHeaders({ headers: { 'x-proxy-': 'a', 'x-sec-': 'b', 'content-type': 'c' } })).toBe(
      'content-type;host;x-amz-date;x-proxy-;x-sec-',
    );
  });
  it('skips a header without a value and signs a non-string value as text', () => {
    const missing = { 'x-a': undefined, 'x-b': null } as unknown as Record<string, string>;
    expect(authorization({ headers: missing })).toBe(authorization());
    expect(signedHeaders({ headers: missing })).toBe('host;x-amz-date');
    expect(authorization({ headers: { 'x-n': 5 } as unknown as Record<string, string> })).toBe(
      authorization({ headers: { 'x-n': '5' } }),
    );
  });
  it('trims header values and folds inner white space into one space', () => {
    expect(authorization({ headers: { 'x-a': ' \t a   b \t\n c  ' } })).toBe(
      authorization({ headers: { 'x-a': 'a b c' } }),
    );
    expect(authorization({ headers: { 'x-a': 'a  b' } })).not.toBe(authorization({ headers: { 'x-a': 'ab' } }));
  });
  it('signs header names lower-cased and sorted; of two spellings of one name, the lower-case one', () => {
    expect(signedHeaders({ headers: { 'X-B': '1', 'x-a': '2', Accept: '3' } })).toBe('accept;host;x-a;x-amz-date;x-b');
    expect(authorization({ headers: { 'x-foo': 'lower', 'X-Foo': 'upper' } })).toBe(
      authorization({ headers: { 'x-foo': 'lower' } }),
    );
  });
  it('hashes the payload as given by x-amz-content-sha256, else the body bytes', () => {
    const hashOfEmpty = createHash('sha256').update('').digest('hex');
    for (const name of ['x-amz-content-sha256', 'X-Amz-Content-Sha256']) {
      const withBody = authorization({ body: Buffer.from('abc'), headers: { [name]: hashOfEmpty } });
      expect(withBody).toBe(authorization({ headers: { [name]: hashOfEmpty } }));
      expect(signedHeaders({ headers: { [name]: hashOfEmpty } })).toBe('host;x-amz-content-sha256;x-amz-date');
    }
    expect(authorization({ body: Buffer.from('abc') })).not.toBe(authorization());
    const unsignedPayload = { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' };
    expect(authorization({ headers: unsignedPayload, body: Buffer.from('abc') })).toBe(
      byAws4({ headers: unsignedPayload }),
    );
  });
  // Lower-case names (what the gateway's own calls send) take a shorter path than names in any case:
  // each header set is signed both ways (one more header, `X-Case` or `x-case`) and must sign alike,
  // and as aws4 signs the headers it signs (aws4 signs every header given: `kept` lists those we sign).
  it.each([
    ['values to trim and fold', { 'x-a': ' \t a   b \t\n c  ' }, ['x-a']],
    ['headers without a value', { 'x-a': undefined, 'x-b': null, 'x-c': '1' }, ['x-c']],
    ['a non-string value', { 'x-n': 5 }, ['x-n']],
    [
      'headers AWS does not sign',
      { 'user-agent': 's', 'proxy-authorization': 'x', 'sec-fetch-mode': 'c', te: 't' },
      [],
    ],
    ['names that only start like unsigned ones', { 'x-proxy-': 'a', 'x-sec-': 'b', 'x-amzn-trace-idx': 'c' }, null],
    ['names to sort', { 'x-b': '1', 'x-a': '2', accept: '3', 'x-amz-meta': '4' }, null],
    ['a payload hash', { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-a': '1' }, null],
  ])('signs %s alike whatever the case of the other names, as aws4 does', (_, given, kept) => {
    // aws4 adds these to a request with a body: given, they are signed alike.
    const headers = { 'content-type': 'x/y', 'content-length': '3', ...(given as unknown as Record<string, string>) };
    const body = Buffer.from('abc');
    const lower = signed({ method: 'POST', body, headers: { ...headers, 'x-case': 'c' } });
    const mixed = signed({ method: 'POST', body, headers: { ...headers, 'X-Case': 'c' } });
    expect(mixed.authorization).toBe(lower.authorization);
    const signedByUs = Object.fromEntries(
      Object.entries(headers)
        .filter(([name]) => kept === null || !(name in given) || (kept as string[]).includes(name))
        .map(([name, value]) => [name, String(value)]),
    );
    expect(lower.authorization).toBe(byAws4({ method: 'POST', body, headers: { ...signedByUs, 'x-case': 'c' } }));
  });
  it('signs each path it is given when one signer signs several in turn', () => {
    const signer = new IntegrationSigner(credentials, 'service');
    for (const path of ['/a', '/model/x%3A0/invoke', '/a', '/b/../c', '/a']) {
      expect(signed({ path }, signer).authorization).toBe(signed({ path }).authorization);
      expect(signed({ path }, signer).authorization).toBe(byAws4({ path }));
    }
  });
});

describe('IntegrationSigner signing keys', () => {
  const secret = new Secret('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY');
  const request: RequestToSign = {
    method: 'GET',
    origin: new URL('https://example.amazonaws.com'),
    path: '/',
    query: '',
    headers: {},
    body: Buffer.from(''),
  };
  const day = (n: number) => new Date(Date.UTC(2015, 7, 1 + n, 12, 36));
  const fresh = () =>
    new IntegrationSigner({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: secret, sessionToken: undefined });
  afterEach(() => jest.restoreAllMocks());

  it('derives a key once per UTC day and region, and keeps each apart', () => {
    const reveal = jest.spyOn(secret, 'reveal');
    const signer = fresh();
    const first = signer.signNow(request, 'us-east-1', new Date('2015-08-30T00:00:00Z'));
    signer.signNow(request, 'us-east-1', new Date('2015-08-30T23:59:59Z'));
    expect(reveal).toHaveBeenCalledTimes(1);
    const other = signer.signNow(request, 'eu-west-1', new Date('2015-08-30T00:00:00Z'));
    expect(reveal).toHaveBeenCalledTimes(2);
    expect(other.authorization).toBe(
      fresh().signNow(request, 'eu-west-1', new Date('2015-08-30T00:00:00Z')).authorization,
    );
    const nextDay = signer.signNow(request, 'us-east-1', new Date('2015-08-31T00:00:00Z'));
    expect(nextDay.authorization).toBe(
      fresh().signNow(request, 'us-east-1', new Date('2015-08-31T00:00:00Z')).authorization,
    );
    expect(signer.signNow(request, 'us-east-1', new Date('2015-08-30T00:00:00Z')).authorization).toBe(
      first.authorization,
    );
    reveal.mockClear();
    signer.signNow(request, 'us-east-1', new Date('2015-08-30T12:00:00Z'));
    signer.signNow(request, 'eu-west-1', new Date('2015-08-30T12:00:00Z'));
    signer.signNow(request, 'us-east-1', new Date('2015-08-31T12:00:00Z'));
    expect(reveal).not.toHaveBeenCalled();
  });
  it('keeps 16 keys at most: the 17th empties the cache', () => {
    const reveal = jest.spyOn(secret, 'reveal');
    const signer = fresh();
    for (let n = 0; n < 16; n++) signer.signNow(request, 'us-east-1', day(n));
    expect(reveal).toHaveBeenCalledTimes(16);
    for (let n = 0; n < 16; n++) signer.signNow(request, 'us-east-1', day(n));
    expect(reveal).toHaveBeenCalledTimes(16);
    const seventeenth = signer.signNow(request, 'us-east-1', day(16));
    expect(reveal).toHaveBeenCalledTimes(17);
    expect(seventeenth.authorization).toBe(fresh().signNow(request, 'us-east-1', day(16)).authorization);
    reveal.mockClear();
    signer.signNow(request, 'us-east-1', day(16));
    expect(reveal).not.toHaveBeenCalled();
    const again = signer.signNow(request, 'us-east-1', day(0));
    expect(reveal).toHaveBeenCalledTimes(1);
    expect(again.authorization).toBe(fresh().signNow(request, 'us-east-1', day(0)).authorization);
  });
});
