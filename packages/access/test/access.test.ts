import fc from 'fast-check';
import {
  allToolsAllowed,
  compileAccess,
  compilePattern,
  decide,
  parseResource,
  type AccessCaller,
  type AccessPolicy,
  type AccessResource,
} from '../src';

const support: AccessPolicy = {
  slug: 'support-team',
  subjects: { groups: ['support'] },
  allow: {
    models: ['@anthropic/claude-*'],
    mcpServers: [{ server: 'crm', tools: ['search_*', 'get_ticket'] }],
    integrations: ['kb-eu'],
  },
};
const contractor: AccessPolicy = {
  slug: 'contractors',
  subjects: { users: ['u-9'], apiKeys: ['key-1'] },
  allow: { integrations: ['kb-contractors'], mcpServers: [{ server: 'wiki' }] },
};

describe('patterns', () => {
  it('match * as any run of characters, and nothing else specially', () => {
    const p = compilePattern('claude-*');
    expect(p.matches('claude-sonnet-4-5')).toBe(true);
    expect(p.matches('claude-')).toBe(true);
    expect(p.matches('xclaude-a')).toBe(false);
    expect(compilePattern('a*b*c').matches('abc')).toBe(true);
    expect(compilePattern('a*b*c').matches('aXbYcZ')).toBe(false);
    expect(compilePattern('a*bc*bc').matches('abcbc')).toBe(true);
    // Characters that mean something in a regular expression mean themselves here.
    expect(compilePattern('a.b').matches('axb')).toBe(false);
    expect(compilePattern('(x+)+$').matches('(x+)+$')).toBe(true);
  });

  it('refuses empty, overlong and star-heavy patterns', () => {
    expect(() => compilePattern('')).toThrow(/non-empty/);
    expect(() => compilePattern('x'.repeat(300))).toThrow(/longer than 256/);
    expect(() => compilePattern('*'.repeat(20))).toThrow(/more than 16/);
  });

  it('agree with a regular expression built from the escaped pattern', () => {
    const alphabet = fc.constantFrom('a', 'b', '*', '.', '-');
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, minLength: 1, maxLength: 8 }),
        fc.string({ unit: fc.constantFrom('a', 'b', '.', '-'), maxLength: 10 }),
        (pattern, text) => {
          const regex = new RegExp(
            `^${pattern
              .split('*')
              .map((p) => p.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'))
              .join('.*')}$`,
            's',
          );
          expect(compilePattern(pattern).matches(text)).toBe(regex.test(text));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('decide', () => {
  const snapshot = compileAccess({ mode: 'policies', policies: [support, contractor] });

  it('allows everything in open mode', () => {
    expect(decide(compileAccess({}), {}, parseResource('@x/y'))).toMatchObject({
      allowed: true,
      mode: 'open',
      policies: [],
    });
  });

  it('allows by group, user and API key, and names the policies', () => {
    const agent: AccessCaller = { user: 'u-1', groups: ['support'] };
    expect(decide(snapshot, agent, parseResource('@anthropic/claude-sonnet-4-5'))).toEqual({
      allowed: true,
      mode: 'policies',
      policies: ['support-team'],
      reason: 'allowed by policy "support-team"',
    });
    expect(decide(snapshot, agent, parseResource('@anthropic/gpt-4')).allowed).toBe(false);
    expect(decide(snapshot, agent, parseResource('mcp:crm')).allowed).toBe(true);
    expect(decide(snapshot, agent, parseResource('mcp:crm/search_accounts')).allowed).toBe(true);
    expect(decide(snapshot, agent, parseResource('mcp:crm/delete_account')).allowed).toBe(false);
    expect(decide(snapshot, agent, parseResource('integration:kb-eu')).allowed).toBe(true);
    expect(decide(snapshot, { user: 'u-9' }, parseResource('mcp:wiki/anything')).allowed).toBe(true);
    expect(decide(snapshot, { apiKey: 'key-1' }, parseResource('integration:kb-contractors')).allowed).toBe(true);
    expect(decide(snapshot, { user: 'nobody' }, parseResource('integration:kb-eu'))).toMatchObject({
      allowed: false,
      reason: 'no policy names this caller (by user id, group or API key)',
    });
  });

  it('unites the policies that name a caller', () => {
    const both: AccessCaller = { user: 'u-9', groups: ['support'] };
    expect(decide(snapshot, both, parseResource('integration:kb-eu')).policies).toEqual(['support-team']);
    expect(decide(snapshot, both, parseResource('integration:kb-contractors')).policies).toEqual(['contractors']);
    const twice = compileAccess({ mode: 'policies', policies: [support, { ...support, slug: 'again' }] });
    expect(decide(twice, { groups: ['support'] }, parseResource('integration:kb-eu')).policies).toEqual([
      'support-team',
      'again',
    ]);
  });

  it('says when a caller may use every tool of a server', () => {
    expect(allToolsAllowed(snapshot, { user: 'u-9' }, 'wiki')).toBe(true);
    expect(allToolsAllowed(snapshot, { groups: ['support'] }, 'crm')).toBe(false);
  });

  it('refuses malformed resources and policies', () => {
    for (const bad of ['', 'x', '@', '@a/', 'mcp:', 'mcp:/t', 'integration:'])
      expect(() => parseResource(bad)).toThrow(/resource must be/);
    expect(() => compileAccess({ mode: 'closed' as 'open' })).toThrow(/"open", "report" or "policies"/);
    expect(() => compileAccess({ policies: [{ slug: 'x', subjects: { user: ['a'] } as never, allow: {} }] })).toThrow(
      /policies\[x\]\.subjects has an unknown option "user"; the options are users, groups, apiKeys/,
    );
    expect(() => compileAccess({ policies: [support, support] })).toThrow(/two policies/);
  });

  it('agrees with a naive reading of the policies for random policies, callers and resources', () => {
    const name = fc.constantFrom('a', 'b', 'c');
    const pattern = fc.constantFrom('a', 'b', '*', 'a*', '*b');
    const policy = fc.record({
      slug: fc.string({ minLength: 1, maxLength: 4 }),
      subjects: fc.record({
        users: fc.array(name, { maxLength: 2 }),
        groups: fc.array(name, { maxLength: 2 }),
        apiKeys: fc.array(name, { maxLength: 2 }),
      }),
      allow: fc.record({
        models: fc.array(fc.constantFrom('@p/a', '@p/*', '@*/b', '*'), { maxLength: 2 }),
        integrations: fc.array(pattern, { maxLength: 2 }),
        mcpServers: fc.array(
          fc.record(
            { server: pattern, tools: fc.option(fc.array(pattern, { maxLength: 2 }), { nil: undefined }) },
            { requiredKeys: ['server'] },
          ),
          { maxLength: 2 },
        ),
      }),
    });
    const resource: fc.Arbitrary<AccessResource> = fc.oneof(
      fc.record({ kind: fc.constant('model' as const), provider: fc.constantFrom('p', 'q'), model: name }),
      fc.record({ kind: fc.constant('integration' as const), slug: name }),
      fc.record({ kind: fc.constant('mcp' as const), server: name, tool: fc.option(name, { nil: undefined }) }),
    );
    const matches = (p: string, t: string) =>
      new RegExp(
        `^${p
          .split('*')
          .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      ).test(t);
    fc.assert(
      fc.property(
        fc.uniqueArray(policy, { selector: (p) => p.slug, maxLength: 4 }),
        fc.record({
          user: fc.option(name, { nil: undefined }),
          groups: fc.array(name, { maxLength: 2 }),
          apiKey: fc.option(name, { nil: undefined }),
        }),
        resource,
        (policies, caller, r) => {
          const expected = policies
            .filter(
              (p) =>
                (caller.user !== undefined && p.subjects.users.includes(caller.user)) ||
                (caller.apiKey !== undefined && p.subjects.apiKeys.includes(caller.apiKey)) ||
                caller.groups.some((g) => p.subjects.groups.includes(g)),
            )
            .filter((p) =>
              r.kind === 'model'
                ? p.allow.models.some((m) => matches(m, `@${r.provider}/${r.model}`))
                : r.kind === 'integration'
                  ? p.allow.integrations.some((i) => matches(i, r.slug))
                  : p.allow.mcpServers.some(
                      (g) =>
                        matches(g.server, r.server) &&
                        (r.tool === undefined ||
                          g.tools === undefined ||
                          g.tools.some((t) => matches(t, r.tool as string))),
                    ),
            )
            .map((p) => p.slug);
          const snapshot = compileAccess({ mode: 'policies', policies });
          const decision = decide(snapshot, caller, r);
          expect(decision.policies).toEqual(expected);
          expect(decision.allowed).toBe(expected.length > 0);
          // The memoised decisions of the request path agree, asked twice (computed, then remembered).
          const subject = snapshot.subject(caller);
          expect([subject.allows(r), subject.allows(r)]).toEqual([decision.allowed, decision.allowed]);
          if (r.kind === 'mcp') {
            const everyTool = policies.some(
              (p) =>
                ((caller.user !== undefined && p.subjects.users.includes(caller.user)) ||
                  (caller.apiKey !== undefined && p.subjects.apiKeys.includes(caller.apiKey)) ||
                  caller.groups.some((g) => p.subjects.groups.includes(g))) &&
                p.allow.mcpServers.some(
                  (g) => matches(g.server, r.server) && (g.tools === undefined || g.tools.includes('*')),
                ),
            );
            expect(subject.mcpServer(r.server).everyTool).toBe(everyTool);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('decides for 1,000 keys and 100 policies in well under a microsecond budget per request', () => {
    const policies: AccessPolicy[] = Array.from({ length: 100 }, (_, i) => ({
      slug: `p-${i}`,
      subjects: { apiKeys: Array.from({ length: 10 }, (_, k) => `key-${i * 10 + k}`), groups: [`g-${i}`] },
      allow: {
        models: [`@anthropic/claude-${i}-*`, '@anthropic/claude-haiku-*'],
        mcpServers: [{ server: `s-${i}`, tools: ['search_*'] }],
      },
    }));
    const big = compileAccess({ mode: 'policies', policies });
    const resource = parseResource('@anthropic/claude-haiku-4-5');
    // CPU time, not wall time: other processes sharing the machine do not count.
    const started = process.cpuUsage();
    let allowed = 0;
    for (let i = 0; i < 100_000; i++)
      if (decide(big, { user: `u-${i % 1000}`, apiKey: `key-${i % 1000}` }, resource).allowed) allowed++;
    const used = process.cpuUsage(started);
    const perDecision = (used.user + used.system) / 100_000;
    expect(allowed).toBe(100_000);
    // A request to the gateway takes hundreds of microseconds; 5% of it is far above this.
    expect(perDecision).toBeLessThan(5);
  });
});

describe('AccessSnapshot.subject', () => {
  it('remembers 10,000 callers at most, forgetting the oldest first', () => {
    const snapshot = compileAccess({ mode: 'policies', policies: [support, contractor] });
    const first = snapshot.subject({ user: 'u0' });
    for (let i = 1; i < 10_000; i++) snapshot.subject({ user: `u${i}` });
    expect(snapshot.subject({ user: 'u0' })).toBe(first);
    snapshot.subject({ user: 'u10000' });
    const again = snapshot.subject({ user: 'u0' });
    expect(again).not.toBe(first);
    expect(again.policies).toEqual(first.policies);
  });
});
