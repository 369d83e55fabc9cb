import {
  InvalidRequestError,
  UnsupportedInputError,
  UnsupportedResponseFormatError,
  UnsupportedValueError,
} from '../../core/errors';
import { parseDataUrl } from '../../core/input-checks/data-url';
import { toImageBlock, type ImageBlock } from '../../core/input-checks/image';
import { acceptsImages, acceptsPdf } from '../../core/input-checks/model-capabilities';
import { checkPdf, PdfCheckBudget } from '../../core/input-checks/pdf';
import { providerUserId } from '../../core/caller';
import { isJsonString, type JsonString } from '../../core/raw-json-string';
import {
  jsonToolOf,
  maxTokensOf,
  refuseUnsupportedFields,
  samplingOf,
  stopSequencesOf,
  thinkingOf,
  unusedFields,
} from './chat-options';

type Json = Record<string, unknown>;
/** An Anthropic content block (loosely typed: the transforms build only valid shapes). */
export type AnthropicBlock = Json & { type: string };
/** An Anthropic Messages request body. */
export interface AnthropicMessagesRequest {
  model: string;
  max_tokens: number;
  messages: { role: 'user' | 'assistant'; content: string | AnthropicBlock[] }[];
  system?: AnthropicBlock[];
  stream?: boolean;
  [field: string]: unknown;
}

/** What the conversion needs besides the body. */
export interface ChatRequestContext {
  /** Model id as sent upstream (the `@slug/` prefix removed). */
  model: string;
  /** The authenticated caller, which scopes `user` (see `providerUserId`). Default: none. */
  callerId?: string;
  /** `max_tokens` for requests that send neither it nor `max_completion_tokens`. Default: none (they are refused). */
  defaultMaxTokens?: number;
}

const present = (v: unknown): boolean => v !== undefined && v !== null;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function invalid(message: string, param: string): never {
  throw new InvalidRequestError(message, { param });
}

function cacheControl(part: Json): Json {
  return isObject(part.cache_control) ? { cache_control: part.cache_control } : {};
}

interface Usage {
  images: boolean;
  pdfs: boolean;
  /** The PDFs to check, in the order they appear. */
  pdfChecks: { base64: JsonString; param: string }[];
}

function documentBlock(base64: JsonString, param: string, extra: Json, usage: Usage): AnthropicBlock {
  usage.pdfChecks.push({ base64, param });
  usage.pdfs = true;
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64 }, ...extra };
}

function userPart(part: unknown, param: string, usage: Usage): AnthropicBlock {
  if (!isObject(part) || typeof part.type !== 'string') invalid('Each content part needs a "type".', param);
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') invalid('A text part needs "text".', `${param}.text`);
      return { type: 'text', text: part.text, ...cacheControl(part) };
    case 'image_url': {
      const image = part.image_url;
      // A large URL may be raw (see CHAT_RAW_STRINGS): checked and forwarded from the bytes received.
      const url = isJsonString(image) ? image : isObject(image) ? image.url : undefined;
      if (!isJsonString(url)) invalid('An image_url part needs image_url.url.', `${param}.image_url.url`);
      const parsed = parseDataUrl(url);
      if (parsed?.mediaType === 'application/pdf') {
        if (!parsed.base64) invalid('PDF data URLs must be base64 encoded.', `${param}.image_url.url`);
        return documentBlock(parsed.data, `${param}.image_url.url`, cacheControl(part), usage);
      }
      usage.images = true;
      return { ...toImageBlock(url, `${param}.image_url.url`), ...cacheControl(part) };
    }
    case 'file': {
      const file = part.file;
      if (!isObject(file) || !isJsonString(file.file_data)) {
        invalid(
          'A file part needs file.file_data (base64 or a data URL); file ids are not supported.',
          `${param}.file.file_data`,
        );
      }
      const parsed = parseDataUrl(file.file_data);
      const mimeType = (
        typeof file.mime_type === 'string' ? file.mime_type : (parsed?.mediaType ?? 'application/pdf')
      ).toLowerCase();
      const data = parsed ? parsed.data : file.file_data;
      if (mimeType === 'application/pdf')
        return documentBlock(data, `${param}.file.file_data`, cacheControl(part), usage);
      if (mimeType.startsWith('image/')) {
        usage.images = true;
        return { ...fileImageBlock(mimeType, data, `${param}.file.file_data`), ...cacheControl(part) };
      }
      return invalid(`Files of type ${mimeType} are not supported; send PDFs or images.`, `${param}.file.mime_type`);
    }
    default:
      return invalid(`Content parts of type "${String(part.type).slice(0, 32)}" are not supported.`, `${param}.type`);
  }
}

