/**
 * The Responses API face of the chat conversion: an OpenAI Responses request (with the items of the
 * response it continues) lowered to the chat completion body that {@link toAnthropicConversion}
 * converts, so both routes share one conversion core (system, images, PDFs, tools, tool_choice,
 * structured output, reasoning effort, sampling). What only the Responses API has (items, reasoning
 * items, `store`, `include`) is read here. See MAPPING.md.
 */
import {
  InvalidRequestError,
  ModelRouterError,
  UnsupportedParameterError,
  UnsupportedValueError,
} from '../../core/errors';
import { isJsonString } from '../../core/raw-json-string';
import type { ThinkingBlock } from '../../core/reasoning-seal';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown): boolean => v !== undefined && v !== null;

function invalid(message: string, param: string): never {
  throw new InvalidRequestError(message, { param });
}

/** Most input items one request may carry, the continued response's included. */
export const MAX_RESPONSE_ITEMS = 10_000;

/** The include value that asks for reasoning items' `encrypted_content`. */
export const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/**
 * Top-level fields the Responses face reads or refuses; any other present field is dropped and
 * named in `x-gateway-ignored-params` (`service_tier`, `top_logprobs`, `prompt_cache_key`,
 * `max_tool_calls`, `stream_options`, …).
 */
const USED_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'reasoning',
  'metadata',
  'stream',
  'store',
  'previous_response_id',
  'include',
  'user',
  'safety_identifier',
  'background',
  'conversation',
  'prompt',
  'truncation',
]);

/** A Responses request read and lowered to a chat completion body. */
export interface ResponsesLowering {
  /** The chat completion body the shared conversion takes. */
  chatBody: Json;
  /** The request path of each chat message, for error `param`s (`input[3]`, `instructions`). */
  messageParams: string[];
  /** Request fields received but not used. */
  ignoredParams: string[];
}

/** What the lowering needs besides the body. */
export interface ResponsesLoweringContext {
  /** The items of the continued response (its input, then its output), before this request's input. */
  previousItems?: readonly Json[];
  /** Opens a reasoning item's `encrypted_content` (throws `400 invalid_encrypted_content`). */
  openReasoning(sealed: unknown, param: string): ThinkingBlock[];
}

/** The request's own fields the face checks before anything else (refusals of what cannot be honoured). */
export function refuseUnsupportedResponsesFields(body: Json): void {
  if (body.background === true) {
    throw new UnsupportedValueError(
      'background mode is not available: the gateway answers while the request is open; send background false or leave it out.',
      { param: 'background' },
    );
  }
  if (present(body.conversation)) {
    throw new UnsupportedParameterError('conversation is not supported; continue with previous_response_id.', {
      param: 'conversation',
    });
  }
  if (present(body.prompt)) {
    throw new UnsupportedParameterError(
      "OpenAI's stored prompts are not available; send instructions and input (or use /v1/prompts/<id>/completions).",
      { param: 'prompt' },
    );
  }
  if (present(body.truncation) && body.truncation !== 'disabled') {
    throw new UnsupportedValueError(
      'truncation "auto" is not supported: the gateway never drops input; send "disabled".',
      {
        param: 'truncation',
      },
    );
  }
}

/** The `include` list, checked; true when it asks for reasoning items' `encrypted_content`. */
export function includesEncryptedReasoning(body: Json, ignored: string[]): boolean {
  if (!present(body.include)) return false;
  if (!Array.isArray(body.include) || body.include.some((v) => typeof v !== 'string'))
    invalid('include must be an array of strings.', 'include');
  for (const value of body.include as string[]) {
    if (value !== ENCRYPTED_REASONING && !ignored.includes(`include:${value.slice(0, 64)}`))
      ignored.push(`include:${value.slice(0, 64)}`);
  }
  return (body.include as string[]).includes(ENCRYPTED_REASONING);
}

/** The values of `reasoning.summary` OpenAI takes; each asks for the reasoning items' `summary`. */
const SUMMARY_VALUES: ReadonlySet<unknown> = new Set(['auto', 'concise', 'detailed']);

