type Json = Record<string, unknown>;

/** OpenAI `finish_reason` for an Anthropic `stop_reason` (always an OpenAI value). */
export function finishReason(stopReason: unknown): 'stop' | 'length' | 'tool_calls' | 'content_filter' {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/** OpenAI usage from Anthropic usage: prompt tokens include cache creation and cache reads. */
export function toOpenAiUsage(usage: Json | undefined): Json {
  const input = Number(usage?.input_tokens ?? 0);
  const cacheCreation = Number(usage?.cache_creation_input_tokens ?? 0);
  const cacheRead = Number(usage?.cache_read_input_tokens ?? 0);
  const completion = Number(usage?.output_tokens ?? 0);
  const prompt = input + cacheCreation + cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
    cache_creation_input_tokens: cacheCreation,
    cache_read_input_tokens: cacheRead,
  };
}

/** The `chatcmpl-` id for an Anthropic message id. */
export function completionId(messageId: unknown): string {
  return `chatcmpl-${typeof messageId === 'string' ? messageId.replace(/^msg_/, '') : Date.now().toString(36)}`;
}

/**
 * `finish_reason` for a response that may carry `response_format`'s JSON in a forced tool: the
 * tool call that carries it ends the answer normally (`stop`).
 */
export function jsonFinishReason(stopReason: unknown, jsonTool: string | undefined): ReturnType<typeof finishReason> {
  const reason = finishReason(stopReason);
  return jsonTool !== undefined && reason === 'tool_calls' ? 'stop' : reason;
}

/** The model the provider reports (the dated release), else `fallback`. */
export function reportedModel(model: unknown, fallback: string): string {
  return typeof model === 'string' && model !== '' ? model : fallback;
}

/** How the response is shaped. */
export interface ChatResponseContext {
  /** With strict compliance off, `message.content_blocks` carries every non-tool block. */
  strict: boolean;
  /**
   * The model id sent upstream (without the `@slug/` prefix), used when the provider's message
   * names no model; otherwise the response names the model the provider reports.
   */
  model: string;
  /**
   * The forced tool that carries `response_format`'s JSON: its input becomes `message.content`
   * (never a tool call) and its `tool_use` stop reason `finish_reason: "stop"`.
   */
  jsonTool?: string;
  /** Seconds since the epoch. Default: now. */
  created?: number;
}

/** Converts an Anthropic message to an OpenAI chat completion. */
export function toChatCompletion(message: Json, context: ChatResponseContext): Json {
  const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
  const text: string[] = [];
  const toolCalls: Json[] = [];
  const contentBlocks: Json[] = [];
  for (const block of blocks) {
    if (block.type === 'text') text.push(String(block.text ?? ''));
    if (block.type === 'tool_use' && context.jsonTool !== undefined && block.name === context.jsonTool) {
      const json = JSON.stringify(block.input ?? {});
      text.push(json);
      // As text, like the streamed pieces (strict compliance off).
      if (!context.strict) contentBlocks.push({ type: 'text', text: json });
    } else if (block.type === 'tool_use') {
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    } else if (!context.strict) {
      contentBlocks.push(
        block.type === 'thinking'
          ? { type: 'thinking', thinking: block.thinking, signature: block.signature }
          : block.type === 'redacted_thinking'
            ? { type: 'redacted_thinking', data: block.data }
            : { ...block },
      );
    }
  }
  const chatMessage: Json = { role: 'assistant', content: text.length > 0 ? text.join('') : null, refusal: null };
  if (toolCalls.length > 0) chatMessage.tool_calls = toolCalls;
  if (!context.strict) chatMessage.content_blocks = contentBlocks;
  return {
    id: completionId(message.id),
    object: 'chat.completion',
    created: context.created ?? Math.floor(Date.now() / 1000),
    model: reportedModel(message.model, context.model),
    choices: [
      {
        index: 0,
        message: chatMessage,
        logprobs: null,
        finish_reason: jsonFinishReason(message.stop_reason, context.jsonTool),
      },
    ],
    usage: toOpenAiUsage(message.usage as Json | undefined),
  };
}

const OPENAI_TYPE: ReadonlyMap<string, string> = new Map([
  ['invalid_request_error', 'invalid_request_error'],
  ['authentication_error', 'authentication_error'],
  ['permission_error', 'permission_error'],
  ['not_found_error', 'not_found_error'],
  ['request_too_large', 'invalid_request_error'],
  ['rate_limit_error', 'rate_limit_error'],
  ['api_error', 'api_error'],
  ['overloaded_error', 'api_error'],
  ['timeout_error', 'timeout_error'],
]);

/** An upstream error body (any JSON or none) and status as an OpenAI error body. */
export function toOpenAiError(
  status: number,
  upstreamBody: unknown,
): { error: { message: string; type: string; param: null; code: string } } {
  const error = typeof upstreamBody === 'object' && upstreamBody !== null ? (upstreamBody as Json).error : undefined;
  const anthropicType = typeof error === 'object' && error !== null ? String((error as Json).type ?? '') : '';
  const message =
    typeof error === 'object' && error !== null && typeof (error as Json).message === 'string'
      ? ((error as Json).message as string)
      : `The provider answered with status ${status}.`;
  const type =
    OPENAI_TYPE.get(anthropicType) ??
    (status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error');
  return { error: { message, type, param: null, code: anthropicType || `upstream_${status}` } };
}
