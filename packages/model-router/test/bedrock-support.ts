import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import aws4 from 'aws4';
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec';

/** The AWS credentials of the test `bedrock` provider. */
export const AWS_CREDENTIALS = {
  accessKeyId: 'AKIATESTBEDROCK00001',
  secretAccessKey: 'bedrock/test+secret/key/0123456789abcdef',
  sessionToken: 'bedrock-session-token-for-tests',
};

/** The AWS codec (not the code under test) that frames the double's answers. */
export const awsCodec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

const str = (value: string) => ({ type: 'string' as const, value });

/** One `chunk` frame carrying an Anthropic stream event, as InvokeModelWithResponseStream sends it. */
export function chunkFrame(event: unknown): Buffer {
  const headers: MessageHeaders = {
    ':event-type': str('chunk'),
    ':content-type': str('application/json'),
    ':message-type': str('event'),
  };
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  // Bedrock pads its payloads with a `p` field; the decoder must ignore it.
  return Buffer.from(awsCodec.encode({ headers, body: Buffer.from(JSON.stringify({ bytes, p: 'abcdefgh' })) }));
}

/** An exception frame (`modelStreamErrorException`…), as Bedrock sends one mid-stream. */
export function exceptionFrame(exception: string, message: string): Buffer {
  const headers: MessageHeaders = {
    ':exception-type': str(exception),
    ':content-type': str('application/json'),
    ':message-type': str('exception'),
  };
  return Buffer.from(awsCodec.encode({ headers, body: Buffer.from(JSON.stringify({ message })) }));
}

/** The frames of an Anthropic event sequence (`[event, data][]` as the Anthropic mock takes them). */
export function framesOf(events: [string, unknown][]): Buffer[] {
  return events.map(([, data]) => chunkFrame(data));
}

export interface BedrockReceived {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  json: Record<string, unknown>;
  /** aws4 computed the same Authorization over what arrived, and any x-amz-content-sha256 is the body's. */
  signatureValid: boolean;
  region: string;
  service: string;
}

export type BedrockScripted =
  | { json: unknown; status?: number; headers?: Record<string, string> }
  | { exception: string; status: number; message?: string }
  | { frames: Buffer[]; split?: 'bytes' | 'halves'; hold?: boolean };

/**
 * A Bedrock Runtime test double on 127.0.0.1: re-verifies each request's SigV4 signature with
 * aws4 over exactly what it received, and answers what the test scripted: a JSON body, an AWS
 * error (`x-amzn-errortype`), or event-stream frames (written whole, split in halves, or a byte
 * per write).
 */
export async function mockBedrockRuntime() {
  const requests: BedrockReceived[] = [];
  const script: BedrockScripted[] = [];
  const closed: Promise<void>[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const authorization = String(req.headers.authorization ?? '');
      const scope = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request/.exec(authorization);
      const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
      const headers: Record<string, string> = {};
      for (const name of signedNames) headers[name] = String(req.headers[name] ?? '');
      const region = scope?.[3] ?? '';
      const service = scope?.[4] ?? '';
      const check = aws4.sign(
        { host: req.headers.host, method: req.method, path: req.url, service, region, headers, body },
        AWS_CREDENTIALS,
      ) as { headers: Record<string, string> };
      const declaredHash = req.headers['x-amz-content-sha256'];
      const hashOk = declaredHash === undefined || declaredHash === createHash('sha256').update(body).digest('hex');
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body.toString()) as Record<string, unknown>;
      } catch {
        // recorded as is
      }
      requests.push({
        method: req.method as string,
        url: req.url as string,
        headers: req.headers,
        body,
        json,
        signatureValid: authorization !== '' && hashOk && check.headers.Authorization === authorization,
        region,
        service,
      });
      const next = script.shift() ?? { json: { error: 'nothing scripted' }, status: 500 };
      const requestId = { 'x-amzn-requestid': 'bedrock-req-1' };
      if ('exception' in next) {
        res.writeHead(next.status, {
          'content-type': 'application/json',
          'x-amzn-errortype': `${next.exception}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
          ...requestId,
        });
        res.end(JSON.stringify({ message: next.message ?? `${next.exception} from the double` }));
        return;
      }
      if ('frames' in next) {
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', ...requestId });
        const all = Buffer.concat(next.frames);
        if (next.split === 'bytes') {
          for (let i = 0; i < all.length; i++) res.write(all.subarray(i, i + 1));
        } else if (next.split === 'halves') {
          for (const frame of next.frames) {
            const half = Math.floor(frame.length / 2);
            res.write(frame.subarray(0, half));
            res.write(frame.subarray(half));
          }
        } else {
          res.write(all);
        }
        // hold: the frames, then silence with the connection open (until the gateway closes it).
        if (next.hold) {
          closed.push(new Promise((resolve) => res.once('close', () => resolve())));
          return;
        }
        res.end();
        return;
      }
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json', ...requestId, ...next.headers });
      res.end(JSON.stringify(next.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    /** One promise per held stream, resolved when its connection closes. */
    closed,
    reply: (...answers: BedrockScripted[]) => script.push(...answers),
    last: () => requests.at(-1) as BedrockReceived,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The `bedrock` provider record of the tests: its runtime calls go to the double. */
export function bedrockProvider(doubleUrl: string, extra: Record<string, unknown> = {}) {
  return {
    slug: 'bedrock-test',
    provider: 'bedrock' as const,
    ...AWS_CREDENTIALS,
    region: 'us-east-1',
    allowedHosts: [doubleUrl],
    ...extra,
  };
}