/**
 * True when the request asks for reasoning summaries (`reasoning.summary` set): reasoning items then
 * carry the provider's thinking text in `summary` (and the stream its `response.reasoning_summary_*`
 * events); otherwise `summary` stays empty, as OpenAI leaves it. Anthropic has one level of detail:
 * `auto`, `concise` and `detailed` give the same text.
 */
export function readReasoningSummary(body: Json): boolean {
  if (!isObject(body.reasoning) || !present(body.reasoning.summary)) return false;
  if (!SUMMARY_VALUES.has(body.reasoning.summary)) {
    throw new UnsupportedValueError('reasoning.summary must be "auto", "concise" or "detailed" (or left out).', {
      param: 'reasoning.summary',
    });
  }
  return true;
}

/** Lowers a Responses request to a chat completion body. Throws ModelRouterError subclasses only. */
export function lowerResponsesRequest(body: Json, context: ResponsesLoweringContext): ResponsesLowering {
  const ignored: string[] = [];
  for (const field of Object.keys(body)) if (!USED_FIELDS.has(field) && present(body[field])) ignored.push(field);
  const messages: Json[] = [];
  const params: string[] = [];
  if (present(body.instructions)) {
    if (typeof body.instructions !== 'string') invalid('instructions must be a string.', 'instructions');
    messages.push({ role: 'system', content: body.instructions });
    params.push('instructions');
  }
  const builder = new MessageBuilder(messages, params, context);
  const previous = context.previousItems ?? [];
  previous.forEach((item, index) => builder.add(item, `previous_response_id(item ${index})`));
  if (typeof body.input === 'string') {
    builder.add({ type: 'message', role: 'user', content: body.input }, 'input');
  } else if (Array.isArray(body.input)) {
    if (previous.length + body.input.length > MAX_RESPONSE_ITEMS)
      invalid(`A response takes at most ${MAX_RESPONSE_ITEMS} input items, with those it continues.`, 'input');
    body.input.forEach((item, index) => builder.add(item, `input[${index}]`));
  } else {
    invalid('input must be a string or an array of items.', 'input');
  }
  builder.finish();

  const chatBody: Json = { model: body.model, messages };
  if (present(body.max_output_tokens)) chatBody.max_completion_tokens = body.max_output_tokens;
  for (const field of ['temperature', 'top_p', 'parallel_tool_calls', 'user', 'safety_identifier', 'stream']) {
    if (present(body[field])) chatBody[field] = body[field];
  }
  if (present(body.tools)) chatBody.tools = lowerTools(body.tools);
  if (present(body.tool_choice)) chatBody.tool_choice = lowerToolChoice(body.tool_choice);
  if (present(body.text)) {
    if (!isObject(body.text)) invalid('text must be an object.', 'text');
    if (present(body.text.format)) chatBody.response_format = lowerFormat(body.text.format);
    if (present(body.text.verbosity)) ignored.push('text.verbosity');
  }
  if (present(body.reasoning)) {
    if (!isObject(body.reasoning)) invalid('reasoning must be an object.', 'reasoning');
    if (present(body.reasoning.effort)) chatBody.reasoning_effort = body.reasoning.effort;
    readReasoningSummary(body);
  }
  if (present(body.metadata)) {
    const metadata = body.metadata;
    if (
      !isObject(metadata) ||
      Object.keys(metadata).length > 16 ||
      Object.values(metadata).some((v) => typeof v !== 'string')
    )
      invalid('metadata must be an object of at most 16 string values.', 'metadata');
  }
  return { chatBody, messageParams: params, ignoredParams: ignored };
}