/**
 * The image block of a file part's data: as its data URL `data:<mime type>;base64,<data>` would
 * convert, with raw data kept raw (the URL's header alone decides every check).
 */
function fileImageBlock(mimeType: string, data: JsonString, param: string): ImageBlock {
  if (typeof data === 'string') return toImageBlock(`data:${mimeType};base64,${data}`, param);
  const header = `data:${mimeType};base64,`;
  // A comma in the media type would move the data's start into the header: read it as one string.
  if (header.indexOf(',') !== header.length - 1) return toImageBlock(header + data.toString(), param);
  const block = toImageBlock(header, param);
  return { ...block, source: { ...block.source, data } };
}

function userContent(content: unknown, param: string, usage: Usage): string | AnthropicBlock[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) invalid('Message content must be a string or an array of parts.', param);
  return content.map((part, index) => userPart(part, `${param}[${index}]`, usage));
}

function textOnly(content: unknown, param: string): AnthropicBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) invalid('Message content must be a string or an array of text parts.', param);
  return content.map((part, index) => {
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
      invalid('Only text parts are accepted here.', `${param}[${index}]`);
    }
    return { type: 'text', text: part.text, ...cacheControl(part) };
  });
}

function assistantContent(message: Json, param: string): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [];
  // Thinking blocks go back first, so multi-turn thinking with tools works.
  if (Array.isArray(message.content_blocks)) {
    for (const [index, block] of message.content_blocks.entries()) {
      if (!isObject(block)) invalid('content_blocks entries must be objects.', `${param}.content_blocks[${index}]`);
      if (block.type === 'thinking') {
        blocks.push({
          type: 'thinking',
          thinking: String(block.thinking ?? ''),
          signature: String(block.signature ?? ''),
        });
      } else if (block.type === 'redacted_thinking') {
        blocks.push({ type: 'redacted_thinking', data: String(block.data ?? '') });
      }
    }
  }
  if (message.content !== undefined && message.content !== null)
    blocks.push(...textOnly(message.content, `${param}.content`));
  if (message.tool_calls !== undefined) {
    if (!Array.isArray(message.tool_calls)) invalid('tool_calls must be an array.', `${param}.tool_calls`);
    for (const [index, call] of message.tool_calls.entries()) {
      const at = `${param}.tool_calls[${index}]`;
      if (
        !isObject(call) ||
        typeof call.id !== 'string' ||
        !isObject(call.function) ||
        typeof call.function.name !== 'string'
      ) {
        invalid('A tool call needs id and function.name.', at);
      }
      blocks.push({
        type: 'tool_use',
        id: call.id,
        name: call.function.name,
        input: toolInput(call.function.arguments),
      });
    }
  }
  return blocks;
}

/** Key of the object that carries tool call arguments that are not a JSON object (see MAPPING.md). */
export const RAW_ARGUMENTS_KEY = '_raw_arguments';

/**
 * The `tool_use` input for a past tool call's `arguments`. A JSON object string is parsed; an
 * empty string is `{}`; anything else OpenAI accepted (text that is not JSON, or JSON that is not
 * an object) is forwarded as it is, as `{"_raw_arguments": "<the string>"}`.
 */
function toolInput(args: unknown): Json {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (isObject(parsed)) return parsed;
  } catch {
    // forwarded as raw text below
  }
  return { [RAW_ARGUMENTS_KEY]: args };
}

function toolResult(message: Json, param: string): AnthropicBlock {
  if (typeof message.tool_call_id !== 'string') invalid('A tool message needs tool_call_id.', `${param}.tool_call_id`);
  const content =
    typeof message.content === 'string' ? message.content : textOnly(message.content ?? '', `${param}.content`);
  return { type: 'tool_result', tool_use_id: message.tool_call_id, content };
}

