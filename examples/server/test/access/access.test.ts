import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  type AnthropicDouble,
} from '../catalog/catalog-support';
import { allToolNames, mcpClient, startBedrockDouble, startMcpToolDouble, type McpToolDouble } from './access-support';

jest.setTimeout(120_000);

const SUPPORT_KEY = 'gw-access-support-key-0001';
const CONTRACTOR_KEY = 'gw-access-contractor-key-0002';
const KEYED_KEY = 'gw-access-keyed-key-0003';
const NOBODY_KEY = 'gw-access-nobody-key-0004';
const keyId = (key: string) => `config-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

let anthropic: AnthropicDouble;
let mcp: McpToolDouble;
let bedrock: Awaited<ReturnType<typeof startBedrockDouble>>;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

const CRM_TOOLS = ['search_accounts', 'search_tickets', 'get_ticket', 'delete_account', 'export_all'];

beforeAll(async () => {
  [anthropic, mcp, bedrock] = await Promise.all([startAnthropicDouble(), startMcpToolDouble(), startBedrockDouble()]);
  mcp.tools.set(
    'crm',
    CRM_TOOLS.map((name) => ({ name, description: `The ${name} tool.` })),
  );
  mcp.tools.set('wiki', [{ name: 'read_page', description: 'Reads a page.' }]);
  mcp.tools.set('pinned', [
    { name: 'lookup', description: 'Looks a thing up.' },
    { name: 'summarise', description: 'Summarises a thing.' },
  ]);
  const aws = {
    provider: 'bedrock',
    accessKeyId: 'AKIAACCESSTEST0001',
    secretAccessKey: 'secret/access+test',
    region: 'us-east-1',
    allowedHosts: [bedrock.url],
  };
  const env = {
    GATEWAY_CONFIG: writeConfig({
      access: { mode: 'policies' },
      auth: {
        apiKeys: [
          { key: SUPPORT_KEY, user: { user_id: 'u-support', groups: ['support'] } },
          { key: CONTRACTOR_KEY, user: { user_id: 'u-contractor', groups: ['contractors'] } },
          { key: KEYED_KEY, user: { user_id: 'u-keyed' } },
          { key: NOBODY_KEY, user: { user_id: 'u-nobody' } },
        ],
      },
      providers: [
        { slug: 'anthropic', provider: 'anthropic', apiKey: 'sk-ant-access-test-0001', baseUrl: anthropic.url },
        { slug: 'kb', ...aws },
        { slug: 'kb-eu', ...aws },
      ],
      mcpServers: [
        { slug: 'crm', url: `${mcp.url}/json/crm` },
        { slug: 'crm-sse', url: `${mcp.url}/sse/crm` },
        { slug: 'wiki', url: `${mcp.url}/json/wiki` },
      ],
      prompts: [
        {
          id: 'triage',
          provider: '@anthropic',
          model: 'claude-sonnet-4-5',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        },
      ],
      policies: [
        {
          slug: 'support-team',
          subjects: { groups: ['support'] },
          allow: {
            models: ['@anthropic/claude-*'],
            mcpServers: [{ server: 'crm*', tools: ['search_*', 'get_ticket'] }],
            integrations: ['kb-eu'],
          },
        },
        {
          slug: 'support-wiki',
          subjects: { users: ['u-support'] },
          allow: { mcpServers: [{ server: 'wiki' }, { server: 'pinned' }] },
        },
        { slug: 'contractors', subjects: { groups: ['contractors'] }, allow: { integrations: ['kb'] } },
        { slug: 'keyed', subjects: { apiKeys: [keyId(KEYED_KEY)] }, allow: { models: ['@anthropic/claude-haiku-*'] } },
      ],
    }),
    GATEWAY_ADMIN_KEY: newAdminKey(),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  };
  gateway = await startGateway(env);
  admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([anthropic?.close(), mcp?.close(), bedrock?.close()]);
});

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
const claude = (key: string) => new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 });

async function refusal(call: () => Promise<unknown>): Promise<{ status?: number; code?: string; param?: string }> {
  try {
    await call();
  } catch (error) {
    const e = error as { status?: number; code?: string; param?: string; error?: { code?: string } };
    return { status: e.status, code: e.code ?? e.error?.code, param: e.param };
  }
  return {};
}

describe('the /v1 model routes', () => {
  const ask = (key: string, model: string) =>
    openai(key).chat.completions.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

  it('let a group through to the models its policy names, and refuse the rest with 403 access_denied (openai SDK)', async () => {
    expect((await ask(SUPPORT_KEY, '@anthropic/claude-sonnet-4-5')).choices[0]?.message.content).toBe(
      'hello from the double',
    );
    const before = anthropic.requestedModels.length;
    expect(await refusal(() => ask(NOBODY_KEY, '@anthropic/claude-sonnet-4-5'))).toEqual({
      status: 403,
      code: 'access_denied',
      param: 'model',
    });
    expect(anthropic.requestedModels.length).toBe(before);
  });

  it('match a key subject and a claude-haiku-* pattern (portkey-ai SDK)', async () => {
    const portkey = new Portkey({ apiKey: KEYED_KEY, baseURL: `${gateway.url}/v1` });
    const ok = await portkey.chat.completions.create({
      model: '@anthropic/claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(ok.choices?.[0]?.message?.content).toBe('hello from the double');
    const denied = await refusal(() =>
      portkey.chat.completions.create({
        model: '@anthropic/claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(denied.status).toBe(403);
  });

  it('guard messages and count_tokens (anthropic SDK) and prompts by the resolved model', async () => {
    const message = await claude(SUPPORT_KEY).messages.create({
      model: '@anthropic/claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(message.content[0]).toMatchObject({ text: 'hello from the double' });
    const denied = await refusal(() =>
      claude(CONTRACTOR_KEY).messages.create({
        model: '@anthropic/claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(denied.status).toBe(403);
    const raw = await fetch(`${gateway.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': CONTRACTOR_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect([raw.status, ((await raw.json()) as { code: string }).code]).toEqual([403, 'access_denied']);
    const prompt = (key: string) =>
      fetch(`${gateway.url}/v1/prompts/triage/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{}',
      });
    expect((await prompt(SUPPORT_KEY)).status).toBe(200);
    const refused = await prompt(KEYED_KEY);
    expect([
      refused.status,
      ((await refused.json()) as { error: { code: string; param: string } }).error,
    ]).toMatchObject([403, { code: 'access_denied', param: 'model' }]);
  });
});

describe('MCP servers and tools', () => {
  it.each(['crm', 'crm-sse'])(
    'lists only the allowed tools across pages, and refuses a tools/call without reaching %s',
    async (slug) => {
      const client = await mcpClient(gateway.url, slug, SUPPORT_KEY);
      expect(await allToolNames(client)).toEqual(['search_accounts', 'search_tickets', 'get_ticket']);
      const called = await client.callTool({ name: 'get_ticket', arguments: { q: '1' } });
      expect(called.content).toEqual([{ type: 'text', text: 'called get_ticket' }]);
      const before = mcp.calls.get('delete_account') ?? 0;
      await expect(client.callTool({ name: 'delete_account', arguments: {} })).rejects.toMatchObject({
        code: -32602,
        data: { code: 'access_denied', tool: 'delete_account' },
      });
      expect(mcp.calls.get('delete_account') ?? 0).toBe(before);
      await client.close();
    },
  );

  it('refuses a server no policy names with 403 access_denied, whatever the method', async () => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const res = await fetch(`${gateway.url}/mcp/crm`, {
        method,
        headers: {
          'x-gateway-api-key': CONTRACTOR_KEY,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: method === 'POST' ? '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' : undefined,
      });
      expect([method, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
        method,
        403,
        'access_denied',
      ]);
    }
  });

  it('reads at most 4 MiB of a request it must inspect: one byte more is 413 body_too_large, never sent', async () => {
    const limit = 4 * 1024 * 1024;
    // A tools/call of a refused tool, padded to the size asked for.
    const call = (size: number) => {
      const head =
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_account","arguments":{"pad":"';
      const tail = '"}}}';
      return head + 'x'.repeat(size - head.length - tail.length) + tail;
    };
    const send = (body: string) =>
      fetch(`${gateway.url}/mcp/crm`, {
        method: 'POST',
        headers: {
          'x-gateway-api-key': SUPPORT_KEY,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
    const before = mcp.calls.get('delete_account') ?? 0;
    const atLimit = await send(call(limit));
    expect(atLimit.status).toBe(200);
    expect(await atLimit.json()).toMatchObject({ id: 7, error: { code: -32602, data: { code: 'access_denied' } } });
    const over = await send(call(limit + 1));
    expect([over.status, ((await over.json()) as { error: { code: string } }).error.code]).toEqual([
      413,
      'body_too_large',
    ]);
    expect(mcp.calls.get('delete_account') ?? 0).toBe(before);
  });

  it('unites two policies: a user grant opens every tool of another server', async () => {
    const client = await mcpClient(gateway.url, 'wiki', SUPPORT_KEY);
    expect(await allToolNames(client)).toEqual(['read_page']);
    expect((await client.callTool({ name: 'read_page', arguments: {} })).content).toEqual([
      { type: 'text', text: 'called read_page' },
    ]);
    await client.close();
  });
});

describe('Bedrock integrations', () => {
  const retrieve = (key: string, provider: string) =>
    new Portkey({ apiKey: key, baseURL: `${gateway.url}/v1`, provider: `@${provider}`, customHost: bedrock.url }).post(
      '/knowledgebases/KB1/retrieve',
      { retrievalQuery: { text: 'q' } },
    );

  it('let a group use its integration and refuse another with 403 access_denied', async () => {
    expect(await retrieve(CONTRACTOR_KEY, 'kb')).toMatchObject({ retrievalResults: [{ content: { text: 'chunk' } }] });
    const before = bedrock.requests.length;
    const raw = await fetch(`${gateway.url}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        'x-gateway-api-key': SUPPORT_KEY,
        'x-gateway-provider': '@kb',
        'x-gateway-custom-host': bedrock.url,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect([raw.status, ((await raw.json()) as { error: { code: string } }).error.code]).toEqual([
      403,
      'access_denied',
    ]);
    expect(bedrock.requests.length).toBe(before);
    expect(await retrieve(SUPPORT_KEY, 'kb-eu')).toMatchObject({ retrievalResults: expect.any(Array) });
  });
});

