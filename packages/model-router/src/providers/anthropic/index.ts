/** The Anthropic provider: API data plus the chat completion transforms. */
export { anthropicApi } from './api';
export {
  toAnthropicRequest,
  toAnthropicConversion,
  RAW_ARGUMENTS_KEY,
  type AnthropicMessagesRequest,
  type ChatConversion,
  type ChatRequestContext,
} from './chat-request';
export {
  IGNORED_PARAMS_HEADER,
  REASONING_EFFORT_BUDGETS,
  MIN_THINKING_BUDGET,
  DEFAULT_JSON_TOOL,
} from './chat-options';
export {
  toChatCompletion,
  toOpenAiError,
  toOpenAiUsage,
  finishReason,
  jsonFinishReason,
  reportedModel,
  type ChatResponseContext,
} from './chat-response';
export { ChatStreamTranslator, type ChatStreamContext } from './chat-stream';
