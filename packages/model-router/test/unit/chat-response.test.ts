import {
  completionId,
  finishReason,
  jsonFinishReason,
  reportedModel,
  toChatCompletion,
  toOpenAiError,
  toOpenAiUsage,
} from '../../src/providers/anthropic/chat-response';
import { ChatStreamTranslator } from '../../src/providers/anthropic/chat-stream';

/** The parts of a chat completion the tests read. */
interface Completion {
  model: string;
  created: number;
  usage: { total_tokens: number };
  choices: [{ finish_reason: string; message: Record<string, unknown> & { tool_calls?: unknown[] } }];
}

describe('finishReason', () => {
  it('maps every Anthropic stop reason to an OpenAI one', () => {
    expect(
      [
        'max_tokens',
        'model_context_window_exceeded',
        'tool_use',
        'refusal',
        'end_turn',
        'stop_sequence',
        'pause_turn',
        undefined,
        5,
      ].map(finishReason),
    ).toEqual(['length', 'length', 'tool_calls', 'content_filter', 'stop', 'stop', 'stop', 'stop', 'stop']);
  });
  it('ends a response that carries the JSON tool normally', () => {
    expect(jsonFinishReason('tool_use', 'json_response')).toBe('stop');
    expect(jsonFinishReason('tool_use', undefined)).toBe('tool_calls');
    expect(jsonFinishReason('max_tokens', 'json_response')).toBe('length');
  });
});

describe('toOpenAiUsage', () => {
  it('counts cache creation and reads into the prompt tokens', () => {
    expect(
      toOpenAiUsage({ input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 3, output_tokens: 7 }),
    ).toEqual({
      prompt_tokens: 18,
      completion_tokens: 7,
      total_tokens: 25,
      prompt_tokens_details: { cached_tokens: 3 },
      cache_creation_input_tokens: 5,
      cache_read_input_tokens: 3,
    });
    expect(toOpenAiUsage(undefined)).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(toOpenAiUsage({ input_tokens: '4', output_tokens: 1 })).toMatchObject({ prompt_tokens: 4, total_tokens: 5 });
  });
});

describe('completionId and reportedModel', () => {
  it('derives chatcmpl- ids from message ids', () => {
    expect(completionId('msg_01ABC')).toBe('chatcmpl-01ABC');
    expect(completionId('xmsg_01')).toBe('chatcmpl-xmsg_01');
    expect(completionId('abc_msg_')).toBe('chatcmpl-abc_msg_');
    const before = Date.now();
    const made = completionId(undefined);
    expect(made).toMatch(/^chatcmpl-[0-9a-z]+$/);
    expect(parseInt(made.slice(9), 36)).toBeGreaterThanOrEqual(before);
  });
  it('names the reported model, else the fallback', () => {
    expect(reportedModel('claude-x-2025', 'f')).toBe('claude-x-2025');
    expect(reportedModel('', 'f')).toBe('f');
    expect(reportedModel(5, 'f')).toBe('f');
  });
});

