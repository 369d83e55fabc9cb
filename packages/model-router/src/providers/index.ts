import * as anthropic from './anthropic';

/** Providers by name: adding a provider is adding a folder and a line here. */
export const providers = { anthropic } as const;

/** The provider kinds that serve chat completions and messages. */
export const MODEL_PROVIDERS: readonly string[] = Object.keys(providers);
