/**
 * The request fields of an OpenAI chat completion other than messages and tools: output length,
 * reasoning effort, response format, sampling and stop sequences, and the list of fields the
 * gateway receives but cannot use (answered in `x-gateway-ignored-params`). See MAPPING.md.
 */
import {
  InvalidRequestError,
  MaxTokensRequiredError,
  UnsupportedParameterError,
  UnsupportedResponseFormatError,
  UnsupportedValueError,
} from '../../core/errors';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown): boolean => v !== undefined && v !== null;

function invalid(message: string, param: string): never {
  throw new InvalidRequestError(message, { param });
}

/** The response header that lists request fields received but not used. */
export const IGNORED_PARAMS_HEADER = 'x-gateway-ignored-params';

/**
 * Top-level fields the conversion reads (or refuses). Any other field present with a value
 * other than `null` is dropped and named in `x-gateway-ignored-params`: `frequency_penalty`,
 * `presence_penalty`, `seed`, `logprobs`, `top_logprobs`, `logit_bias`, `service_tier`, `store`,
 * `metadata`, `prediction`, `prompt_cache_key`, `prompt_cache_retention`, `verbosity` and fields
 * OpenAI does not define.
 */
const USED_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'response_format',
  'reasoning_effort',
  'thinking',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'user',
  'safety_identifier',
  'modalities',
  'audio',
  'functions',
  'function_call',
  'web_search_options',
]);

/** Fields that would change the answer if dropped: refused, with what to send instead. */
const REFUSED_FIELDS: ReadonlyMap<string, string> = new Map([
  ['audio', 'Audio output is not available from Anthropic models; remove audio.'],
  ['functions', 'functions is not supported; send the functions as tools (type "function").'],
  ['function_call', 'function_call is not supported; use tool_choice with tools.'],
  [
    'web_search_options',
    'web_search_options is not supported through chat completions; use the native /v1/messages route with the web search tool.',
  ],
]);

/** The fields of `body` the conversion does not use, in body order. */
export function unusedFields(body: Json): string[] {
  const unused: string[] = [];
  for (const field of Object.keys(body)) {
    if (!USED_FIELDS.has(field) && present(body[field])) unused.push(field);
  }
  return unused;
}

/** Refuses fields whose loss would change the answer (audio output, legacy functions, web search). */
export function refuseUnsupportedFields(body: Json): void {
  for (const [field, message] of REFUSED_FIELDS) {
    if (present(body[field])) throw new UnsupportedParameterError(message, { param: field });
  }
  if (present(body.modalities)) {
    const modalities = body.modalities;
    if (!Array.isArray(modalities)) invalid('modalities must be an array.', 'modalities');
    if (modalities.some((m) => m !== 'text')) {
      throw new UnsupportedValueError('Anthropic models answer in text only; send modalities ["text"] or none.', {
        param: 'modalities',
      });
    }
  }
}

function positiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * `max_completion_tokens`, else the deprecated `max_tokens` (as OpenAI reads them). When both
 * are sent, `max_tokens` is named in `ignored`.
 */
export function maxTokensOf(body: Json, ignored: string[], defaultMaxTokens?: number): number {
  const completion = body.max_completion_tokens;
  const legacy = body.max_tokens;
  if (!present(completion) && !present(legacy)) {
    // The provider's default, when its operator set one; else the field is required.
    if (defaultMaxTokens !== undefined) return defaultMaxTokens;
    throw new MaxTokensRequiredError('max_tokens (or max_completion_tokens) is required for Anthropic models.', {
      param: 'max_tokens',
    });
  }
  const param = present(completion) ? 'max_completion_tokens' : 'max_tokens';
  const value = present(completion) ? completion : legacy;
  if (!positiveInteger(value)) invalid(`${param} must be a positive whole number.`, param);
  if (present(completion) && present(legacy)) ignored.push('max_tokens');
  return value;
}

/** Thinking budget for each `reasoning_effort`; 0 means no thinking. */
export const REASONING_EFFORT_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['none', 0],
  ['minimal', 0],
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
  ['xhigh', 32768],
]);

/** Anthropic's smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/** An Anthropic `thinking` object. */
export type Thinking = { type: 'enabled'; budget_tokens: number } | { type: 'disabled' };

/**
 * Extended thinking from `thinking` (the gateway's extension, which wins) or `reasoning_effort`.
 * A reasoning budget that does not fit under `max_tokens` is lowered to `max_tokens - 1` while
 * that is still at least 1024; below that the request is refused.
 */
export function thinkingOf(body: Json, maxTokens: number, ignored: string[]): Thinking | undefined {
  if (present(body.thinking)) {
    const thinking = body.thinking;
    if (present(body.reasoning_effort)) ignored.push('reasoning_effort');
    if (!isObject(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'disabled')) {
      invalid('thinking must be {"type":"enabled","budget_tokens":n} or {"type":"disabled"}.', 'thinking');
    }
    if (thinking.type === 'disabled') return { type: 'disabled' };
    const budget = thinking.budget_tokens;
    if (!positiveInteger(budget) || budget < MIN_THINKING_BUDGET || budget >= maxTokens) {
      invalid(
        'thinking.budget_tokens must be a whole number of at least 1024 and less than max_tokens.',
        'thinking.budget_tokens',
      );
    }
    return { type: 'enabled', budget_tokens: budget };
  }
  const effort = body.reasoning_effort;
  if (!present(effort)) return undefined;
  const level = typeof effort === 'string' ? REASONING_EFFORT_BUDGETS.get(effort) : undefined;
  if (level === undefined) {
    throw new UnsupportedValueError('reasoning_effort must be "none", "minimal", "low", "medium", "high" or "xhigh".', {
      param: 'reasoning_effort',
    });
  }
  if (level === 0) return undefined;
  const budget = Math.min(level, maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET) {
    throw new UnsupportedValueError(
      `reasoning_effort "${String(effort)}" needs a thinking budget of at least 1024 tokens below max_tokens; ` +
        'raise max_tokens above 1024 or send reasoning_effort "none".',
      { param: 'reasoning_effort' },
    );
  }
  return { type: 'enabled', budget_tokens: budget };
}

