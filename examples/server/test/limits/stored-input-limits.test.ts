import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startRedis, type RunningRedis } from '../cache/cache-support';
import { newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';

jest.setTimeout(180_000);

/**
 * An Anthropic double that bills what it receives, as the real API does: input tokens of one per
 * 4 bytes of the request it was sent (the gateway's own estimate, so the limits' only error is
 * the output), 10 output tokens. Keeps a tally per API key of the tokens it billed.
 */
async function startBillingAnthropic(): Promise<{
  url: string;
  billed: (model: string) => { input: number; output: number; calls: number };
  close(): Promise<void>;
}> {
  const tally = new Map<string, { input: number; output: number; calls: number }>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = JSON.parse(raw.toString() || '{}') as { model: string; max_tokens?: number };
      const input = Math.ceil(raw.length / 4);
      const entry = tally.get(body.model) ?? { input: 0, output: 0, calls: 0 };
      entry.input += input;
      entry.output += 10;
      entry.calls++;
      tally.set(body.model, entry);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `msg_${entry.calls}`,
          type: 'message',
          role: 'assistant',
          model: body.model,
          // Asked to write long, it writes about 20 KB (a long answer a caller may reference later).
          content: [{ type: 'text', text: raw.includes('Write long.') ? 'a long answer '.repeat(1500) : 'noted' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: input, output_tokens: 10 },
        }),
      );
    });
  });
  const url = await new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  return {
    url,
    billed: (model) => tally.get(model) ?? { input: 0, output: 0, calls: 0 },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const TPM = 20_000;
const BUDGET_USD = 0.1;
const MAX_OUTPUT = 16;
/** One honest turn of about 40 KB: about 10,000 input tokens. */
const LONG_TURN = `Summarise this log. ${'lorem ipsum dolor sit amet '.repeat(1500)}`;

/**
 * Stored conversations count like the bytes they add to the provider's request (CONTRACT section
 * 14): `previous_response_id` and `item_reference` continuations of a long stored turn, sent
 * concurrently through the openai SDK to two instances sharing Redis, never pass a
 * tokens-per-minute limit or a daily budget by more than one request's estimation error.
 */
describe('limits count the stored items a Responses request continues from', () => {
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let anthropic: Awaited<ReturnType<typeof startBillingAnthropic>>;
  let gateways: RunningGateway[] = [];

  beforeAll(async () => {
    [postgres, redis, anthropic] = await Promise.all([startPostgres(), startRedis(), startBillingAnthropic()]);
    const price = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      REDIS_URL: redis.url,
      GATEWAY_CONFIG: writeConfig({
        auth: {
          apiKeys: [
            { key: 'gw-stored-tpm-00001', user: { user_id: 'u-tpm' } },
            { key: 'gw-stored-ref-00001', user: { user_id: 'u-ref' } },
            { key: 'gw-stored-usd-00001', user: { user_id: 'u-usd' } },
            { key: 'gw-stored-tpl-00001', user: { user_id: 'u-tpl' } },
            { key: 'gw-stored-msg-00001', user: { user_id: 'u-msg' } },
          ],
        },
        providers: [
          {
            slug: 'billing',
            provider: 'anthropic',
            apiKey: 'sk-ant-billing-0001',
            baseUrl: anthropic.url,
            pricing: { 'claude-tpm': price, 'claude-ref': price, 'claude-usd': price, 'claude-tpl': price },
          },
        ],
        // A template whose system message is about 40 KB: a tiny request renders a large one.
        prompts: [
          {
            id: 'long-context',
            provider: '@billing',
            model: 'claude-tpl',
            max_tokens: MAX_OUTPUT,
            messages: [
              { role: 'system', content: LONG_TURN },
              { role: 'user', content: '{{question}}' },
            ],
          },
        ],
        limits: [
          { slug: 'tpm', subjects: { users: ['u-tpm'] }, tokens_per_minute: TPM },
          { slug: 'ref', subjects: { users: ['u-ref'] }, tokens_per_minute: TPM },
          { slug: 'usd', subjects: { users: ['u-usd'] }, cost_usd_per_day: BUDGET_USD },
          { slug: 'tpl', subjects: { users: ['u-tpl'] }, tokens_per_minute: TPM },
          { slug: 'msg', subjects: { users: ['u-msg'] }, tokens_per_minute: TPM },
        ],
      }),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      JWT_PRIVATE_KEY: undefined,
      GATEWAY_LIMITS_REDIS_TIMEOUT_MS: '1000',
    };
    gateways = await Promise.all([startGateway(env), startGateway(env)]);
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await Promise.all([postgres?.destroy(), redis?.stop(), anthropic?.close()]);
  });

  const client = (key: string, i: number) =>
    new OpenAI({ apiKey: key, baseURL: `${gateways[i % gateways.length]!.url}/v1`, maxRetries: 0 });

  /** Sends `count` concurrent continuations made by `make`; the statuses. */
  async function continuations(
    count: number,
    key: string,
    make: (openai: OpenAI) => Promise<unknown>,
  ): Promise<number[]> {
    return Promise.all(
      Array.from({ length: count }, (_, i) =>
        make(client(key, i)).then(
          () => 200,
          (error: { status?: number }) => error.status ?? 0,
        ),
      ),
    );
  }

  it('previous_response_id: 20 concurrent tiny continuations of a 40 KB turn stay within tokens per minute', async () => {
    const first = await client('gw-stored-tpm-00001', 0).responses.create({
      model: '@billing/claude-tpm',
      input: LONG_TURN,
      max_output_tokens: MAX_OUTPUT,
    });
    const statuses = await continuations(20, 'gw-stored-tpm-00001', (openai) =>
      openai.responses.create({
        model: '@billing/claude-tpm',
        previous_response_id: first.id,
        input: 'And the next line?',
        max_output_tokens: MAX_OUTPUT,
      }),
    );
    const billed = anthropic.billed('claude-tpm');
    // Before: all 20 passed, about 210,000 tokens billed against 20,000.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(billed.input + billed.output).toBeLessThanOrEqual(TPM);
  });

  it('item_reference: 20 concurrent references to a stored long answer stay within tokens per minute', async () => {
    const long = await client('gw-stored-ref-00001', 0).responses.create({
      model: '@billing/claude-ref',
      input: 'Write long.',
      max_output_tokens: MAX_OUTPUT,
    });
    const longItem = long.output.find((item) => item.type === 'message');
    expect(longItem).toBeDefined();
    const statuses = await continuations(20, 'gw-stored-ref-00001', (openai) =>
      openai.responses.create({
        model: '@billing/claude-ref',
        input: [
          { type: 'item_reference', id: (longItem as { id: string }).id },
          { type: 'message', role: 'user', content: 'Again?' },
        ] as OpenAI.Responses.ResponseInput,
        max_output_tokens: MAX_OUTPUT,
      }),
    );
    const billed = anthropic.billed('claude-ref');
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(billed.input + billed.output).toBeLessThanOrEqual(TPM);
  });

  it('a daily budget: continuations of a stored turn never spend past it by more than one request', async () => {
    const first = await client('gw-stored-usd-00001', 0).responses.create({
      model: '@billing/claude-usd',
      input: LONG_TURN,
      max_output_tokens: MAX_OUTPUT,
    });
    await continuations(20, 'gw-stored-usd-00001', (openai) =>
      openai.responses.create({
        model: '@billing/claude-usd',
        previous_response_id: first.id,
        input: 'Go on.',
        max_output_tokens: MAX_OUTPUT,
      }),
    );
    const billed = anthropic.billed('claude-usd');
    const spent = (billed.input * 3 + billed.output * 15) / 1e6;
    // Before: $0.63 of a $0.10 budget.
    expect(spent).toBeLessThanOrEqual(BUDGET_USD);
  });

  it("a prompt template's messages count: 10 concurrent tiny renders of a 40 KB template stay within tokens per minute", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fetch(`${gateways[i % 2]!.url}/v1/prompts/long-context/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer gw-stored-tpl-00001', 'content-type': 'application/json' },
          body: JSON.stringify({ variables: { question: 'Why?' } }),
        }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    const billed = anthropic.billed('claude-tpl');
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(billed.input + billed.output).toBeLessThanOrEqual(TPM);
  });

  it.each([['"1000"'], ['1000.5'], ['0'], ['-1'], ['true']])(
    '/v1/messages refuses max_tokens %s (it could not be reserved as the provider reads it)',
    async (value) => {
      const res = await fetch(`${gateways[0]!.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'gw-stored-msg-00001', 'content-type': 'application/json' },
        body: `{"model":"@billing/claude-tpm","max_tokens":${value},"messages":[{"role":"user","content":"hi"}]}`,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string; message: string } }).error.message).toMatch(
        /max_tokens must be a positive whole number/,
      );
    },
  );
});
