import { DEFAULT_MEMBER_TIMEOUT_MS, resolveVirtualServer, type VirtualServerConfig } from '../../src/virtual/config';
import { InvalidVirtualServerError } from '../../src/virtual/errors';

const servers = new Set(['tracker', 'crm', 'docs']);

/** The message of the error `config` is refused with (and checks it is the stable 400). */
function refusal(config: unknown, known: { has(slug: string): boolean } | undefined = servers): string {
  try {
    resolveVirtualServer(config as VirtualServerConfig, known);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidVirtualServerError);
    expect((error as InvalidVirtualServerError).code).toBe('invalid_virtual_server');
    expect((error as InvalidVirtualServerError).status).toBe(400);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

const member = (extra: Record<string, unknown>) => ({ slug: 'workbench', members: [{ server: 'tracker', ...extra }] });

describe('a virtual server definition (CONTRACT section 16)', () => {
  it('applies the defaults: no prefix, every tool, no rename, 5000 ms, the slug as name', () => {
    const resolved = resolveVirtualServer(
      {
        slug: 'workbench',
        members: [
          { server: 'tracker', prefix: 'tracker_' },
          { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' }, timeout_ms: 750 },
        ],
      },
      servers,
    );
    expect(DEFAULT_MEMBER_TIMEOUT_MS).toBe(5000);
    expect(resolved.name).toBe('workbench');
    expect(resolved.members[0]).toEqual({
      server: 'tracker',
      prefix: 'tracker_',
      tools: undefined,
      rename: new Map(),
      timeoutMs: 5000,
    });
    expect(resolved.members[1]).toEqual({
      server: 'crm',
      prefix: '',
      tools: ['search_*', 'get_ticket'],
      rename: new Map([['get_ticket', 'crm_ticket']]),
      timeoutMs: 750,
    });
    expect(resolveVirtualServer({ slug: 'w', name: 'Support', members: [{ server: 'docs' }] }).name).toBe('Support');
  });

  it('says what to write for the server itself', () => {
    expect(refusal(null)).toBe('virtualServers[undefined] must be an object with "slug" and "members".');
    expect(refusal({ slug: 'a b', members: [] })).toBe(
      'virtualServers[a b].slug must be letters, digits, ".", "_" or "-" (at most 64), for example "workbench".',
    );
    expect(refusal({ slug: 'w', members: [] })).toBe(
      'virtualServers[w].members must be a list of at least one member, for example [{ "server": "tracker" }].',
    );
    expect(refusal({ slug: 'w', members: [{ server: 'crm' }], servers: [] })).toBe(
      'virtualServers[w] has an unknown field "servers"; allowed: slug, name, members.',
    );
    expect(refusal({ slug: 'w', name: ' ', members: [{ server: 'crm' }] })).toBe(
      'virtualServers[w].name must be a non-empty string, for example "Everything support uses".',
    );
  });

  it('says what to write for each field of a member', () => {
    expect(refusal({ slug: 'workbench', members: ['tracker'] })).toBe(
      'virtualServers[workbench].members[0] must be an object such as { "server": "tracker", "prefix": "tracker_" }.',
    );
    expect(refusal(member({ tool: ['x'] }))).toBe(
      'virtualServers[workbench].members[0] has an unknown field "tool"; allowed: server, prefix, tools, rename, timeout_ms.',
    );
    expect(refusal({ slug: 'workbench', members: [{ server: 'nope' }] })).toBe(
      'virtualServers[workbench].members[0].server names "nope", which is not an MCP server of the gateway.',
    );
    expect(refusal({ slug: 'workbench', members: [{ server: 'workbench' }] }, undefined)).toBe(
      'virtualServers[workbench].members[0].server names the virtual server itself; name an MCP server.',
    );
    expect(refusal({ slug: 'workbench', members: [{ server: 7 }] })).toBe(
      'virtualServers[workbench].members[0].server must be the slug of an MCP server of the gateway, for example "tracker".',
    );
    expect(refusal({ slug: 'workbench', members: [{ server: 'crm' }, { server: 'crm', prefix: 'c_' }] })).toBe(
      'virtualServers[workbench].members[1].server names "crm" a second time; list each server once.',
    );
    expect(refusal(member({ prefix: 'tracker ' }))).toBe(
      'virtualServers[workbench].members[0].prefix must be letters, digits, "_", "-", "." or "/" (at most 64), for example "tracker_".',
    );
    expect(refusal(member({ prefix: '' }))).toMatch(/\.prefix must be/);
    expect(refusal(member({ tools: [] }))).toBe(
      'virtualServers[workbench].members[0].tools must be a list of tool names or "*" patterns, for example ["search_*", "get_ticket"].',
    );
    expect(refusal(member({ tools: 'search_*' }))).toMatch(/\.tools must be a list/);
    expect(refusal(member({ tools: ['ok', ''] }))).toBe(
      'virtualServers[workbench].members[0].tools[1] must be a non-empty string such as "claude-*".',
    );
    expect(refusal(member({ tools: ['*'.repeat(17)] }))).toBe(
      'virtualServers[workbench].members[0].tools[0] has more than 16 "*".',
    );
    expect(refusal(member({ rename: ['a'] }))).toBe(
      'virtualServers[workbench].members[0].rename must be an object of the server\'s tool names to public names, for example { "get_ticket": "crm_ticket" }.',
    );
    expect(refusal(member({ rename: { 'get ticket': 'x' } }))).toBe(
      'virtualServers[workbench].members[0].rename has the key "get ticket", which is not a tool name (letters, digits, "_", "-", "." or "/", at most 128).',
    );
    expect(refusal(member({ rename: { get_ticket: 5 } }))).toBe(
      'virtualServers[workbench].members[0].rename.get_ticket must be a tool name: letters, digits, "_", "-", "." or "/" (at most 128), for example "crm_ticket".',
    );
    for (const timeout of [0, -1, 1.5, 60_001, '5000'])
      expect(refusal(member({ timeout_ms: timeout }))).toBe(
        'virtualServers[workbench].members[0].timeout_ms must be a whole number of milliseconds from 1 to 60000, for example 5000.',
      );
    expect(resolveVirtualServer(member({ timeout_ms: 60_000 }) as VirtualServerConfig).members[0]?.timeoutMs).toBe(
      60_000,
    );
    expect(resolveVirtualServer(member({ timeout_ms: 1 }) as VirtualServerConfig).members[0]?.timeoutMs).toBe(1);
  });

  it('refuses two renames to one public name, in one member or in two', () => {
    expect(refusal(member({ rename: { a: 'same', b: 'same' } }))).toBe(
      'virtualServers[workbench].members[0].rename.b renames to "same", as tracker\'s "a" does; give each tool its own public name.',
    );
    expect(
      refusal({
        slug: 'workbench',
        members: [
          { server: 'tracker', rename: { get: 'ticket' } },
          { server: 'crm', prefix: 'crm_', rename: { fetch: 'ticket' } },
        ],
      }),
    ).toBe(
      'virtualServers[workbench].members[1].rename.fetch renames to "ticket", as tracker\'s "get" does; give each tool its own public name.',
    );
  });
});
