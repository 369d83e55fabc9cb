import fc from 'fast-check';
import OpenAI from 'openai';
import { ModelRouterError, toAnthropicConversion } from '../src';
import { anthropicRequest } from './anthropic-schema';
import { GATEWAY_KEY, gatewayFor, mockAnthropic } from './support';

// Hundreds of requests through a real server: minutes, not seconds, on a busy machine.
jest.setTimeout(120_000);

const objectSchema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
const responseFormat = fc.oneof(
  fc.constant({ type: 'text' }),
  fc.constant({ type: 'json_object' }),
  fc.record({
    type: fc.constant('json_schema'),
    json_schema: fc.record(
      {
        name: fc.constantFrom('answer', 'weather_report', 'bad name!', ''),
        schema: fc.constantFrom<unknown>(objectSchema, { type: 'array' }, { anyOf: [] }, 'x', undefined),
        strict: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.constantFrom({ type: 'grammar' }, { type: 7 }, 'json', null),
);
const number = fc.oneof(fc.double({ min: -1, max: 3, noNaN: true }), fc.constantFrom(0, 0.95, 1, 2));
const tools = fc.constantFrom(
  undefined,
  [],
  [{ type: 'function', function: { name: 'lookup' } }],
  [{ type: 'function', function: { name: 'answer', parameters: { type: 'object' } } }],
);
const fields = fc.record(
  {
    response_format: responseFormat,
    reasoning_effort: fc.constantFrom('none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', null),
    thinking: fc.constantFrom(
      { type: 'enabled', budget_tokens: 1024 },
      { type: 'enabled', budget_tokens: 3000 },
      { type: 'disabled' },
      null,
    ),
    temperature: number,
    top_p: number,
    top_k: fc.constantFrom(1, 40),
    max_tokens: fc.oneof(fc.integer({ min: 1, max: 40_000 }), fc.constantFrom(1024, 1025, 4096, 0, -1, 1.5)),
    max_completion_tokens: fc.oneof(fc.integer({ min: 1, max: 40_000 }), fc.constantFrom(1025, 0)),
    tools,
    tool_choice: fc.constantFrom('auto', 'none', 'required', { type: 'function', function: { name: 'lookup' } }),
    stop: fc.constantFrom('END', ['a', 'b', 'c', 'd', 'e'], ' ', ['x', '']),
    seed: fc.integer(),
    stream: fc.boolean(),
  },
  { requiredKeys: [] },
);

describe('response_format, reasoning_effort and sampling in any combination', () => {
  it('convert to a request the Anthropic schema accepts, or fail with a 400 and a code', async () => {
    await fc.assert(
      fc.asyncProperty(fields, async (extra) => {
        const body = JSON.parse(
          JSON.stringify({ model: '@p/claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }], ...extra }),
        ) as Record<string, unknown>;
        let conversion;
        try {
          conversion = await toAnthropicConversion(body, { model: 'claude-sonnet-4-5' });
        } catch (error) {
          if (!(error instanceof ModelRouterError)) throw error;
          expect(error.status).toBe(400);
          expect(error.code).toMatch(/^[a-z_]+$/);
          expect(typeof error.param).toBe('string');
          return;
        }
        const result = anthropicRequest.safeParse(conversion.request);
        if (!result.success) throw new Error(JSON.stringify(result.error.issues[0]));
        // A JSON answer is one forced tool, and no field is dropped without being named.
        if (conversion.jsonTool !== undefined)
          expect(conversion.request.tool_choice).toEqual({ type: 'tool', name: conversion.jsonTool });
        if (body.seed !== undefined) expect(conversion.ignoredParams).toContain('seed');
        if (body.top_p !== undefined && conversion.request.top_p === undefined)
          expect(conversion.ignoredParams).toContain('top_p');
        if (body.max_tokens !== undefined && body.max_completion_tokens !== undefined)
          expect(conversion.request.max_tokens).toBe(body.max_completion_tokens);
      }),
      { numRuns: 3000 },
    );
  });

  it('answer through the route with 200 or a 400 carrying a code, never a 500', async () => {
    const mock = await mockAnthropic();
    const gateway = await gatewayFor(mock.url);
    const client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    try {
      await fc.assert(
        fc.asyncProperty(fields, async (extra) => {
          // The mock answers with a text message (a JSON request reads it as content).
          const before = mock.requests.length;
          try {
            const completion = await client.chat.completions.create({
              model: '@anthropic-test/claude-sonnet-4-5',
              messages: [{ role: 'user', content: 'Hi' }],
              ...(extra as object),
              stream: false,
            } as never);
            expect((completion as { object: string }).object).toBe('chat.completion');
            // What went upstream is a request the real API takes.
            expect(mock.requests.length).toBe(before + 1);
            const sent = anthropicRequest.safeParse(mock.last().json);
            if (!sent.success) throw new Error(JSON.stringify(sent.error.issues[0]));
          } catch (error) {
            if (!(error instanceof OpenAI.APIError)) throw error;
            expect(error.status).toBe(400);
            expect(error.code).toMatch(/^[a-z_]+$/);
            // Refused before any upstream call: never the provider's own 400.
            expect(mock.requests.length).toBe(before);
          }
        }),
        { numRuns: 400 },
      );
    } finally {
      await gateway.close();
      await mock.close();
    }
  });
});