describe('toChatCompletion', () => {
  const message = {
    id: 'msg_1',
    model: 'claude-sonnet-4-5-20250929',
    stop_reason: 'tool_use',
    usage: { input_tokens: 2, output_tokens: 3 },
    content: [
      { type: 'thinking', thinking: 'hmm', signature: 's', extra: 1 },
      { type: 'redacted_thinking', data: 'd', extra: 1 },
      { type: 'text', text: 'Hello ' },
      { type: 'text' },
      { type: 'text', text: 'world' },
      { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
      { type: 'tool_use', id: 't2', name: 'g' },
      { type: 'server_tool_use', id: 'x' },
    ],
  };
  it('builds an OpenAI chat completion with content_blocks when not strict', () => {
    expect(toChatCompletion(message, { strict: false, model: 'm', created: 42 })).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 42,
      model: 'claude-sonnet-4-5-20250929',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Hello world',
            refusal: null,
            tool_calls: [
              { id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
              { id: 't2', type: 'function', function: { name: 'g', arguments: '{}' } },
            ],
            content_blocks: [
              { type: 'thinking', thinking: 'hmm', signature: 's' },
              { type: 'redacted_thinking', data: 'd' },
              { type: 'text', text: 'Hello ' },
              { type: 'text' },
              { type: 'text', text: 'world' },
              { type: 'server_tool_use', id: 'x' },
            ],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: toOpenAiUsage({ input_tokens: 2, output_tokens: 3 }),
    });
  });
  it('leaves content_blocks out when strict, and content null without text', () => {
    const c = toChatCompletion(
      { content: [{ type: 'thinking', thinking: 'x' }] },
      { strict: true, model: 'm', created: 1 },
    ) as unknown as Completion;
    expect(c.choices[0].message).toEqual({ role: 'assistant', content: null, refusal: null });
    expect(c.model).toBe('m');
    expect(c.choices[0].finish_reason).toBe('stop');
    expect(c.usage.total_tokens).toBe(0);
    const empty = toChatCompletion({ content: 'x' }, { strict: false, model: 'm' }) as unknown as Completion;
    expect(empty.choices[0].message).toEqual({ role: 'assistant', content: null, refusal: null, content_blocks: [] });
    expect(Math.abs(empty.created - Date.now() / 1000)).toBeLessThan(2);
  });
  it('turns the JSON tool into the message content', () => {
    const json = {
      content: [
        { type: 'tool_use', id: 't', name: 'json_response', input: { answer: 1 } },
        { type: 'tool_use', id: 'u', name: 'json_response' },
      ],
      stop_reason: 'tool_use',
    };
    const loose = toChatCompletion(json, {
      strict: false,
      model: 'm',
      jsonTool: 'json_response',
    }) as unknown as Completion;
    expect(loose.choices[0].message).toEqual({
      role: 'assistant',
      content: '{"answer":1}{}',
      refusal: null,
      content_blocks: [
        { type: 'text', text: '{"answer":1}' },
        { type: 'text', text: '{}' },
      ],
    });
    expect(loose.choices[0].finish_reason).toBe('stop');
    const strict = toChatCompletion(json, {
      strict: true,
      model: 'm',
      jsonTool: 'json_response',
    }) as unknown as Completion;
    expect(strict.choices[0].message).toEqual({ role: 'assistant', content: '{"answer":1}{}', refusal: null });
    const other = toChatCompletion(json, { strict: true, model: 'm', jsonTool: 'other' }) as unknown as Completion;
    expect(other.choices[0].message.tool_calls).toHaveLength(2);
  });
});

