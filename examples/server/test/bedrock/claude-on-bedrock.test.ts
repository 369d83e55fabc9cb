/**
 * Claude on Bedrock in the full gateway: the config's `bedrock` record serves
 * `@<slug>/<Bedrock model id>` on the model routes (the knowledge-base proxy still answers for it),
 * and a request's cost is that of the Anthropic model the Bedrock id names, the same as through the
 * `anthropic` provider on the same answer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../../src/app';
import { parseConfig } from '../../src/config/load';
import { createLogger } from '../../src/observability/logger';
import { priceMemo } from '../../src/limits/limit-step';
import { catalogRecordChecks } from '../../src/catalog/record-checks';
import { KNOWN_BEDROCK_ANTHROPIC_MODELS } from '@gw/model-router';
import { AWS_CREDENTIALS, framesOf, mockBedrockRuntime } from '../../../../packages/model-router/test/bedrock-support';
import { message, mockAnthropic, thinkingEvents } from '../../../../packages/model-router/test/support';

jest.setTimeout(30_000);

const GATEWAY_KEY = 'gw-claude-on-bedrock-key-01';
const BEDROCK_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
let anthropicMock: Awaited<ReturnType<typeof mockAnthropic>>;
let bedrock: Awaited<ReturnType<typeof mockBedrockRuntime>>;
let server: Server;
let base: string;
const lines: string[] = [];

beforeAll(async () => {
  anthropicMock = await mockAnthropic();
  bedrock = await mockBedrockRuntime();
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: GATEWAY_KEY, user: { user_id: 'u1' } }] },
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-bedrock-test-02', baseUrl: anthropicMock.url },
        { slug: 'aws', provider: 'bedrock', ...AWS_CREDENTIALS, region: 'us-east-1', allowedHosts: [bedrock.url] },
      ],
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  const gateway = createGateway({
    config,
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _e, done) => {
          lines.push(String(chunk));
          done();
        },
      }),
    ),
  });
  server = createServer(gateway.listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await bedrock.close();
  await anthropicMock.close();
});

/** The request log line of the last request to `path` with `model`, once it is written. */
async function recordOf(model: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const line = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.modelRequested === model)
      .at(-1);
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no request line for ${model}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const usage = { input_tokens: 1000, output_tokens: 200, cache_creation_input_tokens: 100, cache_read_input_tokens: 50 };

describe('a bedrock record serves Anthropic models on the model routes', () => {
  it('chat completions: the same answer and the same cost as the anthropic provider', async () => {
    const openai = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
    const answer = message([{ type: 'text', text: 'hello from Claude' }], { usage });
    anthropicMock.reply({ json: answer });
    bedrock.reply({ json: answer });
    const request = (model: string) => ({
      model,
      max_tokens: 300,
      messages: [{ role: 'user' as const, content: 'Hi' }],
    });
    const direct = await openai.chat.completions.create(request('@claude/claude-sonnet-4-5'));
    const viaBedrock = await openai.chat.completions.create(request(`@aws/${BEDROCK_ID}`));
    expect(viaBedrock.choices).toEqual(direct.choices);
    expect(viaBedrock.usage).toEqual(direct.usage);
    expect(bedrock.last().signatureValid).toBe(true);
    const directRecord = await recordOf('claude-sonnet-4-5');
    const bedrockRecord = await recordOf(BEDROCK_ID);
    expect(bedrockRecord).toMatchObject({ provider: 'aws', status: 200, inputTokens: 1000, outputTokens: 200 });
    // claude-sonnet-4-5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens.
    expect(bedrockRecord.costUsd).toBeCloseTo((1000 * 3 + 200 * 15 + 100 * 3.75 + 50 * 0.3) / 1e6, 12);
    expect(bedrockRecord.costUsd).toBe(directRecord.costUsd);
  });

  it('/v1/messages streamed, through the Anthropic SDK', async () => {
    bedrock.reply({ frames: framesOf(thinkingEvents()) });
    const anthropic = new Anthropic({ apiKey: GATEWAY_KEY, baseURL: base, maxRetries: 0 });
    const final = await anthropic.messages
      .stream({ model: `@aws/${BEDROCK_ID}`, max_tokens: 300, messages: [{ role: 'user', content: 'Hi' }] })
      .finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'redacted_thinking', 'text']);
    expect(bedrock.last().url).toBe(`/model/${encodeURIComponent(BEDROCK_ID)}/invoke-with-response-stream`);
    expect((await recordOf(BEDROCK_ID)).costUsd).toBeGreaterThan(0);
  });

  it('lists the bedrock record once among the providers, and keeps its knowledge-base proxy', async () => {
    const models = (await (
      await fetch(`${base}/v1/models`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })
    ).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain(`@aws/${BEDROCK_ID}`);
    bedrock.reply({ json: { retrievalResults: [] } });
    const kb = await fetch(`${base}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        'x-gateway-api-key': GATEWAY_KEY,
        'x-gateway-provider': '@aws',
        'x-gateway-custom-host': bedrock.url,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(kb.status).toBe(200);
    expect(bedrock.last().url).toBe('/knowledgebases/KB1/retrieve');
    expect(bedrock.last().signatureValid).toBe(true);
  });
});

describe('prices of Bedrock ids', () => {
  it.each([
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5'],
    ['anthropic.claude-3-5-haiku-20241022-v1:0', 'claude-3-5-haiku'],
    ['global.anthropic.claude-haiku-4-5-20251001-v1:0', 'claude-haiku-4-5'],
    ['eu.anthropic.claude-opus-4-1-20250805-v1:0', 'claude-opus-4-1'],
  ])('%s is priced as %s', (id, model) => {
    const price = priceMemo();
    expect(price(id, undefined)).toBeDefined();
    expect(price(id, undefined)).toEqual(price(model, undefined));
  });
});

describe('a bedrock record saved with a custom model selection', () => {
  it('is accepted, and remembers the Bedrock ids known then (for autoEnableNew)', () => {
    const hooks = catalogRecordChecks({ signer: () => undefined, acceptsIdentityTokens: false });
    const record = {
      slug: 'aws2',
      provider: 'bedrock',
      ...AWS_CREDENTIALS,
      region: 'us-east-1',
      models: { mode: 'custom', models: [BEDROCK_ID], autoEnableNew: true },
    };
    const annotated = hooks.annotate?.('providers', record, ['models']) as { knownModels: string[] };
    expect(annotated.knownModels).toEqual([...KNOWN_BEDROCK_ANTHROPIC_MODELS]);
    expect(() => hooks.check?.('providers', { ...record, knownModels: annotated.knownModels })).not.toThrow();
  });
});
