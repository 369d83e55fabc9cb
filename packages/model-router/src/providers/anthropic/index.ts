/** The Anthropic provider: API data plus the chat completion transforms. */
export { anthropicApi } from './api';
export { toAnthropicRequest, type AnthropicMessagesRequest, type ChatRequestContext } from './chat-request';
export {
  toChatCompletion,
  toOpenAiError,
  toOpenAiUsage,
  finishReason,
  type ChatResponseContext,
} from './chat-response';
export { ChatStreamTranslator, type ChatStreamContext } from './chat-stream';
