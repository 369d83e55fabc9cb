import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { IntegrationSigner, Secret } from '../src';
import { parseQuery } from '../src/core/signer';

// The signer on node:crypto against @smithy/signature-v4 (the AWS SDK's own signer, a
// devDependency only) over requests made up from awkward pieces: both must write the same headers.
const accessKeyId = 'AKIAORACLE';
const secretAccessKey = 'oracle/secret+KEY0123456789abcdefABCDEF';

function smithy(service: string, sessionToken?: string) {
  return new SignatureV4({
    service,
    region: 'us-east-1',
    sha256: Sha256,
    applyChecksum: false,
    credentials: async () => ({ accessKeyId, secretAccessKey, sessionToken }),
  });
}

/** A small deterministic generator, so that a failure names a reproducible case. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const SEGMENTS = [
  'knowledgebases',
  'KB1',
  'retrieve',
  '.',
  '..',
  '',
  'a%20b',
  'ü',
  'x+y',
  "it's",
  '(1)',
  '*',
  '%2F',
  'ok~_-.',
];
const QUERY_PARTS = [
  'a=1',
  'b=2',
  'a=0',
  'B=3',
  'x%20y=z%2Bw',
  'empty',
  'e=',
  'q=%E2%82%AC',
  'n=!*()',
  'X-Amz-Signature=s',
  'z=a+b',
  'm=%zz',
];
const HEADERS: Record<string, string>[] = [
  {},
  { 'content-type': 'application/json' },
  { 'content-type': 'application/json', accept: 'application/vnd.amazon.eventstream', 'content-length': '42' },
  {
    'Content-Type': '  text/plain ;  charset=utf-8 ',
    'User-Agent': 'ua',
    'x-amzn-trace-id': 't',
    'proxy-x': 'p',
    'sec-x': 's',
  },
  { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-custom': 'a\t b   c' },
  { date: 'Mon, 01 Jan 2024 00:00:00 GMT', Authorization: 'old', 'x-amz-date': '19990101T000000Z' },
];

describe('the SigV4 signer against @smithy/signature-v4', () => {
  it.each(Array.from({ length: 300 }, (_, seed) => seed))('case %i', async (seed) => {
    const next = random(seed + 1);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
    const path = `/${Array.from({ length: 1 + Math.floor(next() * 5) }, () => encodeURI(pick(SEGMENTS))).join('/')}${next() < 0.3 ? '/' : ''}`;
    const query = Array.from({ length: Math.floor(next() * 5) }, () => pick(QUERY_PARTS)).join('&');
    const headers = pick(HEADERS);
    const method = pick(['GET', 'POST', 'PUT', 'DELETE']);
    const body = Buffer.from(next() < 0.3 ? '' : `{"n":${seed},"text":"é ${'x'.repeat(seed)}"}`);
    const sessionToken = next() < 0.3 ? `token-${seed}` : undefined;
    const region = pick(['us-east-1', 'eu-west-3']);
    const service = pick(['bedrock', 'service']);
    const date = new Date(Date.UTC(2024, 0, 1 + (seed % 40), seed % 24, seed % 60, seed % 60, seed));
    const origin = new URL(pick(['https://bedrock-agent-runtime.us-east-1.amazonaws.com', 'http://127.0.0.1:8443']));

    const ours = await new IntegrationSigner(
      {
        accessKeyId,
        secretAccessKey: new Secret(secretAccessKey),
        sessionToken: sessionToken ? new Secret(sessionToken) : undefined,
      },
      service,
    ).sign({ method, origin, path, query, headers, body }, region, date);
    const theirs = await smithy(service, sessionToken).sign(
      {
        method,
        protocol: origin.protocol,
        hostname: origin.hostname,
        port: origin.port ? Number(origin.port) : undefined,
        path,
        query: parseQuery(query),
        headers: { ...headers, host: origin.host },
        body,
      },
      { signingRegion: region, signingDate: date },
    );
    expect(ours).toEqual(theirs.headers);
  });
});

describe('the signing key', () => {
  it('is derived from the secret once per day and region, then reused', async () => {
    let reads = 0;
    const secret = new Secret(secretAccessKey);
    const reveal = secret.reveal.bind(secret);
    secret.reveal = () => {
      reads++;
      return reveal();
    };
    const signer = new IntegrationSigner({ accessKeyId, secretAccessKey: secret, sessionToken: undefined });
    const request = {
      method: 'POST',
      origin: new URL('https://example.com'),
      path: '/',
      query: '',
      headers: {},
      body: Buffer.from('{}'),
    };
    const day = new Date('2024-05-01T10:00:00Z');
    const first = await signer.sign(request, 'us-east-1', day);
    await signer.sign(request, 'us-east-1', new Date('2024-05-01T23:59:59Z'));
    expect(reads).toBe(1);
    await signer.sign(request, 'eu-west-1', day);
    expect(reads).toBe(2);
    await signer.sign(request, 'us-east-1', new Date('2024-05-02T00:00:00Z'));
    expect(reads).toBe(3);
    // The key kept is the one the secret gives: the same request signs the same again.
    expect(await signer.sign(request, 'us-east-1', day)).toEqual(first);
  });
});
