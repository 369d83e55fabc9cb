/** The Anthropic provider's second transport: Anthropic's models on AWS Bedrock Runtime. */
export {
  anthropicModelOf,
  isBedrockAnthropicModel,
  foundationModelOf,
  KNOWN_BEDROCK_ANTHROPIC_MODELS,
} from './model-ids';
export { BEDROCK_EXCEPTIONS, mapBedrockException, exceptionName, type MappedBedrockError } from './errors';
export { BedrockEventStreamDecoder, MAX_BEDROCK_FRAME_BYTES } from './event-stream';
export {
  BEDROCK_ANTHROPIC_VERSION,
  bedrockRuntimeOf,
  bedrockBody,
  bedrockCall,
  type BedrockRuntime,
  type BedrockCall,
  type BedrockOperation,
} from './runtime';
