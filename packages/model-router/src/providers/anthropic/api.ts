import type { IncomingHttpHeaders } from 'node:http';
import { anthropicVersion, mergedBetas } from '../../core/gateway-headers';
import type { ProviderEntry } from '../../core/catalog';

/** Anthropic's API, as data: base URL, endpoints and the headers of every call. */
export const anthropicApi = {
  defaultBaseUrl: 'https://api.anthropic.com',
  endpoints: { messages: '/v1/messages', countTokens: '/v1/messages/count_tokens' },
  /** Upstream headers, built from scratch: nothing of the client's credentials passes. */
  headers(provider: ProviderEntry, incoming: IncomingHttpHeaders, accept = 'application/json'): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept,
      'anthropic-version': anthropicVersion(incoming),
      'x-api-key': provider.apiKey.reveal(),
    };
    const betas = mergedBetas(incoming);
    if (betas) headers['anthropic-beta'] = betas;
    return headers;
  },
} as const;