function convertTools(tools: unknown): Json[] {
  if (!Array.isArray(tools)) invalid('tools must be an array.', 'tools');
  return tools.map((tool, index) => {
    const fn = isObject(tool) ? tool.function : undefined;
    if (!isObject(tool) || tool.type !== 'function' || !isObject(fn) || typeof fn.name !== 'string') {
      invalid('Each tool needs type "function" and function.name.', `tools[${index}]`);
    }
    return {
      name: fn.name,
      ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
      input_schema: isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} },
      ...cacheControl(tool),
    };
  });
}

function convertToolChoice(choice: unknown, parallel: unknown): Json | undefined {
  let converted: Json | undefined;
  if (choice === 'auto' || choice === 'none') converted = { type: choice };
  else if (choice === 'required') converted = { type: 'any' };
  else if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === 'string') {
    converted = { type: 'tool', name: choice.function.name };
  } else if (choice !== undefined)
    invalid('tool_choice must be "auto", "none", "required" or a function.', 'tool_choice');
  if (parallel === false) converted = { ...(converted ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return converted;
}

/**
 * Checks the PDFs in order, within one budget for the request; the first failure is thrown.
 * These checks yield to the event loop as they go (see `checkPdf`).
 */
async function checkPdfs(pdfs: Usage['pdfChecks']): Promise<void> {
  if (pdfs.length === 0) return;
  const budget = new PdfCheckBudget();
  for (const { base64, param } of pdfs) await checkPdf(base64, param, budget);
}

/** An OpenAI chat completion body converted for Anthropic, with what the response needs. */
export interface ChatConversion {
  request: AnthropicMessagesRequest;
  /**
   * Request fields received but not used, in the order met (for `x-gateway-ignored-params`):
   * fields without an Anthropic meaning, `top_p` next to `temperature`, `max_tokens` next to
   * `max_completion_tokens`, `reasoning_effort` next to `thinking`, `response_format`'s `strict`.
   */
  ignoredParams: string[];
  /** The forced tool whose input is the JSON `response_format` asked for, when it asked for JSON. */
  jsonTool?: string;
}

/**
 * Validates and converts an OpenAI chat completion body into an Anthropic Messages request.
 * Every input check (max_tokens, images, PDFs, thinking budget, model capabilities, sampling,
 * response format) runs here, before any upstream call. Rejects only with ModelRouterError
 * subclasses, the same error the checks in body order would give: PDFs are checked after the
 * rest of the conversion (they take time and yield to the event loop), and a failure of a PDF
 * that comes before another failure wins, as if it had been checked where it stands.
 */
export async function toAnthropicConversion(body: unknown, context: ChatRequestContext): Promise<ChatConversion> {
  const pdfs: Usage['pdfChecks'] = [];
  let conversion: ChatConversion;
  try {
    conversion = convertChatRequest(body, context, pdfs);
  } catch (error) {
    // The PDFs met before this failure were checked before it in body order.
    await checkPdfs(pdfs);
    throw error;
  }
  await checkPdfs(pdfs);
  return conversion;
}

/** {@link toAnthropicConversion}'s request alone. */
export async function toAnthropicRequest(
  body: unknown,
  context: ChatRequestContext,
): Promise<AnthropicMessagesRequest> {
  return (await toAnthropicConversion(body, context)).request;
}

function convertChatRequest(body: unknown, context: ChatRequestContext, pdfChecks: Usage['pdfChecks']): ChatConversion {
  if (!isObject(body)) invalid('The request body must be a JSON object.', 'body');
  const ignored: string[] = unusedFields(body);
  const maxTokens = maxTokensOf(body, ignored, context.defaultMaxTokens);
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    invalid('messages must be a non-empty array.', 'messages');
  if (body.n !== undefined && body.n !== null && body.n !== 1) invalid('Only n = 1 is supported.', 'n');
  refuseUnsupportedFields(body);
  const jsonTool = jsonToolOf(body, ignored);

  const usage: Usage = { images: false, pdfs: false, pdfChecks };
  const system: AnthropicBlock[] = [];
  const messages: AnthropicMessagesRequest['messages'] = [];
  for (const [index, message] of body.messages.entries()) {
    const param = `messages[${index}]`;
    if (!isObject(message)) invalid('Each message must be an object.', param);
    // Anthropic messages carry no speaker name.
    if (present(message.name) && !ignored.includes('messages[].name')) ignored.push('messages[].name');
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...textOnly(message.content, `${param}.content`));
        break;
      case 'user':
        messages.push({ role: 'user', content: userContent(message.content, `${param}.content`, usage) });
        break;
      case 'assistant':
        messages.push({ role: 'assistant', content: assistantContent(message, param) });
        break;
      case 'tool': {
        const result = toolResult(message, param);
        const previous = messages.at(-1);
        // Consecutive tool results answer one assistant turn: they share one user message.
        if (
          previous?.role === 'user' &&
          Array.isArray(previous.content) &&
          previous.content.every((b) => b.type === 'tool_result')
        ) {
          previous.content.push(result);
        } else {
          messages.push({ role: 'user', content: [result] });
        }
        break;
      }
      default:
        invalid(`Messages with role "${String(message.role).slice(0, 32)}" are not supported.`, `${param}.role`);
    }
  }
  if (messages.length === 0) invalid('messages needs at least one user or assistant message.', 'messages');
  if (usage.images && !acceptsImages(context.model)) {
    throw new UnsupportedInputError(`The model ${context.model} does not accept images.`, { param: 'messages' });
  }
  if (usage.pdfs && !acceptsPdf(context.model)) {
    throw new UnsupportedInputError(`The model ${context.model} does not accept PDF documents.`, { param: 'messages' });
  }

  const request: AnthropicMessagesRequest = { model: context.model, max_tokens: maxTokens, messages };
  if (system.length > 0) request.system = system;
  const thinking = thinkingOf(body, maxTokens, ignored);
  const thinkingOn = thinking?.type === 'enabled';
  Object.assign(request, samplingOf(body, thinkingOn, ignored));
  const stops = stopSequencesOf(body);
  if (stops) request.stop_sequences = stops;
  if (body.stream !== undefined && body.stream !== null) {
    if (typeof body.stream !== 'boolean') invalid('stream must be a boolean.', 'stream');
    if (body.stream) request.stream = true;
  }
  if (thinking) request.thinking = thinking;
  const tools = body.tools !== undefined && body.tools !== null ? convertTools(body.tools) : undefined;
  const toolChoice = convertToolChoice(body.tool_choice ?? undefined, body.parallel_tool_calls);
  if (jsonTool) {
    // The JSON comes back as the input of one forced tool (see docs/decisions.md).
    if (thinkingOn) {
      throw new UnsupportedResponseFormatError(
        'response_format cannot be combined with extended thinking (thinking or reasoning_effort) for Anthropic ' +
          'models: Anthropic does not force a tool while thinking.',
        { param: 'response_format' },
      );
    }
    if (tools && tools.length > 0 && toolChoice?.type !== 'none') {
      throw new UnsupportedResponseFormatError(
        'response_format together with tools the model may call is not supported for Anthropic models; ' +
          'send tool_choice "none", or describe the answer as a tool.',
        { param: 'response_format' },
      );
    }
    if (tools?.some((tool) => tool.name === jsonTool.name)) {
      throw new UnsupportedResponseFormatError(
        `response_format's name "${jsonTool.name}" is also the name of a tool; rename one of them.`,
        { param: 'response_format.json_schema.name' },
      );
    }
    request.tools = [...(tools ?? []), { ...jsonTool }];
    request.tool_choice = { type: 'tool', name: jsonTool.name };
  } else {
    if (tools) request.tools = tools;
    if (toolChoice) {
      if (toolChoice.type === 'tool' && !tools?.some((tool) => tool.name === toolChoice.name)) {
        invalid('tool_choice names a function that is not in tools.', 'tool_choice');
      }
      if (thinkingOn && (toolChoice.type === 'any' || toolChoice.type === 'tool')) {
        throw new UnsupportedValueError(
          'With extended thinking Anthropic models cannot be forced to call a tool; send tool_choice "auto" or "none".',
          { param: 'tool_choice' },
        );
      }
      request.tool_choice = toolChoice;
    }
  }
  const userLabel = present(body.safety_identifier) ? 'safety_identifier' : 'user';
  const label = body[userLabel];
  if (label !== undefined && label !== null) {
    if (typeof label !== 'string') invalid(`${userLabel} must be a string.`, userLabel);
    if (userLabel === 'safety_identifier' && present(body.user)) ignored.push('user');
    request.metadata = { user_id: providerUserId(context.callerId, label) };
  }
  return { request, ignoredParams: ignored, ...(jsonTool ? { jsonTool: jsonTool.name } : {}) };
}