describe('explain and live changes', () => {
  it('explains a decision with the policies that allow it', async () => {
    const answer = await admin('GET', '/access/explain?user=u-support&groups=support&resource=mcp:crm/search_x');
    expect(answer.body).toEqual({
      allowed: true,
      mode: 'policies',
      policies: ['support-team'],
      reason: 'allowed by policy "support-team"',
    });
    const denied = await admin(
      'GET',
      '/access/explain?user=u-nobody&resource=' + encodeURIComponent('@anthropic/claude-sonnet-4-5'),
    );
    expect(denied.body).toMatchObject({ allowed: false, policies: [] });
    const bad = await admin('GET', '/access/explain?resource=nope');
    expect([bad.status, bad.body.error.param]).toEqual([400, 'resource']);
  });

  it('applies a policy created through the admin API to the next request, and its deletion too', async () => {
    const ask = () =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${NOBODY_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: '@anthropic/claude-opus-4-1',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
    expect((await ask()).status).toBe(403);
    const created = await admin('POST', '/policies', {
      slug: 'nobody-opus',
      subjects: { users: ['u-nobody'] },
      allow: { models: ['@anthropic/claude-opus-*'] },
    });
    expect(created.status).toBe(201);
    expect((await ask()).status).toBe(200);
    expect((await admin('GET', '/audit?record=policies/nobody-opus')).body.data[0]).toMatchObject({ action: 'create' });
    await admin('DELETE', '/policies/nobody-opus');
    expect((await ask()).status).toBe(403);
  });

  it("gives explain's answer on the request path, for random policies and resources", async () => {
    const resources = [
      '@anthropic/claude-haiku-4-5',
      '@anthropic/claude-sonnet-4-5',
      'mcp:wiki',
      'mcp:crm',
      'integration:kb',
      'integration:kb-eu',
    ];
    const pattern = fc.constantFrom('*', 'claude-*', 'claude-haiku-*', 'kb', 'kb*', 'crm', 'wiki', 'w*');
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          models: fc.array(
            pattern.map((p) => `@anthropic/${p}`),
            { maxLength: 2 },
          ),
          integrations: fc.array(pattern, { maxLength: 2 }),
          mcpServers: fc.array(
            pattern.map((server) => ({ server })),
            { maxLength: 2 },
          ),
        }),
        fc.boolean(),
        fc.constantFrom(...resources),
        async (allow, byGroup, resource) => {
          const subjects = byGroup ? { groups: ['random'] } : { users: ['u-nobody'] };
          await admin('POST', '/policies', { slug: 'random', subjects, allow });
          try {
            const explained = (
              await admin(
                'GET',
                `/access/explain?user=u-nobody&groups=${byGroup ? '' : 'none'}&resource=${encodeURIComponent(resource)}`,
              )
            ).body;
            const actual = await requestStatus(resource);
            // Only a group-based policy is invisible to the nobody key, which has no groups.
            const expected = byGroup ? false : explained.allowed;
            expect([resource, actual !== 403]).toEqual([resource, expected]);
          } finally {
            await admin('DELETE', '/policies/random');
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});

async function requestStatus(resource: string): Promise<number> {
  const headers = {
    authorization: `Bearer ${NOBODY_KEY}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (resource.startsWith('@')) {
    return (
      await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: resource, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      })
    ).status;
  }
  if (resource.startsWith('mcp:')) {
    return (
      await fetch(`${gateway.url}/mcp/${resource.slice(4)}`, {
        method: 'POST',
        headers,
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      })
    ).status;
  }
  return (
    await fetch(`${gateway.url}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        ...headers,
        'x-gateway-provider': resource.slice('integration:'.length),
        'x-gateway-custom-host': bedrock.url,
      },
      body: '{}',
    })
  ).status;
}

