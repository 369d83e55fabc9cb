import * as anthropic from './anthropic';
import * as bedrock from './bedrock';
import type { ProviderEntry } from '../core/catalog';
import { UnknownProviderError, UnsupportedModelError } from '../core/errors';

/** Providers by name: adding a provider is adding a folder and a line here. */
export const providers = { anthropic, bedrock } as const;

/** The provider kinds that serve chat completions and messages. */
export const MODEL_PROVIDERS: readonly string[] = ['anthropic'];

/**
 * Throws unless `provider` serves Anthropic's Messages API for `model`: an `anthropic` provider
 * always, a `bedrock` provider (Bedrock Runtime, the second transport) for a Bedrock model id or
 * inference profile id of an Anthropic model (`400 unsupported_model` otherwise). `what` names the
 * route in the error (`chat completions`, `messages`, `responses`).
 */
export function checkServesMessages(provider: ProviderEntry, model: string, what: string): void {
  if (provider.provider === 'anthropic') return;
  if (provider.provider === 'bedrock' && provider.bedrock !== undefined) {
    if (bedrock.isBedrockAnthropicModel(model)) return;
    throw new UnsupportedModelError(
      `@${provider.slug} serves Anthropic's models on Bedrock: name a Bedrock model id or inference profile id such as "us.anthropic.claude-sonnet-4-5-20250929-v1:0".`,
      { param: 'model' },
    );
  }
  throw new UnknownProviderError(`@${provider.slug} does not serve ${what}.`, { param: 'model' });
}
