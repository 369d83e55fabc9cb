import { createHash, createHmac } from 'node:crypto';
import { parseQuery } from '../src';
import { CREDENTIALS, gatewayWith, integration, mockBedrock } from './support';

// Query parameter names are the client's: names of Object.prototype's properties are parameters
// like any other, signed as sent. aws4 itself drops a `__proto__` parameter from its canonical
// query, so the signatures here are re-computed by a SigV4 written out in the test.

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const encode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** SigV4 of a received request, from the AWS documentation's four steps. */
function expectedAuthorization(
  method: string,
  url: string,
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
) {
  const authorization = String(headers.authorization);
  const [, date, region, service] = /Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\//.exec(authorization) ?? [];
  const signed = (/SignedHeaders=([^,]+)/.exec(authorization)?.[1] ?? '').split(';');
  const [path, query = ''] = url.split('?') as [string, string?];
  const pairs = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => p.split('=').map((x) => encode(decodeURIComponent(x ?? ''))) as [string, string])
    .map(([k, v = '']) => `${k}=${v}`)
    .sort();
  const canonical = [
    method,
    path,
    pairs.join('&'),
    ...signed.map((name) => `${name}:${String(headers[name]).trim()}`),
    '',
    signed.join(';'),
    sha256(body),
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(headers['x-amz-date']), scope, sha256(canonical)].join('\n');
  let key: Buffer = hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date as string);
  for (const part of [region, service, 'aws4_request'] as string[]) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return `AWS4-HMAC-SHA256 Credential=${CREDENTIALS.accessKeyId}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`;
}

let bedrock: Awaited<ReturnType<typeof mockBedrock>>;
let gateway: Awaited<ReturnType<typeof gatewayWith>>;

beforeAll(async () => {
  bedrock = await mockBedrock((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
});

afterAll(async () => {
  await gateway.close();
  await bedrock.close();
});

describe('query parameters named like built-in properties', () => {
  it('parse as own parameters, and never touch the prototype', () => {
    const params = parseQuery('constructor=1&toString=2&toString=3&valueOf');
    expect(Object.getPrototypeOf(params)).toBeNull();
    expect(Object.keys(params).sort()).toEqual(['constructor', 'toString', 'valueOf']);
    expect(params.toString).toEqual(['2', '3']);
    expect(params.constructor).toBe('1');
    expect(() => parseQuery('a=1&__proto__=x')).toThrow(/__proto__/);
    expect(() => parseQuery('%5F%5Fproto%5F%5F=x')).toThrow(/__proto__/);
  });

  it('refuse a parameter named __proto__ with 400 before anything is signed or sent', async () => {
    const before = bedrock.received.length;
    const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve?x=1&__proto__=y`, {
      method: 'POST',
      headers: { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': bedrock.origin },
      body: '{}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unsupported_query_parameter');
    expect(bedrock.received.length).toBe(before);
  });

  it.each(['constructor=1', 'toString=2&valueOf=3', 'hasOwnProperty=a&isPrototypeOf=b&isPrototypeOf=c'])(
    'are signed as sent: ?%s',
    async (query) => {
      const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve?${query}`, {
        method: 'POST',
        headers: {
          'x-gateway-provider': '@kb',
          'x-gateway-custom-host': bedrock.origin,
          'content-type': 'application/json',
        },
        body: '{}',
      });
      expect(response.status).toBe(200);
      const seen = bedrock.received.at(-1);
      expect(seen?.url).toBe(`/knowledgebases/KB1/retrieve?${query}`);
      expect(seen?.headers.authorization).toBe(
        expectedAuthorization(seen!.method, seen!.url, seen!.headers, seen!.body),
      );
    },
  );
});
