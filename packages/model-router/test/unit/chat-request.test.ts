import { createHash } from 'node:crypto';
import {
  RAW_ARGUMENTS_KEY,
  toAnthropicConversion,
  toAnthropicRequest,
} from '../../src/providers/anthropic/chat-request';

const MODEL = 'claude-sonnet-4-5';
const PDF = Buffer.from('%PDF-1.4\n<< /Type /Pages /Count 1 >>\n').toString('base64');
const BIG_PDF = Buffer.from('%PDF-1.4\n<< /Type /Pages /Count 500 >>\n').toString('base64');
const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const convert = (body: Record<string, unknown>, context: Record<string, unknown> = {}) =>
  toAnthropicConversion({ max_tokens: 100, ...body }, { model: MODEL, ...context });
const request = async (body: Record<string, unknown>, context: Record<string, unknown> = {}) =>
  (await convert(body, context)).request;
const user = (content: unknown) => ({ messages: [{ role: 'user', content }] });
async function refusal(body: unknown, context: Record<string, unknown> = {}) {
  try {
    await toAnthropicConversion(body, { model: MODEL, ...context });
  } catch (error) {
    const e = error as { code: string; message: string; param: string | null };
    return { code: e.code, message: e.message, param: e.param };
  }
  throw new Error('accepted');
}
const refused = (body: Record<string, unknown>, context: Record<string, unknown> = {}) =>
  refusal({ max_tokens: 100, ...body }, context);

describe('messages', () => {
  it('converts a plain conversation', async () => {
    expect(
      await request({
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'developer', content: [{ type: 'text', text: 'dev', cache_control: { type: 'ephemeral' } }] },
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: [{ type: 'text', text: 'again', cache_control: 'no' }] },
        ],
      }),
    ).toEqual({
      model: MODEL,
      max_tokens: 100,
      system: [
        { type: 'text', text: 'be brief' },
        { type: 'text', text: 'dev', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
        { role: 'user', content: [{ type: 'text', text: 'again' }] },
      ],
    });
  });
  it('leaves out an empty system text and sends no system without one', async () => {
    const r = await request({
      messages: [
        { role: 'system', content: '' },
        { role: 'user', content: 'x' },
      ],
    });
    expect(r).not.toHaveProperty('system');
  });
  it.each([
    [{ messages: [] }, 'invalid_request', 'messages must be a non-empty array.', 'messages'],
    [{ messages: 'x' }, 'invalid_request', 'messages must be a non-empty array.', 'messages'],
    [{ messages: [null] }, 'invalid_request', 'Each message must be an object.', 'messages[0]'],
    [
      { messages: [{ role: 'system', content: 'x' }] },
      'invalid_request',
      'messages needs at least one user or assistant message.',
      'messages',
    ],
    [
      { messages: [{ role: 'robot', content: 'x' }] },
      'invalid_request',
      'Messages with role "robot" are not supported.',
      'messages[0].role',
    ],
    [
      { messages: [{ role: 'r'.repeat(40), content: 'x' }] },
      'invalid_request',
      `Messages with role "${'r'.repeat(32)}" are not supported.`,
      'messages[0].role',
    ],
    [
      { messages: [{ role: 'user', content: 5 }] },
      'invalid_request',
      'Message content must be a string or an array of parts.',
      'messages[0].content',
    ],
    [
      { messages: [{ role: 'system', content: 5 }] },
      'invalid_request',
      'Message content must be a string or an array of text parts.',
      'messages[0].content',
    ],
    [
      { messages: [{ role: 'system', content: [{ type: 'image_url' }] }] },
      'invalid_request',
      'Only text parts are accepted here.',
      'messages[0].content[0]',
    ],
    [
      { messages: [{ role: 'system', content: [{ type: 'text', text: 1 }] }] },
      'invalid_request',
      'Only text parts are accepted here.',
      'messages[0].content[0]',
    ],
    [
      { messages: [{ role: 'system', content: ['x'] }] },
      'invalid_request',
      'Only text parts are accepted here.',
      'messages[0].content[0]',
    ],
    [{ ...user([{ text: 'x' }]) }, 'invalid_request', 'Each content part needs a "type".', 'messages[0].content[0]'],
    [{ ...user(['x']) }, 'invalid_request', 'Each content part needs a "type".', 'messages[0].content[0]'],
    [{ ...user([{ type: 'text' }]) }, 'invalid_request', 'A text part needs "text".', 'messages[0].content[0].text'],
    [
      { ...user([{ type: 'input_audio' }]) },
      'invalid_request',
      'Content parts of type "input_audio" are not supported.',
      'messages[0].content[0].type',
    ],
    [
      { ...user([{ type: 'a'.repeat(40) }]) },
      'invalid_request',
      `Content parts of type "${'a'.repeat(32)}" are not supported.`,
      'messages[0].content[0].type',
    ],
    [{ n: 2, ...user('x') }, 'invalid_request', 'Only n = 1 is supported.', 'n'],
  ])('refuses %j', async (body, code, message, param) => {
    expect(await refused(body)).toEqual({ code, message, param });
  });
  it('accepts n = 1 or null, and refuses a body that is not an object', async () => {
    await expect(request({ n: 1, ...user('x') })).resolves.toBeDefined();
    await expect(request({ n: null, ...user('x') })).resolves.toBeDefined();
    for (const body of [null, [], 'x'])
      expect(await refusal(body)).toEqual({
        code: 'invalid_request',
        message: 'The request body must be a JSON object.',
        param: 'body',
      });
  });
  it('names ignored fields: the speaker name once', async () => {
    const { ignoredParams } = await convert({
      messages: [
        { role: 'user', content: 'a', name: 'x' },
        { role: 'user', content: 'b', name: 'y' },
        { role: 'user', content: 'c', name: null },
      ],
    });
    expect(ignoredParams).toEqual(['messages[].name']);
    expect((await convert(user('a'))).ignoredParams).toEqual([]);
  });
});