function lowerTools(tools: unknown): Json[] {
  if (!Array.isArray(tools)) invalid('tools must be an array.', 'tools');
  return tools.map((tool, index) => {
    if (!isObject(tool)) invalid('Each tool must be an object.', `tools[${index}]`);
    if (tool.type !== 'function') {
      throw new UnsupportedValueError(
        `Tools of type "${String(tool.type).slice(0, 40)}" are OpenAI's built-in tools, which Anthropic models do not run through this gateway; ` +
          'send tools of type "function" (or use /v1/messages with Anthropic\'s own server tools).',
        { param: `tools[${index}].type` },
      );
    }
    if (typeof tool.name !== 'string') invalid('A function tool needs a name.', `tools[${index}].name`);
    const fn: Json = { name: tool.name };
    if (typeof tool.description === 'string') fn.description = tool.description;
    if (isObject(tool.parameters)) fn.parameters = tool.parameters;
    return { type: 'function', function: fn };
  });
}

function lowerToolChoice(choice: unknown): unknown {
  if (typeof choice === 'string') return choice;
  if (isObject(choice) && choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  throw new UnsupportedValueError(
    'tool_choice must be "auto", "none", "required" or {"type":"function","name":…}; built-in tools and allowed_tools are not supported.',
    { param: 'tool_choice' },
  );
}

function lowerFormat(format: unknown): Json {
  if (!isObject(format) || typeof format.type !== 'string')
    invalid('text.format must be an object with a "type".', 'text.format');
  if (format.type !== 'json_schema') return { type: format.type };
  const spec: Json = {};
  for (const field of ['name', 'schema', 'description', 'strict'])
    if (present(format[field])) spec[field] = format[field];
  return { type: 'json_schema', json_schema: spec };
}

/**
 * Builds chat messages from Responses items: consecutive assistant-side items (reasoning,
 * assistant messages, function calls) make one assistant message, whose `content_blocks` carry the
 * opened thinking blocks (sent back first by the shared conversion).
 */
class MessageBuilder {
  private assistant: Json | undefined;

  constructor(
    private readonly messages: Json[],
    private readonly params: string[],
    private readonly context: ResponsesLoweringContext,
  ) {}

  private push(message: Json, param: string): void {
    this.messages.push(message);
    this.params.push(param);
    this.assistant = message.role === 'assistant' ? message : undefined;
  }

  private openAssistant(param: string): Json {
    if (this.assistant === undefined) this.push({ role: 'assistant', content: [] }, param);
    return this.assistant as Json;
  }

  add(item: unknown, param: string): void {
    if (!isObject(item)) invalid('Each input item must be an object.', param);
    const type = item.type ?? (present(item.role) ? 'message' : undefined);
    switch (type) {
      case 'message':
        return this.message(item, param);
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string')
          invalid('A function_call item needs call_id and name.', param);
        const assistant = this.openAssistant(param);
        const calls = (assistant.tool_calls ??= []) as Json[];
        calls.push({
          id: item.call_id,
          type: 'function',
          function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '' },
        });
        return;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string') invalid('A function_call_output item needs call_id.', `${param}.call_id`);
        const output = item.output;
        const content =
          typeof output === 'string'
            ? output
            : Array.isArray(output)
              ? output.map((part) =>
                  isObject(part) && part.type === 'input_text' ? { type: 'text', text: part.text } : part,
                )
              : invalid(
                  'function_call_output.output must be a string or an array of input_text parts.',
                  `${param}.output`,
                );
        this.push({ role: 'tool', tool_call_id: item.call_id, content }, param);
        return;
      }
      case 'reasoning': {
        // A reasoning item without encrypted_content carries nothing Anthropic can take back.
        if (!present(item.encrypted_content)) return;
        const blocks = this.context.openReasoning(item.encrypted_content, `${param}.encrypted_content`);
        const assistant = this.openAssistant(param);
        ((assistant.content_blocks ??= []) as Json[]).push(...blocks);
        return;
      }
      case 'item_reference':
        return invalid(
          'An item_reference must name an output item of a stored response of this caller.',
          `${param}.id`,
        );
      default:
        throw new UnsupportedValueError(
          `Input items of type "${String(type).slice(0, 40)}" are not supported; send message, function_call, function_call_output or reasoning items.`,
          { param: `${param}.type` },
        );
    }
  }

  private message(item: Json, param: string): void {
    const role = item.role;
    const content = item.content;
    if (role === 'assistant') {
      const assistant = this.openAssistant(param);
      const parts = assistant.content as Json[];
      if (typeof content === 'string') parts.push({ type: 'text', text: content });
      else if (Array.isArray(content)) {
        content.forEach((part, index) => {
          if (
            isObject(part) &&
            (part.type === 'output_text' || part.type === 'input_text') &&
            typeof part.text === 'string'
          )
            parts.push({ type: 'text', text: part.text });
          else if (isObject(part) && part.type === 'refusal' && typeof part.refusal === 'string')
            parts.push({ type: 'text', text: part.refusal });
          else invalid('Assistant messages take output_text and refusal parts.', `${param}.content[${index}]`);
        });
      } else invalid('Message content must be a string or an array of parts.', `${param}.content`);
      return;
    }
    if (role !== 'user' && role !== 'system' && role !== 'developer')
      invalid('Message role must be user, assistant, system or developer.', `${param}.role`);
    if (typeof content === 'string') {
      this.push({ role, content }, param);
      return;
    }
    if (!Array.isArray(content)) invalid('Message content must be a string or an array of parts.', `${param}.content`);
    this.push({ role, content: content.map((part, index) => lowerPart(part, `${param}.content[${index}]`)) }, param);
  }

  /** Ends the last assistant message: one without any text keeps `content` null (tool calls only). */
  finish(): void {
    for (const message of this.messages) {
      if (message.role === 'assistant' && Array.isArray(message.content) && message.content.length === 0)
        message.content = null;
    }
  }
}

