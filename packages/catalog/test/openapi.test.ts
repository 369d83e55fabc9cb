import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPENAPI_DOCUMENT_PATH, documentedOperations, expectMatchesOpenApi, findOperation } from './openapi';

const at = '2025-01-02T03:04:05.678Z';
const meta = { version: 1, createdAt: at, updatedAt: at, source: 'admin' };

const anthropic = {
  id: '7b0c5a1e-3f0e-4d4f-9f59-7f8d7c1d2e3a',
  ...meta,
  slug: 'anthropic-prod',
  name: 'Anthropic (production)',
  provider: 'anthropic',
  apiKeyHint: '…7f3a',
  baseUrl: 'https://api.anthropic.com',
  models: { mode: 'custom', models: ['claude-sonnet-4-5'], autoEnableNew: false },
  defaultMaxTokens: 4096,
  cache: { enabled: true, scope: 'shared' },
  pricing: { 'claude-sonnet-4-5': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 } },
};
const bedrock = {
  id: '0d7c7e0a-93a5-4c36-8d3f-2a8c5b0f4e11',
  ...meta,
  version: 3,
  source: 'config',
  slug: 'bedrock-eu',
  provider: 'bedrock',
  accessKeyIdHint: '…MPLE',
  secretAccessKeyHint: '…9b2c',
  sessionTokenHint: '…5d1e',
  region: 'eu-west-1',
  allowedHosts: ['bedrock-agent-runtime.eu-west-1.amazonaws.com'],
  models: { mode: 'all' },
};
const mcpServer = {
  id: '5a4c1f5e-2b8e-4a55-b7a4-0c3d2e1f0a9b',
  ...meta,
  slug: 'tickets',
  url: 'https://mcp.example.com/mcp',
  user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'], header_name: 'X-User-JWT' },
  forward_headers: { mode: 'only', headers: ['x-request-id'] },
  jwt_audience: 'tickets',
};
const prompt = {
  id: 'support-triage',
  ...meta,
  provider: '@anthropic-prod',
  model: 'claude-sonnet-4-5',
  messages: [{ role: 'system', content: 'Sort the ticket: {{ticket}}' }],
  temperature: 0.2,
  max_tokens: 512,
};
const apiKey = {
  id: 'key-alice',
  ...meta,
  user: { user_id: 'u-1', email: 'alice@example.com', groups: ['support'] },
  name: "Alice's laptop",
  keyHint: '…c0de',
  config: 'claude-fallback',
};
const policy = {
  id: '7b1d2c3e-4f50-4a61-8b72-9c8d7e6f5a4b',
  ...meta,
  slug: 'support-team',
  name: 'Support team',
  subjects: { users: ['u-1'], groups: ['support'], apiKeys: ['key-alice'] },
  allow: {
    models: ['@anthropic-prod/claude-*'],
    mcpServers: [{ server: 'tickets', tools: ['search_*', 'get_ticket'] }, { server: 'wiki' }],
    integrations: ['bedrock-eu'],
  },
};
const namedConfig = {
  id: '3d5f7b9c-2e4a-4b6c-8d0e-1f2a3b4c5d6e',
  ...meta,
  slug: 'claude-fallback',
  name: 'Claude with a fallback',
  config: {
    strategy: { mode: 'fallback' },
    targets: [{ provider: '@anthropic-prod' }, { provider: '@bedrock-eu' }],
  },
};
const { name: _name, ...namedConfigOfFile } = namedConfig;
const virtualServer = {
  id: '5e7a9c1b-3d5f-4b7a-9c1e-2f4a6b8c0d1e',
  ...meta,
  slug: 'workbench',
  name: 'Everything support uses',
  members: [
    { server: 'tracker', prefix: 'tracker_' },
    { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' }, timeout_ms: 5000 },
  ],
};
const limit = {
  id: '2c4e6a8b-1d3f-4a5b-9c7d-0e1f2a3b4c5d',
  ...meta,
  slug: 'support-daily',
  subjects: { users: [], groups: ['support'], apiKeys: [] },
  per: 'each',
  requests_per_minute: 60,
  tokens_per_minute: 200000,
  cost_usd_per_day: 25,
  cost_usd_per_month: 400,
};
const heldTool = {
  name: 'search_tickets',
  status: 'held',
  currentDigest: 'sha256:' + 'b'.repeat(64),
  currentDescription: 'Search tickets, and send them elsewhere.',
  approvedDigest: 'sha256:' + 'a'.repeat(64),
  approvedDescription: 'Search tickets.',
  firstSeenAt: at,
  seenAt: at,
  approvedAt: at,
  approvedBy: 'admin',
};
const configApiKey = { id: 'key-ci', ...meta, source: 'config', user: { sub: 'ci' } };
const apiKeyCreated = { ...apiKey, key: 'gw-3q2+7w9x0c0de' };
const auditEntry = {
  id: 42,
  at,
  actor: 'admin',
  action: 'update',
  record: 'providers/anthropic-prod',
  version: 2,
  fields: ['apiKey', 'version'],
};
const error = (code: string, param: string | null = null) => ({
  error: { message: `Something about ${code}.`, type: 'invalid_request_error', code, param },
});
const list = (...data: unknown[]) => ({ object: 'list', data });
const deleted = (id: string, object: string) => ({ id, object, deleted: true });

/** A valid answer of every documented operation, by `METHOD concrete-path`. */
/** A request record as `GET /admin/v1/requests` answers it: no content, no secret. */
const requestRecord = {
  object: 'request',
  time: '2026-11-24T01:00:00.000Z',
  request_id: 'req_01',
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  route: 'chat',
  method: 'POST',
  path: '/v1/chat/completions',
  user_id: 'u-1',
  key_hint: 'a1b2',
  provider: 'anthropic-prod',
  model_requested: 'claude-sonnet-4-5',
  model_answered: 'claude-sonnet-4-5-20250929',
  mcp_method: null,
  mcp_tool: null,
  status: 200,
  error_code: null,
  duration_ms: 812.5,
  ttfb_ms: 301.25,
  usage: { input_tokens: 12, output_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 5 },
  cache_status: 'MISS',
  metadata: { feature: 'triage' },
  cost_usd: 0.000588,
  attempts: [
    { index: '0', provider: 'anthropic-backup', model: 'claude-sonnet-4-5', status: 529, ms: 40.5 },
    { index: '1', provider: 'anthropic-prod', model: 'claude-sonnet-4-5', status: 200, ms: 300, answered: true },
  ],
  mcp_virtual_server: null,
};

const oauthGrant = {
  id: '3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  object: 'oauth.grant',
  clientId: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a',
  user: 'u-1',
  resource: 'https://gateway.example.com/mcp/tickets',
  scopes: ['mcp'],
  createdAt: at,
  lastUsedAt: null,
  expiresAt: at,
  revokedAt: null,
  revokedReason: null,
};
const oauthRevoked = { ...oauthGrant, revokedAt: at, revokedReason: 'revoked_by_admin' };
const registeredClient = {
  client_id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a',
  client_id_issued_at: 1735787045,
  client_name: 'Claude Code',
  redirect_uris: ['http://127.0.0.1:33418/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  metadata_document: false,
  created_at: at,
};
const documentClient = {
  client_id: 'https://app.example.com/oauth/client.json',
  redirect_uris: [],
  metadata_document: true,
  created_at: at,
};
const oauthOff = { source: 'none', enabled: false };
const oauthCatalog = {
  source: 'catalog',
  enabled: true,
  login: { type: 'oidc', issuer: 'https://login.example.com', clientId: 'gateway', clientSecretHint: '…c4e1' },
  accessTokenTtlSeconds: 3600,
  version: 2,
  updatedAt: at,
};
const oauthConfig = { source: 'config', enabled: true, login: { type: 'api_key' }, refreshTokenTtlSeconds: 2592000 };

const SAMPLES: [method: string, path: string, status: number, body: unknown][] = [
  ['GET', '/admin/v1/providers', 200, list(anthropic, bedrock)],
  ['GET', '/admin/v1/providers', 200, list()],
  ['POST', '/admin/v1/providers', 201, anthropic],
  ['POST', '/admin/v1/providers', 201, bedrock],
  ['GET', '/admin/v1/providers/anthropic-prod', 200, anthropic],
  ['PATCH', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, version: 2 }],
  ['DELETE', '/admin/v1/providers/anthropic-prod', 200, deleted(anthropic.id, 'provider')],
  [
    'GET',
    '/admin/v1/providers/anthropic-prod/models',
    200,
    {
      object: 'list',
      data: [
        { id: 'claude-sonnet-4-5', enabled: true, display_name: 'Claude Sonnet 4.5', created_at: at },
        { id: 'claude-haiku-4-5', enabled: false },
      ],
      source: 'provider',
    },
  ],
  ['GET', '/admin/v1/providers/bedrock-eu/models', 200, { object: 'list', data: [], source: 'bundled' }],
  ['GET', '/admin/v1/mcp-servers', 200, list(mcpServer, { id: 'x', ...meta, slug: 'min', url: 'http://mcp:8080' })],
  ['POST', '/admin/v1/mcp-servers', 201, mcpServer],
  ['GET', '/admin/v1/mcp-servers/tickets', 200, mcpServer],
  ['PATCH', '/admin/v1/mcp-servers/tickets', 200, { ...mcpServer, version: 2, bearer_audience: 'tickets-api' }],
  ['DELETE', '/admin/v1/mcp-servers/tickets', 200, deleted(mcpServer.id, 'mcp_server')],
  [
    'GET',
    '/admin/v1/mcp-servers/tracker',
    200,
    {
      ...mcpServer,
      slug: 'tracker',
      upstream_auth: {
        type: 'oauth',
        scopes: ['read'],
        client: { client_id: 'gw-prod', client_secretHint: '…7f3a', token_endpoint_auth_method: 'client_secret_basic' },
      },
    },
  ],
  [
    'GET',
    '/admin/v1/mcp-servers/crm',
    200,
    { ...mcpServer, slug: 'crm', upstream_auth: { type: 'static', headers: { Authorization: '…9b2c' } } },
  ],
  [
    'GET',
    '/admin/v1/mcp-servers/tracker/connections?limit=1',
    200,
    {
      object: 'list',
      has_more: true,
      data: [
        {
          object: 'upstream_connection',
          user_id: 'alice',
          server: 'tracker',
          issuer: 'https://as.tracker.example',
          scopes: ['read'],
          createdAt: at,
          expiresAt: null,
          lastRefreshedAt: at,
        },
      ],
    },
  ],
  [
    'DELETE',
    '/admin/v1/mcp-servers/tracker/connections/alice',
    200,
    { object: 'upstream_connection', user_id: 'alice', server: 'tracker', deleted: true },
  ],
  ['GET', '/admin/v1/prompts', 200, list(prompt)],
  ['POST', '/admin/v1/prompts', 201, prompt],
  ['GET', '/admin/v1/prompts/support-triage', 200, prompt],
  ['PATCH', '/admin/v1/prompts/support-triage', 200, { ...prompt, version: 2, top_p: 0.9 }],
  ['DELETE', '/admin/v1/prompts/support-triage', 200, deleted('support-triage', 'prompt')],
  ['GET', '/admin/v1/policies', 200, list(policy, { ...policy, source: 'config', id: 'p', subjects: {}, allow: {} })],
  ['POST', '/admin/v1/policies', 201, policy],
  ['GET', '/admin/v1/policies/support-team', 200, policy],
  ['PATCH', '/admin/v1/policies/support-team', 200, { ...policy, version: 2 }],
  ['DELETE', '/admin/v1/policies/support-team', 200, deleted(policy.id, 'policy')],
  ['GET', '/admin/v1/limits', 200, list(limit, { ...limit, source: 'config', id: 'l', per: 'shared' })],
  ['POST', '/admin/v1/limits', 201, limit],
  ['GET', '/admin/v1/limits/support-daily', 200, limit],
  ['PATCH', '/admin/v1/limits/support-daily', 200, { ...limit, version: 2 }],
  ['DELETE', '/admin/v1/limits/support-daily', 200, deleted(limit.id, 'limit')],
  ['GET', '/admin/v1/configs', 200, list(namedConfig, { ...namedConfigOfFile, source: 'config', id: 'c' })],
  ['POST', '/admin/v1/configs', 201, namedConfig],
  ['GET', '/admin/v1/configs/claude-fallback', 200, namedConfig],
  ['PATCH', '/admin/v1/configs/claude-fallback', 200, { ...namedConfig, version: 2 }],
  ['DELETE', '/admin/v1/configs/claude-fallback', 200, deleted(namedConfig.id, 'config')],
  ['GET', '/admin/v1/virtual-servers', 200, list(virtualServer, { ...virtualServer, source: 'config', id: 'w' })],
  ['POST', '/admin/v1/virtual-servers', 201, virtualServer],
  ['GET', '/admin/v1/virtual-servers/workbench', 200, virtualServer],
  ['PATCH', '/admin/v1/virtual-servers/workbench', 200, { ...virtualServer, version: 2 }],
  ['DELETE', '/admin/v1/virtual-servers/workbench', 200, deleted(virtualServer.id, 'virtual_server')],
  [
    'GET',
    '/admin/v1/limits/support-daily/status?user=u-1',
    200,
    {
      object: 'limit_status',
      limit: 'support-daily',
      per: 'each',
      counter: 'user:u-1',
      requests_per_minute: { limit: 60, used: 3, remaining: 57 },
      tokens_per_minute: { limit: 200000, used: 1530, remaining: 198470 },
      cost_usd_per_day: { limit: 25, spent: 1.25, remaining: 23.75 },
      cost_usd_per_month: { limit: 400, spent: 18.5, remaining: 381.5 },
    },
  ],
  [
    'GET',
    '/admin/v1/audit?record=limits/support-daily',
    200,
    list({
      ...auditEntry,
      actor: 'gateway',
      action: 'budget_exhausted',
      record: 'limits/support-daily',
      version: null,
      fields: ['counter=support-daily:user:u-1', 'cap=cost_per_day', 'period=2026-11-27'],
    }),
  ],
  [
    'GET',
    '/admin/v1/access/mode',
    200,
    {
      object: 'access_mode',
      mode: 'open',
      source: 'default',
      changeable: true,
      policies: 2,
      policiesApplied: false,
    },
  ],
  [
    'PUT',
    '/admin/v1/access/mode',
    200,
    {
      object: 'access_mode',
      mode: 'report',
      source: 'catalog',
      changeable: true,
      policies: 2,
      policiesApplied: false,
      version: 1,
      updatedAt: at,
    },
  ],
  ['PUT', '/admin/v1/access/mode', 409, error('managed_by_config_file', 'mode')],
  ['PUT', '/admin/v1/access/mode', 403, error('role_forbidden', null)],
  [
    'PATCH',
    '/admin/v1/api-keys/key-alice',
    200,
    { ...apiKey, version: 2, expiresAt: '2030-01-01T00:00:00.000Z', lastUsedAt: null },
  ],
  [
    'GET',
    '/admin/v1/access/explain?user=u-1&groups=support&resource=@anthropic-prod/claude-sonnet-4-5',
    200,
    { allowed: true, mode: 'policies', policies: ['support-team'], reason: 'allowed by policy "support-team"' },
  ],
  [
    'GET',
    '/admin/v1/mcp-servers/tickets/tools',
    200,
    list(heldTool, { ...heldTool, name: 'get_ticket', status: 'approved', approvedDigest: heldTool.currentDigest }),
  ],
  [
    'POST',
    '/admin/v1/mcp-servers/tickets/tools/search_tickets/approve',
    200,
    { ...heldTool, status: 'approved', approvedDigest: heldTool.currentDigest },
  ],
  [
    'GET',
    '/admin/v1/requests?user=u-1&metadata.feature=triage&limit=10',
    200,
    {
      object: 'list',
      data: [
        requestRecord,
        { ...requestRecord, cache_status: null, metadata: null, attempts: null, mcp_virtual_server: 'workbench' },
      ],
      next_cursor: 'eyJ0IjoxfQ',
    },
  ],
  [
    'GET',
    '/admin/v1/usage?group_by=user&from=2026-11-01T00:00:00Z',
    200,
    {
      object: 'list',
      group_by: 'user',
      data: [
        {
          key: 'u-1',
          requests: 3,
          errors: 1,
          input_tokens: 36,
          output_tokens: 120,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 5,
          cost_usd: 0.00189,
        },
        {
          key: null,
          requests: 1,
          errors: 1,
          input_tokens: 0,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cost_usd: 0,
        },
      ],
    },
  ],
  ['GET', '/admin/v1/api-keys', 200, list(apiKey, configApiKey)],
  ['POST', '/admin/v1/api-keys', 201, apiKeyCreated],
  ['GET', '/admin/v1/api-keys/key-alice', 200, apiKey],
  ['DELETE', '/admin/v1/api-keys/key-alice', 200, deleted('key-alice', 'api_key')],
  [
    'GET',
    '/admin/v1/audit?record=providers/anthropic-prod&limit=10',
    200,
    list(auditEntry, { ...auditEntry, id: 41, action: 'delete', version: null, fields: [] }),
  ],
  ['GET', '/admin/v1/openapi.json', 200, JSON.parse(readFileSync(OPENAPI_DOCUMENT_PATH, 'utf8'))],
  ['GET', '/admin/v1/oauth/settings', 200, oauthOff],
  ['GET', '/admin/v1/oauth/settings', 200, oauthCatalog],
  ['GET', '/admin/v1/oauth/settings', 200, oauthConfig],
  ['PUT', '/admin/v1/oauth/settings', 200, oauthCatalog],
  ['PUT', '/admin/v1/oauth/settings', 200, oauthOff],
  ['DELETE', '/admin/v1/oauth/settings', 200, oauthOff],
  ['GET', '/admin/v1/oauth/clients', 200, list(registeredClient, documentClient)],
  ['GET', '/admin/v1/oauth/grants?user=u-1', 200, list(oauthGrant, oauthRevoked)],
  ['GET', `/admin/v1/oauth/grants/${oauthGrant.id}`, 200, oauthGrant],
  ['DELETE', `/admin/v1/oauth/grants/${oauthGrant.id}`, 200, oauthRevoked],
];

/** Errors each operation documents, with a body of each. */
const ERRORS: [method: string, path: string, status: number, body: unknown][] = [
  ['GET', '/admin/v1/providers', 401, error('missing_credentials')],
  ['GET', '/admin/v1/providers', 401, error('invalid_credentials')],
  ['GET', '/admin/v1/providers', 403, error('admin_required')],
  ['GET', '/admin/v1/providers', 403, error('admin_disabled')],
  ['GET', '/admin/v1/providers', 503, error('catalog_unavailable')],
  ['POST', '/admin/v1/providers', 400, error('invalid_request', 'slug')],
  [
    'POST',
    '/admin/v1/providers',
    400,
    { error: { message: 'Not JSON.', type: 'invalid_request_error', code: 'invalid_json' } },
  ],
  ['POST', '/admin/v1/providers', 409, error('slug_taken', 'slug')],
  ['POST', '/admin/v1/providers', 413, error('body_too_large')],
  ['POST', '/admin/v1/providers', 415, error('unsupported_media_type')],
  ['POST', '/admin/v1/providers', 503, error('catalog_unavailable')],
  ['GET', '/admin/v1/providers/nope', 404, error('not_found')],
  ['PATCH', '/admin/v1/providers/anthropic-prod', 409, error('version_conflict', 'version')],
  ['PATCH', '/admin/v1/providers/bedrock-eu', 409, error('managed_by_config_file')],
  ['DELETE', '/admin/v1/providers/bedrock-eu', 409, error('managed_by_config_file')],
  ['DELETE', '/admin/v1/providers/nope', 404, error('not_found')],
  ['GET', '/admin/v1/providers/nope/models', 404, error('not_found')],
  ['POST', '/admin/v1/mcp-servers', 400, error('invalid_request', 'url')],
  ['GET', '/admin/v1/mcp-servers/nope', 404, error('not_found')],
  ['PATCH', '/admin/v1/prompts/support-triage', 409, error('version_conflict', 'version')],
  ['GET', '/admin/v1/prompts/nope', 404, error('not_found')],
  ['POST', '/admin/v1/api-keys', 400, error('invalid_request', 'user')],
  ['DELETE', '/admin/v1/api-keys/nope', 404, error('not_found')],
  ['POST', '/admin/v1/api-keys', 400, error('invalid_request', 'config')],
  ['POST', '/admin/v1/configs', 400, error('invalid_request', 'config')],
  ['DELETE', '/admin/v1/configs/claude-fallback', 409, error('config_in_use')],
  ['POST', '/admin/v1/virtual-servers', 400, error('invalid_request', 'members.0.server')],
  ['POST', '/admin/v1/virtual-servers', 409, error('slug_taken', 'slug')],
  ['POST', '/admin/v1/mcp-servers', 409, error('slug_taken', 'slug')],
  ['DELETE', '/admin/v1/mcp-servers/crm', 409, error('server_in_use')],
  ['POST', '/admin/v1/virtual-servers', 400, error('virtual_tool_collision', 'members')],
  ['PATCH', '/admin/v1/virtual-servers/workbench', 400, error('virtual_tool_collision', 'members')],
  ['GET', '/admin/v1/audit?limit=9999', 400, error('invalid_request', 'limit')],
  ['GET', '/admin/v1/access/explain?resource=nope', 400, error('invalid_request', 'resource')],
  ['GET', '/admin/v1/requests?limit=9999', 400, error('invalid_request', 'limit')],
  ['POST', '/admin/v1/mcp-servers/tickets/tools/nope/approve', 404, error('not_found')],
  ['GET', '/admin/v1/openapi.json', 401, error('missing_credentials')],
  ['PUT', '/admin/v1/oauth/settings', 400, error('invalid_request', 'login.clientSecret')],
  ['PUT', '/admin/v1/oauth/settings', 409, error('managed_by_config_file')],
  ['DELETE', '/admin/v1/oauth/settings', 409, error('managed_by_config_file')],
  ['GET', '/admin/v1/oauth/clients', 404, error('route_not_found')],
  // The OAuth operator routes leave `param` out.
  [
    'GET',
    '/admin/v1/oauth/grants',
    401,
    { error: { message: 'No credentials.', type: 'authentication_error', code: 'missing_credentials' } },
  ],
  ['GET', '/admin/v1/oauth/grants?user=', 400, error('invalid_request', 'user')],
  [
    'DELETE',
    '/admin/v1/oauth/grants/nope',
    404,
    { error: { message: 'No such grant.', type: 'invalid_request_error', code: 'not_found' } },
  ],
  // Statuses an operation does not list fall back to its `default` response: the same Error.
  ['POST', '/admin/v1/api-keys', 405, error('method_not_allowed')],
];

describe('the admin API OpenAPI document', () => {
  const document = JSON.parse(readFileSync(OPENAPI_DOCUMENT_PATH, 'utf8'));

  test('is OpenAPI 3.1 with a title, a version, a server and bearer security', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: 'Gateway admin API', version: '1' });
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(document.components.securitySchemes.adminBearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.security).toEqual([{ adminBearer: [] }]);
  });

  test('documents the operations of the contract', () => {
    expect(
      documentedOperations()
        .map(({ method, path }) => `${method} ${path}`)
        .sort(),
    ).toEqual(
      [
        'GET /admin/v1/providers',
        'POST /admin/v1/providers',
        'GET /admin/v1/providers/{slug}',
        'PATCH /admin/v1/providers/{slug}',
        'DELETE /admin/v1/providers/{slug}',
        'GET /admin/v1/providers/{slug}/models',
        'GET /admin/v1/mcp-servers',
        'POST /admin/v1/mcp-servers',
        'GET /admin/v1/mcp-servers/{slug}',
        'PATCH /admin/v1/mcp-servers/{slug}',
        'DELETE /admin/v1/mcp-servers/{slug}',
        'GET /admin/v1/prompts',
        'POST /admin/v1/prompts',
        'GET /admin/v1/prompts/{id}',
        'PATCH /admin/v1/prompts/{id}',
        'DELETE /admin/v1/prompts/{id}',
        'GET /admin/v1/api-keys',
        'POST /admin/v1/api-keys',
        'GET /admin/v1/api-keys/{id}',
        'DELETE /admin/v1/api-keys/{id}',
        'GET /admin/v1/policies',
        'POST /admin/v1/policies',
        'GET /admin/v1/policies/{slug}',
        'PATCH /admin/v1/policies/{slug}',
        'DELETE /admin/v1/policies/{slug}',
        'GET /admin/v1/limits',
        'POST /admin/v1/limits',
        'GET /admin/v1/limits/{slug}',
        'PATCH /admin/v1/limits/{slug}',
        'DELETE /admin/v1/limits/{slug}',
        'GET /admin/v1/limits/{slug}/status',
        'GET /admin/v1/configs',
        'POST /admin/v1/configs',
        'GET /admin/v1/configs/{slug}',
        'PATCH /admin/v1/configs/{slug}',
        'DELETE /admin/v1/configs/{slug}',
        'GET /admin/v1/virtual-servers',
        'POST /admin/v1/virtual-servers',
        'GET /admin/v1/virtual-servers/{slug}',
        'PATCH /admin/v1/virtual-servers/{slug}',
        'DELETE /admin/v1/virtual-servers/{slug}',
        'GET /admin/v1/access/explain',
        'GET /admin/v1/access/mode',
        'PUT /admin/v1/access/mode',
        'PATCH /admin/v1/api-keys/{id}',
        'GET /admin/v1/mcp-servers/{slug}/tools',
        'POST /admin/v1/mcp-servers/{slug}/tools/{name}/approve',
        'GET /admin/v1/mcp-servers/{slug}/connections',
        'DELETE /admin/v1/mcp-servers/{slug}/connections/{user}',
        'GET /admin/v1/audit',
        'GET /admin/v1/openapi.json',
        'GET /admin/v1/requests',
        'GET /admin/v1/usage',
        'GET /admin/v1/oauth/settings',
        'PUT /admin/v1/oauth/settings',
        'DELETE /admin/v1/oauth/settings',
        'GET /admin/v1/oauth/clients',
        'GET /admin/v1/oauth/grants',
        'GET /admin/v1/oauth/grants/{id}',
        'DELETE /admin/v1/oauth/grants/{id}',
      ].sort(),
    );
  });

  test('every operation documents 401, 403 and 503 as the Error response, and a default', () => {
    for (const { method, path } of documentedOperations()) {
      const responses = document.paths[path][method.toLowerCase()].responses;
      for (const status of ['401', '403', '503', 'default']) {
        expect([`${method} ${path} ${status}`, responses[status]?.$ref]).toEqual([
          `${method} ${path} ${status}`,
          expect.stringMatching(/^#\/components\/responses\//),
        ]);
      }
    }
  });

  test('every operation has a sample answer here', () => {
    const sampled = new Set(SAMPLES.map(([method, path]) => JSON.stringify(findOperation(method, path))));
    for (const operation of documentedOperations()) expect(sampled).toContain(JSON.stringify(operation));
  });

  test('matches concrete paths to templates, ignoring the query string', () => {
    expect(findOperation('get', '/admin/v1/providers/anthropic-prod/models')).toEqual({
      method: 'GET',
      path: '/admin/v1/providers/{slug}/models',
    });
    expect(findOperation('PATCH', '/admin/v1/prompts/p.1')).toEqual({
      method: 'PATCH',
      path: '/admin/v1/prompts/{id}',
    });
    expect(findOperation('GET', '/admin/v1/audit?limit=5')).toEqual({ method: 'GET', path: '/admin/v1/audit' });
    expect(findOperation('GET', '/admin/v1/providers/a/b')).toBeUndefined();
  });
});