describe('images and documents', () => {
  it('converts image parts (a URL string or object) and keeps cache_control', async () => {
    const r = await request(
      user([
        { type: 'image_url', image_url: PNG, cache_control: { type: 'ephemeral' } },
        { type: 'image_url', image_url: { url: PNG } },
      ]),
    );
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    expect(r.messages[0]?.content).toEqual([{ ...image, cache_control: { type: 'ephemeral' } }, image]);
  });
  it('refuses an image part without a URL', async () => {
    for (const image_url of [undefined, 5, { url: 5 }])
      expect(await refused(user([{ type: 'image_url', image_url }]))).toEqual({
        code: 'invalid_request',
        message: 'An image_url part needs image_url.url.',
        param: 'messages[0].content[0].image_url.url',
      });
  });
  it('turns a PDF data URL into a document block, and refuses one that is not base64', async () => {
    const r = await request(
      user([
        {
          type: 'image_url',
          image_url: { url: `data:application/pdf;base64,${PDF}` },
          cache_control: { type: 'ephemeral' },
        },
      ]),
    );
    expect(r.messages[0]?.content).toEqual([
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF },
        cache_control: { type: 'ephemeral' },
      },
    ]);
    expect(await refused(user([{ type: 'image_url', image_url: { url: 'data:application/pdf,abc' } }]))).toEqual({
      code: 'invalid_request',
      message: 'PDF data URLs must be base64 encoded.',
      param: 'messages[0].content[0].image_url.url',
    });
  });
  it('converts file parts: PDFs (raw base64 or a data URL, by mime_type or media type) and images', async () => {
    const doc = (data: string) => ({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data },
    });
    const r = await request(
      user([
        { type: 'file', file: { file_data: PDF } },
        { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}` } },
        { type: 'file', file: { file_data: PDF, mime_type: 'Application/PDF' }, cache_control: { type: 'ephemeral' } },
        { type: 'file', file: { file_data: 'iVBORw0KGgo=', mime_type: 'image/png' } },
        { type: 'file', file: { file_data: PNG }, cache_control: { type: 'ephemeral' } },
      ]),
    );
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    expect(r.messages[0]?.content).toEqual([
      doc(PDF),
      doc(PDF),
      { ...doc(PDF), cache_control: { type: 'ephemeral' } },
      image,
      { ...image, cache_control: { type: 'ephemeral' } },
    ]);
  });
  it('refuses file parts without data, or of other types', async () => {
    for (const file of [undefined, 'x', { file_id: 'f1' }, { file_data: 5 }])
      expect(await refused(user([{ type: 'file', file }]))).toEqual({
        code: 'invalid_request',
        message: 'A file part needs file.file_data (base64 or a data URL); file ids are not supported.',
        param: 'messages[0].content[0].file.file_data',
      });
    expect(await refused(user([{ type: 'file', file: { file_data: 'abc', mime_type: 'Text/Plain' } }]))).toEqual({
      code: 'invalid_request',
      message: 'Files of type text/plain are not supported; send PDFs or images.',
      param: 'messages[0].content[0].file.mime_type',
    });
  });
  it('refuses images and PDFs for models known not to take them', async () => {
    expect(await refused(user([{ type: 'image_url', image_url: PNG }]), { model: 'claude-2.1' })).toEqual({
      code: 'unsupported_input',
      message: 'The model claude-2.1 does not accept images.',
      param: 'messages',
    });
    expect(await refused(user([{ type: 'file', file: { file_data: PDF } }]), { model: 'claude-3-haiku-1' })).toEqual({
      code: 'unsupported_input',
      message: 'The model claude-3-haiku-1 does not accept PDF documents.',
      param: 'messages',
    });
    await expect(
      request(user([{ type: 'file', file: { file_data: PDF } }]), { model: 'claude-3-5-haiku' }),
    ).resolves.toBeDefined();
    await expect(
      request(user([{ type: 'image_url', image_url: PNG }]), { model: 'claude-3-haiku-1' }),
    ).resolves.toBeDefined();
  });
  it('checks each PDF, in body order, also when a later check fails', async () => {
    expect(
      await refused(
        user([
          { type: 'file', file: { file_data: PDF } },
          { type: 'file', file: { file_data: BIG_PDF } },
        ]),
      ),
    ).toMatchObject({
      code: 'pdf_too_many_pages',
      param: 'messages[0].content[1].file.file_data',
    });
    expect(
      await refused({
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: BIG_PDF } }] }, { role: 'robot' }],
      }),
    ).toMatchObject({
      code: 'pdf_too_many_pages',
      param: 'messages[0].content[0].file.file_data',
    });
    expect(
      await refused({
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: PDF } }] }, { role: 'robot' }],
      }),
    ).toMatchObject({
      code: 'invalid_request',
      param: 'messages[1].role',
    });
  });
});

describe('assistant turns and tools', () => {
  it('sends thinking blocks first, then text, then tool calls', async () => {
    const r = await request({
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: 'text',
          content_blocks: [
            { type: 'text', text: 'ignored' },
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'thinking' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'redacted_thinking' },
          ],
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '' } },
            { id: 'c3', type: 'function', function: { name: 'h', arguments: '[1]' } },
            { id: 'c4', type: 'function', function: { name: 'i', arguments: 'not json' } },
            { id: 'c5', type: 'function', function: { name: 'j', arguments: { b: 2 } } },
            { id: 'c6', type: 'function', function: { name: 'k' } },
            { id: 'c7', type: 'function', function: { name: 'l', arguments: '  ' } },
          ],
        },
      ],
    });
    expect(r.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'thinking', thinking: '', signature: '' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'redacted_thinking', data: '' },
        { type: 'text', text: 'text' },
        { type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } },
        { type: 'tool_use', id: 'c2', name: 'g', input: {} },
        { type: 'tool_use', id: 'c3', name: 'h', input: { [RAW_ARGUMENTS_KEY]: '[1]' } },
        { type: 'tool_use', id: 'c4', name: 'i', input: { _raw_arguments: 'not json' } },
        { type: 'tool_use', id: 'c5', name: 'j', input: { b: 2 } },
        { type: 'tool_use', id: 'c6', name: 'k', input: {} },
        { type: 'tool_use', id: 'c7', name: 'l', input: {} },
      ],
    });
  });
  it('accepts an assistant turn with no content', async () => {
    const r = await request({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, content_blocks: 'x' },
      ],
    });
    expect(r.messages[1]).toEqual({ role: 'assistant', content: [] });
  });
  it.each([
    [{ content_blocks: [5] }, 'content_blocks entries must be objects.', 'messages[1].content_blocks[0]'],
    [{ tool_calls: 'x' }, 'tool_calls must be an array.', 'messages[1].tool_calls'],
    [{ tool_calls: [null] }, 'A tool call needs id and function.name.', 'messages[1].tool_calls[0]'],
    [
      { tool_calls: [{ id: 1, function: { name: 'f' } }] },
      'A tool call needs id and function.name.',
      'messages[1].tool_calls[0]',
    ],
    [
      { tool_calls: [{ id: 'c', function: 'f' }] },
      'A tool call needs id and function.name.',
      'messages[1].tool_calls[0]',
    ],
    [
      { tool_calls: [{ id: 'c', function: { name: 1 } }] },
      'A tool call needs id and function.name.',
      'messages[1].tool_calls[0]',
    ],
  ])('refuses an assistant turn with %j', async (extra, message, param) => {
    expect(
      await refused({
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', ...extra },
        ],
      }),
    ).toEqual({ code: 'invalid_request', message, param });
  });
  it('groups consecutive tool results into one user message', async () => {
    const r = await request({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', tool_calls: [{ id: 'a', function: { name: 'f' } }] },
        { role: 'tool', tool_call_id: 'a', content: 'one' },
        { role: 'tool', tool_call_id: 'b', content: [{ type: 'text', text: 'two' }] },
        { role: 'tool', tool_call_id: 'c' },
        { role: 'user', content: [{ type: 'text', text: 'next' }] },
        { role: 'tool', tool_call_id: 'd', content: 'four' },
        { role: 'user', content: 'plain' },
        { role: 'tool', tool_call_id: 'e', content: 'five' },
      ],
    });
    expect(r.messages.slice(2)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'one' },
          { type: 'tool_result', tool_use_id: 'b', content: [{ type: 'text', text: 'two' }] },
          { type: 'tool_result', tool_use_id: 'c', content: [] },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'next' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'd', content: 'four' }] },
      { role: 'user', content: 'plain' },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'e', content: 'five' }] },
    ]);
    expect(await refused({ messages: [{ role: 'tool', content: 'x' }] })).toEqual({
      code: 'invalid_request',
      message: 'A tool message needs tool_call_id.',
      param: 'messages[0].tool_call_id',
    });
  });
  it('converts tools and tool_choice', async () => {
    const tools = [
      {
        type: 'function',
        function: { name: 'f', description: 'does f', parameters: { type: 'object', properties: { a: {} } } },
        cache_control: { type: 'ephemeral' },
      },
      { type: 'function', function: { name: 'g', description: 5, parameters: 'x' } },
    ];
    const r = await request({ ...user('q'), tools, tool_choice: { type: 'function', function: { name: 'g' } } });
    expect(r.tools).toEqual([
      {
        name: 'f',
        description: 'does f',
        input_schema: { type: 'object', properties: { a: {} } },
        cache_control: { type: 'ephemeral' },
      },
      { name: 'g', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(r.tool_choice).toEqual({ type: 'tool', name: 'g' });
    expect((await request({ ...user('q'), tools, tool_choice: 'auto' })).tool_choice).toEqual({ type: 'auto' });
    expect((await request({ ...user('q'), tools, tool_choice: 'none' })).tool_choice).toEqual({ type: 'none' });
    expect((await request({ ...user('q'), tools, tool_choice: 'required' })).tool_choice).toEqual({ type: 'any' });
    expect((await request({ ...user('q'), tools, parallel_tool_calls: false })).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(
      (await request({ ...user('q'), tools, tool_choice: 'required', parallel_tool_calls: false })).tool_choice,
    ).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    const plain = await request({ ...user('q'), tools: null, tool_choice: null, parallel_tool_calls: true });
    expect(plain).not.toHaveProperty('tools');
    expect(plain).not.toHaveProperty('tool_choice');
  });
  it.each([
    [{ tools: 'x' }, 'tools must be an array.', 'tools'],
    [{ tools: [null] }, 'Each tool needs type "function" and function.name.', 'tools[0]'],
    [
      { tools: [{ type: 'custom', function: { name: 'f' } }] },
      'Each tool needs type "function" and function.name.',
      'tools[0]',
    ],
    [
      { tools: [{ type: 'function', function: 'f' }] },
      'Each tool needs type "function" and function.name.',
      'tools[0]',
    ],
    [
      { tools: [{ type: 'function', function: { name: 1 } }] },
      'Each tool needs type "function" and function.name.',
      'tools[0]',
    ],
    [{ tool_choice: 'any' }, 'tool_choice must be "auto", "none", "required" or a function.', 'tool_choice'],
    [
      { tool_choice: { function: 'f' } },
      'tool_choice must be "auto", "none", "required" or a function.',
      'tool_choice',
    ],
    [
      { tool_choice: { function: { name: 1 } } },
      'tool_choice must be "auto", "none", "required" or a function.',
      'tool_choice',
    ],
    [
      { tool_choice: { type: 'function', function: { name: 'zz' } } },
      'tool_choice names a function that is not in tools.',
      'tool_choice',
    ],
    [
      {
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: { type: 'function', function: { name: 'zz' } },
      },
      'tool_choice names a function that is not in tools.',
      'tool_choice',
    ],
  ])('refuses %j', async (extra, message, param) => {
    expect(await refused({ ...user('q'), ...extra })).toEqual({ code: 'invalid_request', message, param });
  });
});

describe('options', () => {
  it('passes sampling, stop sequences, stream and thinking through', async () => {
    const r = await request({
      ...user('q'),
      max_tokens: 3000,
      temperature: 1,
      stop: ['x'],
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(r).toMatchObject({
      temperature: 1,
      stop_sequences: ['x'],
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    const off = await request({ ...user('q'), stream: false });
    expect(off).not.toHaveProperty('stream');
    expect(off).not.toHaveProperty('stop_sequences');
    expect(off).not.toHaveProperty('thinking');
    expect(await request({ ...user('q'), stream: null })).not.toHaveProperty('stream');
    expect(await refused({ ...user('q'), stream: 'yes' })).toEqual({
      code: 'invalid_request',
      message: 'stream must be a boolean.',
      param: 'stream',
    });
    expect((await request({ ...user('q'), thinking: { type: 'disabled' }, temperature: 0.5 })).thinking).toEqual({
      type: 'disabled',
    });
    expect(
      (
        await refused({
          ...user('q'),
          max_tokens: 3000,
          temperature: 0.5,
          thinking: { type: 'enabled', budget_tokens: 1024 },
        })
      ).param,
    ).toBe('temperature');
  });
  it('refuses forcing a tool while thinking', async () => {
    const base = {
      ...user('q'),
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      tools: [{ type: 'function', function: { name: 'f' } }],
    };
    const message =
      'With extended thinking Anthropic models cannot be forced to call a tool; send tool_choice "auto" or "none".';
    for (const tool_choice of ['required', { type: 'function', function: { name: 'f' } }])
      expect(await refused({ ...base, tool_choice })).toEqual({
        code: 'unsupported_value',
        message,
        param: 'tool_choice',
      });
    expect((await request({ ...base, tool_choice: 'auto' })).tool_choice).toEqual({ type: 'auto' });
    expect((await request({ ...base, thinking: { type: 'disabled' }, tool_choice: 'required' })).tool_choice).toEqual({
      type: 'any',
    });
  });
  it('scopes the end-user label to the caller, preferring safety_identifier', async () => {
    const id = (caller: string, label: string) =>
      createHash('sha256').update(`${caller}\n${label}`).digest('hex').slice(0, 32);
    expect((await request({ ...user('q'), user: 'u1' }, { callerId: 'c' })).metadata).toEqual({
      user_id: id('c', 'u1'),
    });
    expect((await request({ ...user('q'), user: 'u1' })).metadata).toEqual({ user_id: id('', 'u1') });
    const both = await convert({ ...user('q'), user: 'u1', safety_identifier: 's1' }, { callerId: 'c' });
    expect(both.request.metadata).toEqual({ user_id: id('c', 's1') });
    expect(both.ignoredParams).toEqual(['user']);
    expect((await convert({ ...user('q'), safety_identifier: 's1' })).ignoredParams).toEqual([]);
    expect((await request({ ...user('q'), user: null, safety_identifier: null })).metadata).toBeUndefined();
    expect(await refused({ ...user('q'), user: 5 })).toEqual({
      code: 'invalid_request',
      message: 'user must be a string.',
      param: 'user',
    });
    expect(await refused({ ...user('q'), safety_identifier: 5 })).toEqual({
      code: 'invalid_request',
      message: 'safety_identifier must be a string.',
      param: 'safety_identifier',
    });
  });
});

describe('response_format', () => {
  const schema = { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: {} } } };
  it('forces one tool that carries the JSON', async () => {
    const c = await convert({ ...user('q'), response_format: schema });
    expect(c.jsonTool).toBe('answer');
    expect(c.request.tools).toEqual([
      {
        name: 'answer',
        description: 'Give the complete answer as the input of this tool, following its schema.',
        input_schema: { type: 'object', properties: {} },
      },
    ]);
    expect(c.request.tool_choice).toEqual({ type: 'tool', name: 'answer' });
    const withNone = await request({
      ...user('q'),
      response_format: schema,
      tools: [{ type: 'function', function: { name: 'f' } }],
      tool_choice: 'none',
    });
    expect((withNone.tools as { name: string }[]).map((t) => t.name)).toEqual(['f', 'answer']);
    expect(withNone.tool_choice).toEqual({ type: 'tool', name: 'answer' });
    expect(await convert({ ...user('q'), response_format: { type: 'text' } })).not.toHaveProperty('jsonTool');
    expect((await request({ ...user('q'), response_format: schema, tools: [] })).tools).toHaveLength(1);
  });
  it('refuses it with thinking, with callable tools, or with a tool of the same name', async () => {
    expect(
      await refused({
        ...user('q'),
        max_tokens: 3000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        response_format: schema,
      }),
    ).toEqual({
      code: 'unsupported_response_format',
      message:
        'response_format cannot be combined with extended thinking (thinking or reasoning_effort) for Anthropic models: Anthropic does not force a tool while thinking.',
      param: 'response_format',
    });
    for (const tool_choice of [undefined, 'auto'])
      expect(
        await refused({
          ...user('q'),
          response_format: schema,
          tools: [{ type: 'function', function: { name: 'f' } }],
          tool_choice,
        }),
      ).toEqual({
        code: 'unsupported_response_format',
        message:
          'response_format together with tools the model may call is not supported for Anthropic models; send tool_choice "none", or describe the answer as a tool.',
        param: 'response_format',
      });
    expect(
      await refused({
        ...user('q'),
        response_format: schema,
        tools: [{ type: 'function', function: { name: 'answer' } }],
        tool_choice: 'none',
      }),
    ).toEqual({
      code: 'unsupported_response_format',
      message: 'response_format\'s name "answer" is also the name of a tool; rename one of them.',
      param: 'response_format.json_schema.name',
    });
  });
});

describe('toAnthropicRequest', () => {
  it('is the conversion request', async () => {
    expect(await toAnthropicRequest({ max_tokens: 5, ...user('q') }, { model: 'm' })).toEqual({
      model: 'm',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'q' }],
    });
  });
});