function lowerPart(part: unknown, param: string): unknown {
  if (!isObject(part)) return part;
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'input_image': {
      if (!isJsonString(part.image_url)) {
        return invalid(
          'An input_image needs image_url as a base64 data URL; file ids are not supported.',
          `${param}.image_url`,
        );
      }
      return { type: 'image_url', image_url: { url: part.image_url } };
    }
    case 'input_file': {
      if (!isJsonString(part.file_data)) {
        return invalid(
          'An input_file needs file_data (base64 or a data URL); file ids and file URLs are not supported.',
          `${param}.file_data`,
        );
      }
      return { type: 'file', file: { file_data: part.file_data } };
    }
    default:
      return invalid(
        `Content parts of type "${String(part.type).slice(0, 32)}" are not supported; send input_text, input_image or input_file.`,
        `${param}.type`,
      );
  }
}

/** The chat field names the shared conversion reports, as the Responses request names them. */
const FIELD_NAMES: readonly [string, string][] = [
  ['max_completion_tokens', 'max_output_tokens'],
  ['max_tokens', 'max_output_tokens'],
  ['response_format.json_schema', 'text.format'],
  ['response_format', 'text.format'],
  ['reasoning_effort', 'reasoning.effort'],
];

/** `param` of an error of the shared conversion, named as in the Responses request. */
export function responsesParam(param: string, messageParams: readonly string[]): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(param);
  if (message) {
    const rest = (message[2] as string)
      .replace(/\.image_url\.url$/, '.image_url')
      .replace(/\.file\.(file_data|mime_type)$/, '.file_data');
    return `${messageParams[Number(message[1])] ?? 'input'}${rest}`;
  }
  if (param === 'messages') return 'input';
  for (const [chat, responses] of FIELD_NAMES) {
    if (param === chat || param.startsWith(`${chat}.`)) return responses + param.slice(chat.length);
  }
  return param;
}

/** Renames the `param` of a conversion error to the Responses request's field; returns the error. */
export function renameParam(error: unknown, messageParams: readonly string[]): unknown {
  if (error instanceof ModelRouterError && error.param !== null)
    Object.defineProperty(error, 'param', { value: responsesParam(error.param, messageParams) });
  return error;
}
