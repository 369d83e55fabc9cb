/**
 * Bedrock model ids of Anthropic's models, as data: which Anthropic model a Bedrock model id or
 * inference profile id names (for prices and the model selection), and its foundation model id
 * (for CountTokens, which takes no inference profile).
 */

/**
 * A Bedrock model id of an Anthropic model: an optional inference profile prefix (`us.`, `eu.`,
 * `apac.`, `global.`, …), `anthropic.`, the Anthropic model id, a `-v<n>` version and optional
 * `:<n>` / `:200k` qualifiers; or the ARN of a foundation model or system inference profile that
 * ends with one. Group 1: the prefix (with its dot), group 2: the Anthropic model id.
 */
const BEDROCK_ANTHROPIC_MODEL =
  /^(?:arn:aws[a-z-]*:bedrock:[a-z0-9-]*:\d*:(?:foundation-model|inference-profile)\/)?((?:[a-z]{2,6}(?:-gov)?\.)?)anthropic\.(claude-[a-z0-9.-]+?)-v\d+(?::[a-z0-9]+)*$/;

/** The Anthropic model a Bedrock id names (`us.anthropic.claude-sonnet-4-5-20250929-v1:0` → `claude-sonnet-4-5-20250929`); undefined for any other id. */
export function anthropicModelOf(bedrockModelId: string): string | undefined {
  if (bedrockModelId.length > 256) return undefined;
  return BEDROCK_ANTHROPIC_MODEL.exec(bedrockModelId)?.[2];
}

/** Whether a model id names an Anthropic model on Bedrock (a model id, an inference profile id, or the ARN of one). */
export function isBedrockAnthropicModel(model: string): boolean {
  return anthropicModelOf(model) !== undefined;
}

/**
 * The foundation model id of a Bedrock id (`us.anthropic.claude-…-v1:0` → `anthropic.claude-…-v1:0`):
 * CountTokens takes foundation model ids only. Other ids are returned as they are.
 */
export function foundationModelOf(bedrockModelId: string): string {
  const match = BEDROCK_ANTHROPIC_MODEL.exec(bedrockModelId);
  if (!match) return bedrockModelId;
  const slash = bedrockModelId.lastIndexOf('/');
  const id = slash === -1 ? bedrockModelId : bedrockModelId.slice(slash + 1);
  return id.slice((match[1] as string).length);
}

/**
 * The Anthropic models on Bedrock the gateway knows (model ids and the US and global inference
 * profiles), for `GET /v1/models` of a `bedrock` provider with `models.mode: "all"` and for
 * `autoEnableNew` of a custom selection.
 */
export const KNOWN_BEDROCK_ANTHROPIC_MODELS: readonly string[] = Object.freeze(
  [
    'claude-opus-4-1-20250805-v1:0',
    'claude-opus-4-20250514-v1:0',
    'claude-sonnet-4-5-20250929-v1:0',
    'claude-sonnet-4-20250514-v1:0',
    'claude-haiku-4-5-20251001-v1:0',
    'claude-3-7-sonnet-20250219-v1:0',
    'claude-3-5-sonnet-20241022-v2:0',
    'claude-3-5-sonnet-20240620-v1:0',
    'claude-3-5-haiku-20241022-v1:0',
    'claude-3-haiku-20240307-v1:0',
    'claude-3-opus-20240229-v1:0',
  ].flatMap((id) => [`anthropic.${id}`, `us.anthropic.${id}`, `eu.anthropic.${id}`, `global.anthropic.${id}`]),
);
