import { InvalidRecordError, type AdminModel, type CatalogStoreHooks, type RecordKind } from '@gw/catalog';
import type { IdentityTokenSigner } from '@gw/jwks';
import type { McpServerConfig } from '@gw/identity-forwarding';
import { identityForwarding, resolveVirtualServer, type VirtualServerConfig } from '@gw/mcp-gateway';
import {
  KNOWN_ANTHROPIC_MODELS,
  KNOWN_BEDROCK_ANTHROPIC_MODELS,
  createInMemoryCatalog,
  isModelEnabled,
  type ModelProviderConfig,
} from '@gw/model-router';
import type { CatalogView } from './catalog-view';
import { routingConfigRefusal } from './routing-config-check';

/** What the gateway can serve, for the checks of {@link catalogRecordChecks}. */
export interface RecordCheckOptions {
  /** The signer of `jwt_header` tokens, once known; without one a `jwt_header` server is refused. */
  signer: () => IdentityTokenSigner | undefined;
  /** Whether `jwt_validation` is set (a `bearer` server needs it). */
  acceptsIdentityTokens: boolean;
  /** The models a provider has now (its own list, or the bundled one), for saving a custom selection. */
  currentModels?: (provider: Record<string, unknown>) => readonly string[];
}

/**
 * The catalog's checks of a record before it is written, with what this gateway can serve: the
 * packages' own validation (an MCP server's forwarding method, an AWS integration's hosts, a
 * provider's settings), so the admin API refuses what the request path would refuse. A custom
 * model selection also records the provider's models at that moment (`autoEnableNew` enables only
 * models that appear later).
 */
export function catalogRecordChecks(options: RecordCheckOptions): CatalogStoreHooks {
  const currentModels = options.currentModels ?? (() => KNOWN_ANTHROPIC_MODELS);
  return {
    check(kind: RecordKind, data: Record<string, unknown>) {
      let refusal: string | undefined;
      if (kind === 'providers') refusal = providerRefusal(data);
      else if (kind === 'mcp-servers') {
        // `tool_pinning` and `upstream_auth` are the gateway's own fields, not the MCP proxy's.
        const { tool_pinning: _pinning, upstream_auth: _upstreamAuth, ...server } = data;
        try {
          identityForwarding({
            mcpServers: [server as unknown as McpServerConfig],
            signer: options.signer(),
            acceptsIdentityTokens: options.acceptsIdentityTokens,
          });
        } catch (error) {
          refusal = (error as Error).message;
        }
      }
      if (kind === 'configs') {
        const routing = routingConfigRefusal(data.config);
        if (routing !== undefined) throw new InvalidRecordError(`config: ${routing}`, 'config');
      }
      // Checked as the config file's `virtualServers` are; that members exist is the store's to check.
      if (kind === 'virtual-servers') refusal = virtualServerRefusal(data);
      if (refusal !== undefined) throw new InvalidRecordError(refusal, paramOf(refusal));
    },
    annotate(kind, data, changed) {
      const models = data.models as { mode?: string } | undefined;
      if (kind !== 'providers' || models?.mode !== 'custom' || !changed.includes('models')) return {};
      // A bedrock record's models are Bedrock ids: the bundled list of Anthropic's models on Bedrock.
      return { knownModels: [...(data.provider === 'bedrock' ? KNOWN_BEDROCK_ANTHROPIC_MODELS : currentModels(data))] };
    },
  };
}

/**
 * Why the package that serves a provider record refuses it (the SigV4 proxy an AWS integration,
 * the model router a model provider), or undefined when it accepts it.
 */
export function providerRefusal(data: Record<string, unknown>): string | undefined {
  try {
    // A bedrock record is checked as @gw/sigv4-proxy checks it, by the model catalog.
    createInMemoryCatalog([data as unknown as ModelProviderConfig]);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Why the MCP gateway refuses a virtual server record (CONTRACT section 16), as it refuses an entry
 * of the config file's `virtualServers` (`resolveVirtualServer`), or undefined when it accepts it.
 * The message starts with `virtualServers[<slug>].<field>`.
 */
export function virtualServerRefusal(data: Record<string, unknown>): string | undefined {
  try {
    resolveVirtualServer(data as unknown as VirtualServerConfig, undefined, `virtualServers[${String(data.slug)}]`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The field a package's refusal is about, from the path its message starts with
 * (`mcpServers[tools].user_identity_forwarding.method is …` → `user_identity_forwarding.method`,
 * `providers[kb].allowedHosts[0] must …` → `allowedHosts`), or null.
 */
function paramOf(message: string): string | null {
  // A virtual server's `members[0].server` is named as the admin API names fields: `members.0.server`.
  const member = /^virtualServers\[[^\]]*\]\.([A-Za-z_][\w.[\]]*)/.exec(message)?.[1];
  if (member !== undefined) return member.replace(/\[(\d+)\]/g, '.$1').replace(/\.$/, '');
  return /^(?:providers|mcpServers)\[[^\]]*\]\.([A-Za-z_][\w.]*)/.exec(message)?.[1] ?? null;
}

/** The model list of a provider with `enabled` per model, for `GET /admin/v1/providers/<slug>/models`. */
export function providerModelList(
  view: CatalogView,
  slug: string,
  list: (slug: string) => {
    models: readonly { id: string; display_name?: string; created_at?: string }[];
    source: 'provider' | 'bundled';
  } = () => ({
    models: KNOWN_ANTHROPIC_MODELS.map((id) => ({ id })),
    source: 'bundled',
  }),
): { data: AdminModel[]; source: 'provider' | 'bundled' } | undefined {
  const provider = view.modelProviders.get(slug);
  if (!provider) return undefined;
  const { models, source } = list(slug);
  const data: AdminModel[] = models.map((model) => ({ ...model, enabled: isModelEnabled(provider, model.id) }));
  // A custom selection may name models the list does not have (yet): they are enabled all the same.
  if (provider.models.mode === 'custom') {
    const listed = new Set(models.map((m) => m.id));
    for (const id of provider.models.models) if (!listed.has(id)) data.push({ id, enabled: true });
  }
  return { data, source };
}
