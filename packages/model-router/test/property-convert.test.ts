import fc from 'fast-check';
import { ChatStreamTranslator, ModelRouterError, toAnthropicRequest } from '../src';
import { anthropicRequest } from './anthropic-schema';

const textPart = fc.record({ type: fc.constant('text'), text: fc.string() });
const imagePart = fc.record({
  type: fc.constant('image_url'),
  image_url: fc.record({
    url: fc.constantFrom(
      'data:image/png;base64,iVBORw0KGgo=',
      'data:image/jpeg;base64,/9j/4AAQ',
      'data:image/webp;name=a.webp;base64,UklGRg==',
    ),
  }),
});
const userMessage = fc.record({
  role: fc.constant('user'),
  content: fc.oneof(fc.string(), fc.array(fc.oneof(textPart, imagePart), { minLength: 1, maxLength: 3 })),
});
const toolCall = fc.record({
  id: fc.string({ minLength: 1 }),
  type: fc.constant('function'),
  function: fc.record({ name: fc.string({ minLength: 1 }), arguments: fc.constantFrom('', '{}', '{"a":1}') }),
});
const assistantMessage = fc.record({
  role: fc.constant('assistant'),
  content: fc.string(),
  tool_calls: fc.option(fc.array(toolCall, { minLength: 1, maxLength: 2 }), { nil: undefined }),
});
const systemMessage = fc.record({ role: fc.constantFrom('system', 'developer'), content: fc.string({ minLength: 1 }) });
const toolMessage = fc.record({
  role: fc.constant('tool'),
  tool_call_id: fc.string({ minLength: 1 }),
  content: fc.string(),
});
const stopSequence = fc.string({ minLength: 1 }).filter((s) => s.trim() !== '');
const openAiRequest = fc.record({
  model: fc.constant('@p/claude-sonnet-4-5'),
  max_tokens: fc.integer({ min: 1, max: 64_000 }),
  messages: fc
    .tuple(
      fc.array(systemMessage, { maxLength: 2 }),
      userMessage,
      fc.array(fc.oneof(userMessage, assistantMessage, toolMessage), { maxLength: 5 }),
    )
    .map(([s, u, rest]) => [...s, u, ...rest]),
  temperature: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
  // Anthropic refuses stop sequences of only whitespace (400 unsupported_value, tested in fidelity.test.ts).
  stop: fc.option(fc.oneof(stopSequence, fc.array(stopSequence, { maxLength: 3 })), { nil: undefined }),
  stream: fc.option(fc.boolean(), { nil: undefined }),
  user: fc.option(fc.string(), { nil: undefined }),
  tools: fc.option(
    fc.array(
      fc.record({
        type: fc.constant('function'),
        function: fc.record({ name: fc.string({ minLength: 1 }), description: fc.string() }),
      }),
      { maxLength: 2 },
    ),
    { nil: undefined },
  ),
  tool_choice: fc.option(fc.constantFrom('auto', 'none', 'required'), { nil: undefined }),
});

describe('conversion properties', () => {
  it('converts every well-formed OpenAI request into an Anthropic request that passes the schema', async () => {
    await fc.assert(
      fc.asyncProperty(openAiRequest, async (request) => {
        const converted = await toAnthropicRequest(JSON.parse(JSON.stringify(request)), { model: 'claude-sonnet-4-5' });
        const result = anthropicRequest.safeParse(converted);
        if (!result.success) throw new Error(JSON.stringify(result.error.issues[0]));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws anything but a ModelRouterError on arbitrary JSON', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          fc.record({
            max_tokens: fc.jsonValue(),
            messages: fc.jsonValue(),
            thinking: fc.jsonValue(),
            tools: fc.jsonValue(),
          }),
        ),
        async (body) => {
          try {
            await toAnthropicRequest(body, { model: 'claude-sonnet-4-5' });
          } catch (error) {
            expect(error).toBeInstanceOf(ModelRouterError);
            expect((error as ModelRouterError).status).toBeGreaterThanOrEqual(400);
            expect((error as ModelRouterError).status).toBeLessThan(500);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('never throws on arbitrary stream events, and ends with [DONE] or an error frame', () => {
    const eventName = fc.constantFrom(
      'message_start',
      'content_block_start',
      'content_block_delta',
      'message_delta',
      'message_stop',
      'error',
      'ping',
      'other',
    );
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            eventName,
            fc.oneof(
              fc.jsonValue().map((v) => JSON.stringify(v)),
              fc.string(),
            ),
          ),
        ),
        fc.boolean(),
        (events, strict) => {
          const translator = new ChatStreamTranslator({ strict, includeUsage: true, model: 'm' });
          let out = '';
          for (const [name, data] of events) out += translator.push(name, data);
          out += translator.abortFrame('ended');
          for (const frame of out.split('\n\n').filter(Boolean)) {
            const data = frame.replace(/^data: /, '');
            if (data !== '[DONE]') JSON.parse(data);
          }
          expect(translator.done).toBe(true);
        },
      ),
    );
  });
});
