import { resolveCustomHost, isAllowedBedrockHost } from '../../src/core/custom-host';
import { resolveIntegration } from '../../src/core/integration';
import { Secret } from '../../src/core/secret';
import { BEDROCK_SIGNING_SERVICE, IntegrationSigner, parseQuery } from '../../src/core/signer';

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
