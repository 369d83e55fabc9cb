import type { RecordTestOutcome } from '@gw/console';
import { enabledModels } from '@gw/model-router';
import { forbiddenAddressOf, type CatalogView } from './catalog-view';

/** The caller the console's "test" buttons call the gateway as (an API key that exists only in memory). */
export const CONSOLE_TEST_USER = { user_id: 'gateway-console-test', username: 'console test' };

/** How long a test call may take, in ms. */
const TEST_TIMEOUT_MS = 15_000;

/**
 * The console's "test" button: one real call through the gateway's own listener, as a caller
 * would make it. Anthropic: `count_tokens` with the provider's first enabled model. Bedrock: a
 * signed `retrieve` to the integration's first allowed host (or its region's AWS host); any answer
 * that is not an authentication refusal shows the signature was accepted. MCP: `initialize`.
 */
export async function testRecord(
  base: string | undefined,
  apiKey: string,
  view: CatalogView,
  kind: 'providers' | 'mcp-servers',
  slug: string,
): Promise<RecordTestOutcome> {
  if (base === undefined) return { ok: false, status: 503, message: 'The gateway is not listening yet.' };
  // Never a credential to a link-local or metadata address, whatever the record says.
  const target =
    kind === 'mcp-servers'
      ? view.mcpServers.find((s) => s.slug === slug)
      : (view.awsIntegrations.get(slug) ?? view.modelProviders.get(slug));
  const forbidden = target === undefined ? undefined : forbiddenAddressOf(target as unknown as Record<string, unknown>);
  if (forbidden !== undefined)
    return { ok: false, status: 400, code: 'invalid_request', message: `Not tested: ${forbidden}.` };
  const headers: Record<string, string> = { 'x-api-key': apiKey, 'content-type': 'application/json' };
  let path: string;
  let body: unknown;
  let judge = (status: number) => status < 400;
  if (kind === 'mcp-servers') {
    if (!view.mcpSlugs.has(slug))
      return { ok: false, status: 404, code: 'mcp_server_not_found', message: 'No such MCP server.' };
    path = `/mcp/${encodeURIComponent(slug)}`;
    headers.accept = 'application/json, text/event-stream';
    body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'gateway-console', version: '1' },
      },
    };
  } else if (view.modelProviders.has(slug) && !view.awsIntegrations.has(slug)) {
    const provider = view.modelProviders.get(slug);
    const model = provider ? (enabledModels(provider)[0] ?? 'claude-haiku-4-5') : 'claude-haiku-4-5';
    path = '/v1/messages/count_tokens';
    headers['x-gateway-provider'] = slug;
    body = { model, messages: [{ role: 'user', content: 'ping' }] };
  } else if (view.awsIntegrations.has(slug)) {
    const integration = view.awsIntegrations.get(slug);
    const host = integration?.allowedHosts?.[0] ?? `https://bedrock-agent-runtime.${integration?.region}.amazonaws.com`;
    path = '/v1/knowledgebases/GATEWAYTEST/retrieve';
    headers['x-gateway-provider'] = slug;
    headers['x-gateway-custom-host'] = host;
    body = { retrievalQuery: { text: 'ping' } };
    judge = (status) => status !== 401 && status !== 403 && status < 500;
  } else {
    return { ok: false, status: 404, code: 'unknown_provider', message: 'No such provider.' };
  }
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TEST_TIMEOUT_MS),
    });
  } catch {
    return { ok: false, status: 504, code: 'test_timeout', message: 'The gateway did not answer in time.' };
  }
  const text = (await res.text()).slice(0, 4096);
  let parsed: {
    code?: unknown;
    error?: { code?: unknown; message?: unknown; type?: unknown };
    input_tokens?: unknown;
  } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // An event stream or another body: the status says enough.
  }
  const code =
    typeof parsed.code === 'string'
      ? parsed.code
      : typeof parsed.error?.code === 'string'
        ? parsed.error.code
        : undefined;
  const ok = judge(res.status);
  const message = ok
    ? kind === 'mcp-servers'
      ? 'The MCP server answered initialize.'
      : typeof parsed.input_tokens === 'number'
        ? `The provider counted ${parsed.input_tokens} input tokens.`
        : `The upstream accepted the signed request (status ${res.status}).`
    : typeof parsed.error?.message === 'string'
      ? parsed.error.message.slice(0, 300)
      : `The gateway answered ${res.status}.`;
  return { ok, status: res.status, ...(code ? { code } : {}), message };
}
