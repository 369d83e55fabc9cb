import { IntegrationSigner, Secret } from '../src';

// Published AWS Signature Version 4 test suite cases (service "service", region us-east-1,
// 2015-08-30T12:36:00Z, key AKIDEXAMPLE): the expected signatures are AWS's.
const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: new Secret('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'),
};
const sessionToken =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';
const date = new Date('2015-08-30T12:36:00Z');
const origin = new URL('https://example.amazonaws.com');

interface Vector {
  name: string;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
  signedHeaders: string;
  signature: string;
  sessionToken?: string;
}

const vectors: Vector[] = [
  {
    name: 'get-vanilla',
    method: 'GET',
    path: '/',
    query: '',
    headers: {},
    body: '',
    signedHeaders: 'host;x-amz-date',
    signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  },
  {
    name: 'post-vanilla',
    method: 'POST',
    path: '/',
    query: '',
    headers: {},
    body: '',
    signedHeaders: 'host;x-amz-date',
    signature: '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
  },
  {
    name: 'get-vanilla-query-order-key-case',
    method: 'GET',
    path: '/',
    query: 'Param2=value2&Param1=value1',
    headers: {},
    body: '',
    signedHeaders: 'host;x-amz-date',
    signature: 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
  },
  // The suite's request line carries the raw UTF-8 path; the signer encodes the path as it is on the wire.
  {
    name: 'get-utf8',
    method: 'GET',
    path: '/\u1234',
    query: '',
    headers: {},
    body: '',
    signedHeaders: 'host;x-amz-date',
    signature: '8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85',
  },
  {
    name: 'post-x-www-form-urlencoded',
    method: 'POST',
    path: '/',
    query: '',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'Param1=value1',
    signedHeaders: 'content-type;host;x-amz-date',
    signature: 'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a',
  },
  {
    name: 'post-sts-header-before (session token)',
    method: 'POST',
    path: '/',
    query: '',
    headers: {},
    body: '',
    signedHeaders: 'host;x-amz-date;x-amz-security-token',
    signature: '85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead',
    sessionToken,
  },
];

describe('the SigV4 signer against the published AWS test suite', () => {
  it.each(vectors)('$name', async (vector) => {
    const signer = new IntegrationSigner(
      { ...credentials, sessionToken: vector.sessionToken ? new Secret(vector.sessionToken) : undefined },
      'service',
    );
    const headers = await signer.sign(
      {
        method: vector.method,
        origin,
        path: vector.path,
        query: vector.query,
        headers: { ...vector.headers, 'x-amz-date': '20150830T123600Z' },
        body: Buffer.from(vector.body),
      },
      'us-east-1',
      date,
    );
    expect(headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=${vector.signedHeaders}, Signature=${vector.signature}`,
    );
    if (vector.sessionToken) expect(headers['x-amz-security-token']).toBe(vector.sessionToken);
  });
});