describe('expectMatchesOpenApi', () => {
  test.each(SAMPLES)('accepts a valid answer of %s %s (%d)', (method, path, status, body) => {
    expect(() => expectMatchesOpenApi(method, path, status, body)).not.toThrow();
  });

  test.each(ERRORS)('accepts the error answer of %s %s (%d)', (method, path, status, body) => {
    expect(() => expectMatchesOpenApi(method, path, status, body)).not.toThrow();
  });

  /** What Ajv found, without the body the error quotes after it. */
  const failure = (method: string, path: string, status: number, body: unknown): string => {
    try {
      expectMatchesOpenApi(method, path, status, body);
    } catch (e) {
      return (e as Error).message.split('\nBody: ')[0] ?? '';
    }
    throw new Error(`${method} ${path} ${status}: accepted`);
  };

  describe('refuses a secret in an answer', () => {
    // [method, path, status, body, the secret field]; Ajv names it (unevaluatedProperty) in records,
    // and answers "must NOT be valid" for the `not` that keeps secret names out of prompts.
    const cases: [string, string, number, unknown, string][] = [
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, apiKey: 'sk-ant-secret-7f3a' }, 'apiKey'],
      ['POST', '/admin/v1/providers', 201, { ...bedrock, secretAccessKey: 'aws/secret' }, 'secretAccessKey'],
      ['PATCH', '/admin/v1/providers/bedrock-eu', 200, { ...bedrock, accessKeyId: 'AKIAEXAMPLE' }, 'accessKeyId'],
      ['GET', '/admin/v1/providers/bedrock-eu', 200, { ...bedrock, sessionToken: 'token' }, 'sessionToken'],
      [
        'GET',
        '/admin/v1/providers',
        200,
        list(anthropic, { ...bedrock, secretAccessKey: 'aws/secret' }),
        'secretAccessKey',
      ],
      // A Bedrock provider carrying an Anthropic key matches neither branch.
      ['GET', '/admin/v1/providers/bedrock-eu', 200, { ...bedrock, apiKey: 'sk-ant' }, 'apiKey'],
      ['GET', '/admin/v1/mcp-servers/tickets', 200, { ...mcpServer, apiKey: 'x' }, 'apiKey'],
      ['GET', '/admin/v1/prompts/support-triage', 200, { ...prompt, apiKey: 'sk-ant' }, 'not'],
      ['GET', '/admin/v1/prompts', 200, list({ ...prompt, secretAccessKey: 'x' }), 'not'],
      ['PATCH', '/admin/v1/prompts/support-triage', 200, { ...prompt, sessionToken: 'x' }, 'not'],
      ['POST', '/admin/v1/prompts', 201, { ...prompt, key: 'x' }, 'not'],
      ['GET', '/admin/v1/api-keys/key-alice', 200, { ...apiKey, key: 'gw-secret' }, 'key'],
      ['GET', '/admin/v1/api-keys', 200, list({ ...apiKey, key: 'gw-secret' }), 'key'],
      ['GET', '/admin/v1/api-keys/key-ci', 200, { ...configApiKey, keySha256: 'ab'.repeat(32) }, 'keySha256'],
      ['POST', '/admin/v1/api-keys', 201, { ...apiKeyCreated, keySha256: 'ab'.repeat(32) }, 'keySha256'],
      ['GET', '/admin/v1/api-keys/key-alice', 200, { ...apiKey, user: { ...apiKey.user, apiKey: 'sk-ant' } }, 'not'],
      ['DELETE', '/admin/v1/api-keys/key-alice', 200, { ...deleted('key-alice', 'api_key'), key: 'gw-secret' }, 'key'],
    ];
    const titled = cases.map(([method, path, status, body, field]) => [method, path, status, field, body] as const);
    test.each(titled)('%s %s (%d): %s', (method, path, status, field, body) => {
      const found = failure(method, path, status, body);
      expect(found).toContain('does not match the OpenAPI document');
      if (field === 'not') expect(found).toMatch(/must NOT be valid .*\/not\]/);
      else expect(found).toMatch(new RegExp(`"(unevaluatedProperty|additionalProperty)":"${field}"`));
    });
  });

  test('refuses the OpenID Provider client secret in the OAuth settings, and a token in a grant', () => {
    const login = { ...oauthCatalog.login, clientSecret: 'oidc-secret' };
    expect(failure('GET', '/admin/v1/oauth/settings', 200, { ...oauthCatalog, login })).toContain(
      '"additionalProperty":"clientSecret"',
    );
    expect(failure('GET', '/admin/v1/oauth/settings', 200, { ...oauthConfig, login })).toContain(
      '"additionalProperty":"clientSecret"',
    );
    expect(
      failure('GET', '/admin/v1/oauth/grants', 200, list({ ...oauthGrant, refresh_token: 'rt-secret' })),
    ).toContain('"additionalProperty":"refresh_token"');
  });

  test('accepts `key` on API-key creation only, and only a gw- key', () => {
    expect(() => expectMatchesOpenApi('POST', '/admin/v1/api-keys', 201, apiKeyCreated)).not.toThrow();
    expect(() => expectMatchesOpenApi('POST', '/admin/v1/api-keys', 201, apiKey)).toThrow(/key/);
    expect(() => expectMatchesOpenApi('POST', '/admin/v1/api-keys', 201, { ...apiKey, key: 'sk-1' })).toThrow(
      /pattern/,
    );
  });

  describe('refuses an answer missing a required field', () => {
    const without = (record: Record<string, unknown>, field: string) =>
      Object.fromEntries(Object.entries(record).filter(([name]) => name !== field));
    const cases: [string, string, number, unknown, string][] = [
      ['GET', '/admin/v1/providers/anthropic-prod', 200, without(anthropic, 'version'), 'version'],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, without(anthropic, 'apiKeyHint'), 'apiKeyHint'],
      ['GET', '/admin/v1/providers/bedrock-eu', 200, without(bedrock, 'region'), 'region'],
      ['GET', '/admin/v1/providers/bedrock-eu', 200, without(bedrock, 'provider'), 'provider'],
      ['POST', '/admin/v1/mcp-servers', 201, without(mcpServer, 'url'), 'url'],
      ['GET', '/admin/v1/prompts/support-triage', 200, without(prompt, 'messages'), 'messages'],
      ['GET', '/admin/v1/api-keys/key-alice', 200, without(apiKey, 'createdAt'), 'createdAt'],
      ['GET', '/admin/v1/api-keys', 200, { data: [apiKey] }, 'object'],
      [
        'GET',
        '/admin/v1/providers/anthropic-prod/models',
        200,
        list({ id: 'claude-sonnet-4-5', enabled: true }),
        'source',
      ],
      [
        'GET',
        '/admin/v1/providers/anthropic-prod/models',
        200,
        { ...list({ id: 'm' }), source: 'provider' },
        'enabled',
      ],
      ['GET', '/admin/v1/audit', 200, list(without(auditEntry, 'fields')), 'fields'],
      ['DELETE', '/admin/v1/prompts/support-triage', 200, { id: 'support-triage', object: 'prompt' }, 'deleted'],
      [
        'GET',
        '/admin/v1/providers',
        401,
        { error: { message: 'No credentials.', type: 'authentication_error' } },
        'code',
      ],
    ];
    const titled = cases.map(([method, path, status, body, field]) => [method, path, status, field, body] as const);
    test.each(titled)('%s %s (%d) without %s', (method, path, status, field, body) => {
      expect(failure(method, path, status, body)).toContain(
        `must have required property '${field}' {"missingProperty":"${field}"}`,
      );
    });
  });

  test('refuses values the document does not allow', () => {
    const bad: [string, string, number, unknown][] = [
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, version: 0 }],
      ['GET', '/admin/v1/prompts/support-triage', 200, { ...prompt, messages: [] }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, source: 'database' }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, createdAt: 'yesterday' }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, apiKeyHint: 'sk-ant-secret-7f3a' }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, slug: '-bad' }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, provider: 'openai' }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, models: { mode: 'custom' } }],
      ['GET', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, models: { mode: 'all', models: [] } }],
      ['GET', '/admin/v1/mcp-servers/tickets', 200, { ...mcpServer, user_identity_forwarding: { method: 'cookie' } }],
      ['GET', '/admin/v1/audit', 200, list({ ...auditEntry, action: 'rename' })],
      ['DELETE', '/admin/v1/providers/anthropic-prod', 200, deleted('x', 'prompt')],
      ['DELETE', '/admin/v1/providers/anthropic-prod', 200, { id: 'x', object: 'provider', deleted: false }],
      ['GET', '/admin/v1/oauth/settings', 200, { ...oauthCatalog, version: undefined }],
      ['GET', '/admin/v1/oauth/settings', 200, { ...oauthConfig, version: 1 }],
      ['GET', '/admin/v1/oauth/settings', 200, { ...oauthOff, enabled: true }],
      ['DELETE', '/admin/v1/oauth/settings', 200, oauthCatalog],
      ['GET', '/admin/v1/oauth/clients', 200, list({ ...registeredClient, metadata_document: true })],
      [
        'GET',
        '/admin/v1/oauth/clients',
        200,
        list({ ...documentClient, redirect_uris: ['https://app.example.com/cb'] }),
      ],
      ['GET', '/admin/v1/oauth/grants', 200, list({ ...oauthGrant, revokedReason: 'expired' })],
      ['DELETE', `/admin/v1/oauth/grants/${oauthGrant.id}`, 200, oauthGrant],
    ];
    for (const [method, path, status, body] of bad) {
      expect(() => expectMatchesOpenApi(method, path, status, body)).toThrow(/does not match the OpenAPI document/);
    }
  });

  test('its error names the method, the path, the status and what Ajv found', () => {
    let message = '';
    try {
      expectMatchesOpenApi('get', '/admin/v1/providers/anthropic-prod', 200, { ...anthropic, apiKey: 'sk-ant-x' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('GET /admin/v1/providers/anthropic-prod → 200');
    expect(message).toContain('GET /admin/v1/providers/{slug}, response 200');
    expect(message).toMatch(/must NOT have unevaluated properties.*"unevaluatedProperty":"apiKey"/);
  });

  test('refuses a path, method or status the document does not describe', () => {
    expect(() => expectMatchesOpenApi('GET', '/admin/v1/nothing', 200, {})).toThrow(
      'GET /admin/v1/nothing → 200: no such operation in the OpenAPI document.',
    );
    expect(() => expectMatchesOpenApi('GET', '/admin/v2/providers', 200, list())).toThrow(/no such operation/);
    expect(() => expectMatchesOpenApi('GET', '/admin/v1/providers/a/b/c', 200, {})).toThrow(/no such operation/);
    expect(() => expectMatchesOpenApi('PUT', '/admin/v1/providers/anthropic-prod', 200, anthropic)).toThrow(
      /PUT .* no such operation/,
    );
    expect(() => expectMatchesOpenApi('PUT', '/admin/v1/api-keys/key-alice', 200, apiKey)).toThrow(/no such operation/);
    // A status the operation does not list falls back to `default`: the Error schema, which a record is not.
    expect(() => expectMatchesOpenApi('GET', '/admin/v1/providers', 299, list())).toThrow(
      /GET \/admin\/v1\/providers → 299 does not match .*response default/,
    );
  });
});

// The module path this helper reads from stays where package.json exports it.
test('package.json publishes the document', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8'));
  expect(pkg.files).toContain('openapi');
  expect(pkg.exports['./openapi/admin-v1.json']).toBe('./openapi/admin-v1.json');
});