describe('toOpenAiError', () => {
  it('maps Anthropic error types and keeps the message', () => {
    const cases: [string, string][] = [
      ['invalid_request_error', 'invalid_request_error'],
      ['authentication_error', 'authentication_error'],
      ['permission_error', 'permission_error'],
      ['not_found_error', 'not_found_error'],
      ['request_too_large', 'invalid_request_error'],
      ['rate_limit_error', 'rate_limit_error'],
      ['api_error', 'api_error'],
      ['overloaded_error', 'api_error'],
      ['timeout_error', 'timeout_error'],
    ];
    for (const [anthropic, openai] of cases)
      expect(toOpenAiError(400, { error: { type: anthropic, message: 'm' } })).toEqual({
        error: { message: 'm', type: openai, param: null, code: anthropic },
      });
  });
  it('falls back on the status without a known type or message', () => {
    expect(toOpenAiError(429, undefined)).toEqual({
      error: {
        message: 'The provider answered with status 429.',
        type: 'rate_limit_error',
        param: null,
        code: 'upstream_429',
      },
    });
    expect(toOpenAiError(500, 'x').error).toMatchObject({ type: 'api_error', code: 'upstream_500' });
    expect(toOpenAiError(499, null).error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_499' });
    expect(toOpenAiError(503, { error: null }).error).toMatchObject({ type: 'api_error', code: 'upstream_503' });
    expect(toOpenAiError(400, { error: { type: 'weird', message: 5 } }).error).toEqual({
      message: 'The provider answered with status 400.',
      type: 'invalid_request_error',
      param: null,
      code: 'weird',
    });
    expect(toOpenAiError(400, { error: 'text' }).error.code).toBe('upstream_400');
    expect(toOpenAiError(400, { error: { message: 'only' } }).error).toMatchObject({
      message: 'only',
      code: 'upstream_400',
    });
  });
});

describe('ChatStreamTranslator', () => {
  const frames = (out: string) =>
    out
      .split('\n\n')
      .filter(Boolean)
      .map((f) => (f === 'data: [DONE]' ? '[DONE]' : JSON.parse(f.replace(/^data: /, ''))));
  const deltas = (out: string) => frames(out).map((f) => (f === '[DONE]' ? f : (f.choices?.[0]?.delta ?? f)));
  const start = (
    t: ChatStreamTranslator,
    message: object = { id: 'msg_9', model: 'claude-r', usage: { input_tokens: 5 } },
  ) => t.push('message_start', JSON.stringify({ type: 'message_start', message }));
  const push = (t: ChatStreamTranslator, type: string, body: object) => t.push(type, JSON.stringify({ type, ...body }));

  it('streams text with the reported model and id, then a finish chunk, usage and [DONE]', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: true, model: 'm', created: 7 });
    expect(t.reportedModel).toBe('m');
    const first = frames(start(t));
    expect(first).toEqual([
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 7,
        model: 'claude-r',
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      },
    ]);
    expect(t.reportedModel).toBe('claude-r');
    expect(push(t, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } })).toBe('');
    expect(deltas(push(t, 'content_block_start', { index: 1, content_block: { type: 'text', text: 'Hi' } }))).toEqual([
      { content: 'Hi' },
    ]);
    expect(deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' there' } }))).toEqual(
      [{ content: ' there' }],
    );
    expect(deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'text_delta' } }))).toEqual([
      { content: '' },
    ]);
    expect(t.push('ping', '{"type":"ping"}')).toBe('');
    expect(push(t, 'message_delta', { delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 9 } })).toBe('');
    expect(push(t, 'message_delta', { delta: {} })).toBe('');
    expect(t.reportedUsage).toEqual({ input_tokens: 5, output_tokens: 9 });
    expect(t.done).toBe(false);
    const end = frames(push(t, 'message_stop', {}));
    expect(end[0].choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }]);
    expect(end[1]).toEqual({
      id: 'chatcmpl-9',
      object: 'chat.completion.chunk',
      created: 7,
      model: 'claude-r',
      choices: [],
      usage: toOpenAiUsage({ input_tokens: 5, output_tokens: 9 }),
    });
    expect(end[2]).toBe('[DONE]');
    expect(end).toHaveLength(3);
    expect(t.done).toBe(true);
    expect(push(t, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'late' } })).toBe('');
    expect(t.abortFrame('x')).toBe('');
  });

  it('adds content_blocks when not strict: text, thinking, signatures and redacted thinking', () => {
    const t = new ChatStreamTranslator({ strict: false, includeUsage: false, model: 'm', created: 1 });
    start(t, {});
    expect(t.reportedModel).toBe('m');
    expect(
      deltas(push(t, 'content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } })),
    ).toEqual([]);
    expect(
      deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } })),
    ).toEqual([{ content_blocks: [{ index: 0, delta: { type: 'thinking', thinking: 'hmm' } }] }]);
    expect(
      deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig' } })),
    ).toEqual([{ content_blocks: [{ index: 0, delta: { type: 'signature', signature: 'sig' } }] }]);
    expect(
      deltas(
        push(t, 'content_block_start', { index: 1, content_block: { type: 'redacted_thinking', data: 'opaque' } }),
      ),
    ).toEqual([{ content_blocks: [{ index: 1, delta: { type: 'redacted_thinking', data: 'opaque' } }] }]);
    expect(deltas(push(t, 'content_block_start', { index: 2, content_block: { type: 'text', text: 'a' } }))).toEqual([
      { content: 'a', content_blocks: [{ index: 2, delta: { type: 'text', text: 'a' } }] },
    ]);
    expect(deltas(push(t, 'content_block_delta', { index: 2, delta: { type: 'other_delta' } }))).toEqual([]);
    expect(push(t, 'content_block_start', { index: 3, content_block: { type: 'server_tool_use' } })).toBe('');
    expect(push(t, 'content_block_start', { index: 4 })).toBe('');
    const end = frames(push(t, 'message_stop', {}));
    expect(end).toHaveLength(2);
    expect(end[0].choices[0].finish_reason).toBe('stop');
    expect(end[0].id).toMatch(/^chatcmpl-[0-9a-z]+$/);
  });

  it('drops thinking, signatures and redacted thinking when strict', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    start(t);
    push(t, 'content_block_start', { index: 0, content_block: { type: 'thinking' } });
    expect(push(t, 'content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'x' } })).toBe('');
    expect(push(t, 'content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'x' } })).toBe('');
    expect(push(t, 'content_block_start', { index: 1, content_block: { type: 'redacted_thinking', data: 'x' } })).toBe(
      '',
    );
  });

  it('streams tool calls with their own indexes and argument pieces', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    start(t);
    expect(
      deltas(
        push(t, 'content_block_start', {
          index: 0,
          content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} },
        }),
      ),
    ).toEqual([{ tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '' } }] }]);
    expect(
      deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"a"' } })),
    ).toEqual([{ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }]);
    expect(deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta' } }))).toEqual([
      { tool_calls: [{ index: 0, function: { arguments: '' } }] },
    ]);
    expect(
      deltas(push(t, 'content_block_start', { index: 1, content_block: { type: 'tool_use', id: 't2', name: 'g' } }))[0]
        .tool_calls[0].index,
    ).toBe(1);
    expect(
      deltas(push(t, 'content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '1' } }))[0]
        .tool_calls[0].index,
    ).toBe(1);
    // a delta for a block never started, or not a tool, is dropped
    expect(push(t, 'content_block_delta', { index: 7, delta: { type: 'input_json_delta', partial_json: 'x' } })).toBe(
      '',
    );
    push(t, 'content_block_start', { index: 2, content_block: { type: 'text' } });
    expect(push(t, 'content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: 'x' } })).toBe(
      '',
    );
    push(t, 'message_delta', { delta: { stop_reason: 'tool_use' } });
    expect(frames(push(t, 'message_stop', {}))[0].choices[0].finish_reason).toBe('tool_calls');
  });

  it('streams the JSON tool as content and finishes with stop', () => {
    const t = new ChatStreamTranslator({ strict: false, includeUsage: false, model: 'm', jsonTool: 'json_response' });
    start(t);
    expect(
      push(t, 'content_block_start', { index: 0, content_block: { type: 'tool_use', id: 't', name: 'json_response' } }),
    ).toBe('');
    expect(
      deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":' } })),
    ).toEqual([{ content: '{"a":', content_blocks: [{ index: 0, delta: { type: 'text', text: '{"a":' } }] }]);
    expect(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '' } })).toBe(
      '',
    );
    expect(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta' } })).toBe('');
    expect(
      deltas(
        push(t, 'content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'u', name: 'other' } }),
      )[0].tool_calls[0],
    ).toMatchObject({ index: 0, id: 'u' });
    push(t, 'message_delta', { delta: { stop_reason: 'tool_use' } });
    expect(frames(push(t, 'message_stop', {}))[0].choices[0].finish_reason).toBe('stop');
  });

  it('ends with an error frame on an error event, unreadable data, or an upstream that stops early', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    expect(
      frames(t.push('error', JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } }))),
    ).toEqual([{ error: { message: 'busy', type: 'api_error', param: null, code: 'overloaded_error' } }]);
    expect(t.done).toBe(true);
    expect(push(t, 'message_stop', {})).toBe('');
    for (const data of ['not json', '[]', 'null', '5']) {
      const u = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
      expect(frames(u.push('content_block_delta', data))).toEqual([
        {
          error: {
            message: 'The provider sent an unreadable stream event.',
            type: 'api_error',
            param: null,
            code: 'api_error',
          },
        },
      ]);
      expect(u.done).toBe(true);
    }
    const v = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    expect(frames(v.abortFrame('cut'))).toEqual([
      { error: { message: 'cut', type: 'api_error', param: null, code: 'api_error' } },
    ]);
    expect(v.abortFrame('again')).toBe('');
  });

  it('dispatches on the event name when the payload has no type, and ignores unknown events', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: true, model: 'm', created: 3 });
    expect(t.push('message_start', JSON.stringify({ message: { id: 'msg_x' } }))).toContain('"id":"chatcmpl-x"');
    expect(t.push('whatever', '{}')).toBe('');
    expect(t.push('message_start', '{"type":"unknown"}')).toBe('');
    expect(t.push('message_delta', JSON.stringify({ usage: { output_tokens: 2 } }))).toBe('');
    expect(t.reportedUsage).toEqual({ output_tokens: 2 });
    const end = frames(t.push('message_stop', '{}'));
    expect(end[1].usage).toMatchObject({ completion_tokens: 2 });
    expect(end[1].created).toBe(3);
  });

  it('uses the current time and a generated id before message_start', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    const [chunk] = frames(push(t, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x' } }));
    expect(chunk.id).toMatch(/^chatcmpl-[0-9a-z]+$/);
    expect(Math.abs(chunk.created - Date.now() / 1000)).toBeLessThan(2);
    expect(chunk.model).toBe('m');
    const u = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    const [started] = frames(start(u, { id: 'msg_z' }));
    expect(Math.abs(started.created - Date.now() / 1000)).toBeLessThan(2);
    expect(u.reportedUsage).toEqual({});
  });

  it('converts a plain text delta as it arrives, without parsing it or serialising its text again', () => {
    const plain = '{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Hi é ☃ there"}}';
    const translator = (strict: boolean) => {
      const t = new ChatStreamTranslator({ strict, includeUsage: false, model: 'm', created: 1 });
      start(t, { id: 'msg_1', model: 'm' });
      return t;
    };
    const [t, s, named] = [translator(false), translator(true), translator(false)];
    let expected = '';
    const parse = jest.spyOn(JSON, 'parse');
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      // only a content_block_delta event takes the quick way: the same chunk through JSON.parse
      expected = named.push('x', plain);
      expect(parse).toHaveBeenCalledTimes(1);
      parse.mockClear();
      stringify.mockClear();
      expect(t.push('content_block_delta', plain)).toBe(expected);
      expect(s.push('content_block_delta', plain)).toBe(
        'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi é ☃ there"},"logprobs":null,"finish_reason":null}]}\n\n',
      );
      expect(parse).not.toHaveBeenCalled();
      expect(stringify).not.toHaveBeenCalled();
      // anything else (an escape, another field order) is parsed
      t.push(
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\nb"}}',
      );
      expect(parse).toHaveBeenCalledTimes(1);
      // a text block's first text: only the text is serialised, not the chunk's objects
      stringify.mockClear();
      expect(deltas(push(s, 'content_block_start', { index: 1, content_block: { type: 'text', text: 'a"' } }))).toEqual(
        [{ content: 'a"' }],
      );
      expect(stringify.mock.calls.slice(1)).toEqual([['a"']]);
    } finally {
      parse.mockRestore();
      stringify.mockRestore();
    }
    expect(deltas(expected)).toEqual([
      { content: 'Hi é ☃ there', content_blocks: [{ index: 3, delta: { type: 'text', text: 'Hi é ☃ there' } }] },
    ]);
  });

  it('ignores ping events whatever their data', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    expect(t.push('ping', 'not json')).toBe('');
    expect(t.push('ping', '')).toBe('');
    expect(t.done).toBe(false);
  });

  it('keeps the stop reason and the usage when a later message_delta has none', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    push(t, 'message_delta', { delta: { stop_reason: 'max_tokens' } });
    push(t, 'message_delta', { delta: {}, usage: { output_tokens: 1 } });
    push(t, 'message_delta', { usage: { output_tokens: 2 } });
    const usage = t.reportedUsage;
    push(t, 'message_delta', { delta: {} });
    expect(t.reportedUsage).toBe(usage);
    expect(usage).toEqual({ output_tokens: 2 });
    expect(frames(push(t, 'message_stop', {}))[0].choices[0].finish_reason).toBe('length');
  });

  it('writes nothing for a text block that starts without text', () => {
    const t = new ChatStreamTranslator({ strict: false, includeUsage: false, model: 'm' });
    expect(push(t, 'content_block_start', { index: 0, content_block: { type: 'text' } })).toBe('');
    expect(push(t, 'content_block_start', { index: 1, content_block: { type: 'text', text: 5 } })).toBe('');
  });

  it('streams a tool call without a name as a tool call when there is no JSON tool', () => {
    const t = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    expect(deltas(push(t, 'content_block_start', { index: 0, content_block: { type: 'tool_use', id: 't' } }))).toEqual([
      { tool_calls: [{ index: 0, id: 't', type: 'function', function: { arguments: '' } }] },
    ]);
    expect(
      deltas(push(t, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{}' } })),
    ).toEqual([{ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }]);
  });

  it('writes a text delta without an index as valid JSON, its block index null', () => {
    const t = new ChatStreamTranslator({ strict: false, includeUsage: false, model: 'm' });
    expect(deltas(push(t, 'content_block_delta', { delta: { type: 'text_delta', text: 'a' } }))).toEqual([
      { content: 'a', content_blocks: [{ index: null, delta: { type: 'text', text: 'a' } }] },
    ]);
    const s = new ChatStreamTranslator({ strict: true, includeUsage: false, model: 'm' });
    expect(deltas(push(s, 'content_block_delta', { index: 'x', delta: { type: 'text_delta', text: 'b' } }))).toEqual([
      { content: 'b' },
    ]);
  });
});