/** The forced tool that carries `response_format`'s JSON. */
export interface JsonTool {
  name: string;
  description: string;
  input_schema: Json;
}

/** The tool name used for `{type:"json_object"}` and for a `json_schema` without a name. */
export const DEFAULT_JSON_TOOL = 'json_response';
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The forced tool for `response_format` `json_schema` or `json_object`; `undefined` for `text`
 * or none. `strict: true` is named in `ignored`: the model follows the tool's schema, but the
 * gateway does not constrain or validate the output.
 */
export function jsonToolOf(body: Json, ignored: string[]): JsonTool | undefined {
  const format = body.response_format;
  if (!present(format)) return undefined;
  if (!isObject(format) || typeof format.type !== 'string')
    invalid('response_format must be an object with a "type".', 'response_format');
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return {
        name: DEFAULT_JSON_TOOL,
        description: 'Give the complete answer as a JSON object: the input of this tool.',
        input_schema: { type: 'object' },
      };
    case 'json_schema': {
      const spec = format.json_schema;
      if (!isObject(spec)) invalid('response_format.json_schema must be an object.', 'response_format.json_schema');
      const name = present(spec.name) ? spec.name : DEFAULT_JSON_TOOL;
      if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
        invalid(
          'response_format.json_schema.name must be 1 to 64 letters, digits, underscores or dashes.',
          'response_format.json_schema.name',
        );
      }
      const schema = present(spec.schema) ? spec.schema : { type: 'object' };
      if (!isObject(schema) || schema.type !== 'object') {
        throw new UnsupportedResponseFormatError(
          'For Anthropic models the response_format schema must be an object schema ({"type":"object", …}); ' +
            'wrap an array or a single value in an object property.',
          { param: 'response_format.json_schema.schema' },
        );
      }
      if (spec.strict === true) ignored.push('response_format.json_schema.strict');
      return {
        name,
        description:
          typeof spec.description === 'string'
            ? spec.description
            : 'Give the complete answer as the input of this tool, following its schema.',
        input_schema: schema,
      };
    }
    default:
      throw new UnsupportedResponseFormatError(
        `response_format type "${format.type.slice(0, 32)}" is not supported; use "text", "json_object" or "json_schema".`,
        { param: 'response_format' },
      );
  }
}

function numberField(body: Json, field: string, max: number): number | undefined {
  const value = body[field];
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`${field} must be a number.`, field);
  if (value < 0 || value > max) invalid(`${field} must be between 0 and ${max}.`, field);
  return value;
}

/** Anthropic sampling fields. */
export interface Sampling {
  temperature?: number;
  top_p?: number;
  top_k?: number;
}

/**
 * `temperature` (OpenAI 0–2, Anthropic 0–1: above 1 is refused, never rescaled), `top_p` (not
 * sent next to `temperature`: current Claude models refuse both; named in `ignored`) and
 * `top_k`. With extended thinking Anthropic takes only temperature 1, top_p from 0.95 and no
 * top_k: anything else is refused here rather than by the provider.
 */
export function samplingOf(body: Json, thinking: boolean, ignored: string[]): Sampling {
  const temperature = numberField(body, 'temperature', 2);
  let topP = numberField(body, 'top_p', 1);
  const topK = body.top_k;
  if (present(topK) && (typeof topK !== 'number' || !Number.isFinite(topK)))
    invalid('top_k must be a number.', 'top_k');
  if (temperature !== undefined && temperature > 1) {
    throw new UnsupportedValueError(
      'Anthropic models take temperature from 0 to 1; send a value of at most 1 (the gateway does not rescale it).',
      { param: 'temperature' },
    );
  }
  if (temperature !== undefined && topP !== undefined) {
    ignored.push('top_p');
    topP = undefined;
  }
  if (thinking) {
    if (temperature !== undefined && temperature !== 1) {
      throw new UnsupportedValueError('With extended thinking Anthropic models take only temperature 1.', {
        param: 'temperature',
      });
    }
    if (topP !== undefined && topP < 0.95) {
      throw new UnsupportedValueError('With extended thinking Anthropic models take top_p from 0.95 to 1.', {
        param: 'top_p',
      });
    }
    if (present(topK)) {
      throw new UnsupportedValueError('With extended thinking Anthropic models take no top_k.', { param: 'top_k' });
    }
  }
  const sampling: Sampling = {};
  if (temperature !== undefined) sampling.temperature = temperature;
  if (topP !== undefined) sampling.top_p = topP;
  if (present(topK)) sampling.top_k = topK as number;
  return sampling;
}

/** `stop` as Anthropic `stop_sequences`; empty or whitespace-only sequences are refused, as Anthropic does. */
export function stopSequencesOf(body: Json): string[] | undefined {
  if (!present(body.stop)) return undefined;
  const stops = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (!Array.isArray(stops) || stops.some((s) => typeof s !== 'string'))
    invalid('stop must be a string or an array of strings.', 'stop');
  if (stops.some((s: string) => s.trim() === '')) {
    throw new UnsupportedValueError(
      'Anthropic models refuse stop sequences that are empty or only whitespace; remove them from stop.',
      { param: 'stop' },
    );
  }
  return stops as string[];
}
