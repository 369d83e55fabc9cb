import OpenAI from 'openai';
import { GATEWAY_KEY, PROVIDER_KEY, gatewayFor, mockAnthropic } from './support';

// A provider may carry a default max_tokens; without one, requests that send none are refused.

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url, {
    providers: [
      { slug: 'defaulted', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: mock.url, defaultMaxTokens: 321 },
      { slug: 'strict', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: mock.url },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

const client = () => new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'hi' }];

describe("a provider's defaultMaxTokens", () => {
  it('fills max_tokens for chat completions that send neither max_tokens nor max_completion_tokens', async () => {
    await client().chat.completions.create({ model: '@defaulted/claude-sonnet-4-5', messages });
    expect(mock.last().json.max_tokens).toBe(321);
    await client().chat.completions.create({
      model: '@defaulted/claude-sonnet-4-5',
      messages,
      max_completion_tokens: 7,
    });
    expect(mock.last().json.max_tokens).toBe(7);
  });

  it('fills max_tokens for native messages', async () => {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@defaulted/claude-sonnet-4-5', messages }),
    });
    expect(response.status).toBe(200);
    expect(mock.last().json.max_tokens).toBe(321);
  });

  it('is off by default: 400 max_tokens_required', async () => {
    await expect(
      client().chat.completions.create({ model: '@strict/claude-sonnet-4-5', messages }),
    ).rejects.toMatchObject({ status: 400, code: 'max_tokens_required' });
  });

  it('must be a positive whole number', async () => {
    await expect(
      gatewayFor(mock.url, {
        providers: [{ slug: 'bad', provider: 'anthropic', apiKey: PROVIDER_KEY, defaultMaxTokens: 0 }],
      }),
    ).rejects.toThrow(/defaultMaxTokens must be a positive whole number/);
  });
});
