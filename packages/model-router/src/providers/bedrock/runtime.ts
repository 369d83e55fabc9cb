import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { IntegrationSigner, resolveIntegration, type AwsIntegration } from '@gw/sigv4-proxy';
import { mergedBetas } from '../../core/gateway-headers';
import { upstreamJson, type ChunkedJson } from '../../core/streaming-json';
import { anthropicErrorBodyOf, exceptionName, mapBedrockException } from './errors';
import { BedrockEventStreamDecoder } from './event-stream';
import { foundationModelOf } from './model-ids';

/** The `anthropic_version` Bedrock Runtime takes for Anthropic's Messages API. */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Where a `bedrock` provider's runtime calls go and how they are signed (service `bedrock`). */
export interface BedrockRuntime {
  /** The origin dialled: the first `allowedHosts` origin, else `https://bedrock-runtime.<region>.amazonaws.com`. */
  origin: string;
  /** {@link BedrockRuntime.origin} parsed, once per runtime (its `host` is signed). Never changed. */
  originUrl: URL;
  /** The signing region: the integration's `region`. */
  region: string;
  /** The integration's signer (`@gw/sigv4-proxy`), which holds its secret. */
  signer: IntegrationSigner;
}

/**
 * The runtime of a `bedrock` provider record, validated by `@gw/sigv4-proxy` (the same check as for
 * knowledge bases; throws its TypeError naming the field). Calls go to the first of the
 * integration's `allowedHosts` when it lists any (a VPC endpoint, a test double), signed with its
 * `region`; otherwise to the region's public Bedrock Runtime endpoint.
 */
export function bedrockRuntimeOf(integration: AwsIntegration): BedrockRuntime {
  const resolved = resolveIntegration(integration);
  const first = resolved.allowedOrigins.values().next();
  const origin = first.done ? `https://bedrock-runtime.${resolved.region}.amazonaws.com` : first.value;
  return {
    origin,
    originUrl: new URL(origin),
    region: resolved.region,
    signer: new IntegrationSigner(resolved),
  };
}

/** Which Bedrock Runtime operation: `InvokeModel`, `InvokeModelWithResponseStream` or `CountTokens`. */
export type BedrockOperation = 'invoke' | 'stream' | 'countTokens';

/** A signed Bedrock Runtime call, and how its answer is turned into the `anthropic` provider's. */
export interface BedrockCall {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string | ChunkedJson;
  /** Turns Bedrock's answer into the answer Anthropic's API gives for the same request. */
  adapt: (response: Dispatcher.ResponseData) => Promise<Dispatcher.ResponseData>;
}

/** The body handed to the signer for a chunked body, whose hash it is given instead. */
const EMPTY_BODY = new Uint8Array(0);

/** The fields of a Messages body Bedrock takes in the path or not at all. */
const DROPPED_FIELDS: ReadonlySet<string> = new Set(['model', 'stream']);

/**
 * The InvokeModel body: the Messages body less `model` and `stream`, with
 * `anthropic_version: "bedrock-2023-05-31"` and `anthropic_beta` from the beta headers.
 */
export function bedrockBody(
  messagesBody: Record<string, unknown>,
  incoming: IncomingHttpHeaders,
): Record<string, unknown> {
  const body: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION };
  for (const key in messagesBody) {
    if (Object.hasOwn(messagesBody, key) && !DROPPED_FIELDS.has(key)) body[key] = messagesBody[key];
  }
  const betas = mergedBetas(incoming);
  if (betas) body.anthropic_beta = betas.split(',');
  return body;
}

/** The bytes of a body and their SHA-256, hashed as they are produced (a chunked body is not joined). */
function hashBody(body: string | ChunkedJson): string {
  const hash = createHash('sha256');
  if (typeof body === 'string') hash.update(body);
  else for (const chunk of body.chunks()) hash.update(chunk);
  return hash.digest('hex');
}

/** The bytes of a body, joined (token counting base64-encodes them). */
function wholeBody(body: string | ChunkedJson): Buffer {
  return typeof body === 'string' ? Buffer.from(body) : Buffer.concat([...body.chunks()], body.byteLength);
}

/**
 * A Bedrock Runtime call for a Messages request (`messagesBody`, the body the `anthropic` provider
 * would be sent): `POST /model/<id>/invoke`, `/invoke-with-response-stream`, or
 * `/model/<foundation model id>/count-tokens` with `{"input":{"invokeModel":{"body":"<base64>"}}}`,
 * SigV4-signed for service `bedrock` over the exact bytes sent.
 */