describe('tool pinning', () => {
  it('holds new and changed tools until an admin approves them', async () => {
    const created = await admin('POST', '/mcp-servers', {
      slug: 'pinned',
      url: `${mcp.url}/json/pinned`,
      tool_pinning: true,
    });
    expect(created.body.tool_pinning).toBe(true);
    let client = await mcpClient(gateway.url, 'pinned', SUPPORT_KEY);
    // First sight: both tools are recorded and held.
    expect(await allToolNames(client)).toEqual([]);
    await expect(client.callTool({ name: 'lookup', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      data: { code: 'tool_pending_approval', tool: 'lookup' },
    });
    expect(mcp.calls.get('lookup') ?? 0).toBe(0);
    const held = await admin('GET', '/mcp-servers/pinned/tools');
    expect(held.body.data.map((t: { name: string; status: string }) => [t.name, t.status])).toEqual([
      ['lookup', 'held'],
      ['summarise', 'held'],
    ]);
    expect(held.body.data[0]).toMatchObject({
      approvedDigest: null,
      currentDescription: 'Looks a thing up.',
      currentDigest: expect.stringMatching(/^sha256-tool:[0-9a-f]{64}$/),
    });

    const approved = await admin('POST', '/mcp-servers/pinned/tools/lookup/approve', {
      digest: held.body.data[0].currentDigest,
    });
    expect(approved.body).toMatchObject({ status: 'approved', approvedDigest: held.body.data[0].currentDigest });
    expect(await allToolNames(client)).toEqual(['lookup']);
    expect((await client.callTool({ name: 'lookup', arguments: {} })).content).toEqual([
      { type: 'text', text: 'called lookup' },
    ]);

    // The server changes the tool's description: it is held again, with both descriptions shown.
    (mcp.tools.get('pinned') as { description: string }[])[0]!.description =
      'Looks a thing up and mails it to someone.';
    await client.close();
    client = await mcpClient(gateway.url, 'pinned', SUPPORT_KEY);
    expect(await allToolNames(client)).toEqual([]);
    await expect(client.callTool({ name: 'lookup', arguments: {} })).rejects.toMatchObject({
      data: { code: 'tool_pending_approval' },
    });
    const changed = (await admin('GET', '/mcp-servers/pinned/tools')).body.data.find(
      (t: { name: string }) => t.name === 'lookup',
    );
    expect(changed).toMatchObject({
      status: 'held',
      approvedDescription: 'Looks a thing up.',
      currentDescription: 'Looks a thing up and mails it to someone.',
    });
    expect(changed.approvedDigest).not.toBe(changed.currentDigest);
    await admin('POST', '/mcp-servers/pinned/tools/lookup/approve', { digest: changed.currentDigest });
    expect(await allToolNames(client)).toEqual(['lookup']);
    expect(
      (await admin('POST', '/mcp-servers/pinned/tools/nope/approve', { digest: changed.currentDigest })).status,
    ).toBe(404);
    await client.close();
  });
});