export function bedrockCall(
  runtime: BedrockRuntime,
  model: string,
  operation: BedrockOperation,
  messagesBody: Record<string, unknown>,
  req: IncomingMessage,
): BedrockCall {
  const invokeBody = bedrockBody(messagesBody, req.headers);
  let body: string | ChunkedJson;
  let path: string;
  if (operation === 'countTokens') {
    // InvokeModel refuses a body without max_tokens; token counting does not need one.
    if (invokeBody.max_tokens === undefined) invokeBody.max_tokens = 1;
    const invoke = wholeBody(upstreamJson(invokeBody, req)).toString('base64');
    body = JSON.stringify({ input: { invokeModel: { body: invoke } } });
    path = `/model/${encodeURIComponent(foundationModelOf(model))}/count-tokens`;
  } else {
    body = upstreamJson(invokeBody, req);
    path = `/model/${encodeURIComponent(model)}/${operation === 'stream' ? 'invoke-with-response-stream' : 'invoke'}`;
  }
  const unsigned: Record<string, string> = {
    'content-type': 'application/json',
    accept: operation === 'stream' ? 'application/vnd.amazon.eventstream' : 'application/json',
    // Signed, as AWS's SDKs sign it.
    'content-length': String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength),
  };
  // A chunked body is hashed chunk by chunk and the hash sent with it, so it is never joined.
  if (typeof body !== 'string') unsigned['x-amz-content-sha256'] = hashBody(body);
  // A text body is hashed as the UTF-8 bytes undici sends; a chunked one by its `x-amz-content-sha256`.
  const headers = runtime.signer.signNow(
    {
      method: 'POST',
      origin: runtime.originUrl,
      path,
      query: '',
      headers: unsigned,
      body: typeof body === 'string' ? body : EMPTY_BODY,
    },
    runtime.region,
  );
  return { origin: runtime.origin, path, headers, body, adapt: (response) => adaptAnswer(response, operation) };
}

/** Most bytes of a Bedrock error body read. */
const MAX_ERROR_BYTES = 64 * 1024;

/** Reads at most `limit` bytes of a body (the rest is dropped with its connection). */
async function readSome(body: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) {
        body.destroy();
        break;
      }
    }
  } catch {
    // A body that breaks is answered with what arrived.
  }
  return Buffer.concat(chunks).subarray(0, limit);
}

/** A response body made of one buffer, with undici's `dump()`. */
function bodyOf(bytes: Buffer): Dispatcher.ResponseData['body'] {
  return withDump(Readable.from([bytes], { objectMode: false }));
}

function withDump(stream: Readable): Dispatcher.ResponseData['body'] {
  return Object.assign(stream, {
    dump: async () => {
      stream.destroy();
    },
  }) as unknown as Dispatcher.ResponseData['body'];
}

/** The response headers kept from Bedrock's: its request id, as `request-id`. */
function answerHeaders(response: Dispatcher.ResponseData, contentType: string): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType };
  const id = response.headers['x-amzn-requestid'];
  if (typeof id === 'string') headers['request-id'] = id;
  return headers;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Bedrock's answer as the `anthropic` provider's. */
async function adaptAnswer(
  response: Dispatcher.ResponseData,
  operation: BedrockOperation,
): Promise<Dispatcher.ResponseData> {
  if (response.statusCode >= 300) {
    const raw = await readSome(response.body, MAX_ERROR_BYTES);
    const parsed = parseJson(raw);
    const name = exceptionName(response.headers['x-amzn-errortype'], parsed);
    const mapped = mapBedrockException(name, response.statusCode);
    const text = Buffer.from(anthropicErrorBodyOf(mapped, name, parsed));
    const headers = answerHeaders(response, 'application/json');
    headers['content-length'] = String(text.length);
    return { ...response, statusCode: mapped.status, headers, body: bodyOf(text) };
  }
  if (operation === 'countTokens') {
    const parsed = parseJson(await readSome(response.body, MAX_ERROR_BYTES)) as { inputTokens?: unknown } | undefined;
    const text = Buffer.from(
      typeof parsed?.inputTokens === 'number' ? JSON.stringify({ input_tokens: parsed.inputTokens }) : '',
    );
    const headers = answerHeaders(response, 'application/json');
    headers['content-length'] = String(text.length);
    return { ...response, headers, body: bodyOf(text) };
  }
  if (operation === 'invoke') {
    const headers = answerHeaders(response, 'application/json');
    const length = response.headers['content-length'];
    if (typeof length === 'string') headers['content-length'] = length;
    return { ...response, headers };
  }
  const source = response.body;
  const decoder = new BedrockEventStreamDecoder();
  source.pipe(decoder);
  // The source's failure (a reset, the idle timeout) is the decoded stream's, code and all.
  source.once('error', (error) => decoder.destroy(error));
  const stop = () => {
    if (!source.readableEnded) source.destroy();
  };
  // The consumer stopped reading (done, or the client left), or the decoder ended the stream on a bad frame.
  decoder.once('close', stop);
  decoder.once('end', () => {
    if (decoder.errorEvent !== undefined) {
      source.unpipe(decoder);
      stop();
    }
  });
  return {
    ...response,
    headers: answerHeaders(response, 'text/event-stream; charset=utf-8'),
    body: withDump(decoder),
  };
}
