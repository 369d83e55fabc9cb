import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { resolveVirtualServer, type VirtualMember } from '../../src/virtual/config';
import { VirtualToolCollisionError } from '../../src/virtual/errors';
import type { MemberUnavailable } from '../../src/virtual/fan-out';
import { MemberNames } from '../../src/virtual/names';
import { VirtualMembers, findToolCollisions, type VirtualNameCollision } from '../../src/virtual/virtual-members';

const tool = (name: string, description = `${name} tool`): Tool => ({
  name,
  description,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
});

const virtual = (...members: VirtualMember[]) => resolveVirtualServer({ slug: 'workbench', members });

/** Members answering from fixed lists; `asked` records each request in the order it was made. */
function lists<T>(answers: Record<string, readonly T[] | Promise<readonly T[]>>) {
  const asked: string[] = [];
  const signals = new Map<string, AbortSignal>();
  const ask = (server: string, signal: AbortSignal) => {
    asked.push(server);
    signals.set(server, signal);
    const answer = answers[server];
    if (answer === undefined) return Promise.reject(new Error(`${server} is down`));
    return Promise.resolve(answer);
  };
  return { ask, asked, signals };
}

describe('the names of one member', () => {
  const names = new MemberNames(
    virtual({ server: 'crm', prefix: 'crm_', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'ticket' } })
      .members[0]!,
  );
  it('offers the tools its patterns match, renamed as they are, else prefixed', () => {
    expect(names.publicToolName('search_people')).toBe('crm_search_people');
    expect(names.publicToolName('get_ticket')).toBe('ticket');
    expect(names.publicToolName('delete_ticket')).toBeUndefined();
    expect(names.publicPromptName('get_ticket')).toBe('crm_get_ticket');
  });
  it('gives back the own name of a public name from the name alone', () => {
    expect(names.ownToolName('ticket')).toBe('get_ticket');
    expect(names.ownToolName('crm_search_people')).toBe('search_people');
    // The renamed tool is not reachable under its prefixed name, nor a tool the patterns leave out.
    expect(names.ownToolName('crm_get_ticket')).toBeUndefined();
    expect(names.ownToolName('crm_delete_ticket')).toBeUndefined();
    expect(names.ownToolName('crm_')).toBeUndefined();
    expect(names.ownToolName('search_people')).toBeUndefined();
    expect(names.ownPromptName('crm_summary')).toBe('summary');
    expect(names.ownPromptName('crm_')).toBeUndefined();
    expect(names.ownPromptName('summary')).toBeUndefined();
  });
  it('without a prefix, knows only its renames from the name alone', () => {
    const plain = new MemberNames(virtual({ server: 'docs', rename: { find: 'docs_find' } }).members[0]!);
    expect(plain.publicToolName('read')).toBe('read');
    expect(plain.ownToolName('docs_find')).toBe('find');
    expect(plain.ownToolName('read')).toBeUndefined();
    expect(plain.ownPromptName('read')).toBeUndefined();
  });
});

describe('tools/list of a virtual server', () => {
  it('lists the members in member order, asked at once, under their public names, schemas unchanged', async () => {
    const members = new VirtualMembers(
      virtual(
        { server: 'tracker', prefix: 'tracker_' },
        { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' } },
      ),
    );
    let releaseTracker: (tools: Tool[]) => void = () => undefined;
    const tracker = new Promise<Tool[]>((resolve) => (releaseTracker = resolve));
    const { ask, asked } = lists<Tool>({
      tracker,
      crm: [tool('search_people'), tool('get_ticket'), tool('delete_ticket')],
    });
    const listing = members.listTools(ask);
    // Both asked before the first answered: in parallel.
    expect(asked).toEqual(['tracker', 'crm']);
    releaseTracker([tool('open'), tool('close')]);
    const listed = await listing;
    expect(listed.map((t) => t.name)).toEqual(['tracker_open', 'tracker_close', 'search_people', 'crm_ticket']);
    expect(listed[3]).toEqual({ ...tool('get_ticket'), name: 'crm_ticket' });
    expect(listed[2]).toEqual(tool('search_people'));
    expect(members.routeTool('tracker_open')).toEqual({ server: 'tracker', name: 'open' });
    expect(members.routeTool('crm_ticket')).toEqual({ server: 'crm', name: 'get_ticket' });
    expect(members.routeTool('search_people')).toEqual({ server: 'crm', name: 'search_people' });
    expect(members.routeTool('delete_ticket')).toBeUndefined();
    expect(members.routeTool('get_ticket')).toBeUndefined();
    expect(members.routeTool('nothing')).toBeUndefined();
  });

  it('leaves out a member that fails and reports it; the others are listed', async () => {
    const members = new VirtualMembers(virtual({ server: 'tracker', prefix: 't_' }, { server: 'crm' }));
    const unavailable: MemberUnavailable[] = [];
    const { ask } = lists<Tool>({ crm: [tool('search')] });
    const listed = await members.listTools(ask, { onUnavailable: (u) => unavailable.push(u) });
    expect(listed.map((t) => t.name)).toEqual(['search']);
    expect(unavailable).toEqual([{ server: 'tracker', reason: 'error', error: new Error('tracker is down') }]);
    // A name carrying the failing member's prefix still leads to it (its call then says it is unavailable).
    expect(members.routeTool('t_open')).toEqual({ server: 'tracker', name: 'open' });
  });

  it('leaves out a member that throws instead of returning a promise', async () => {
    const members = new VirtualMembers(virtual({ server: 'tracker' }, { server: 'crm' }));
    const unavailable: MemberUnavailable[] = [];
    const listed = await members.listTools(
      (server) => {
        if (server === 'tracker') throw new Error('no connection');
        return Promise.resolve([tool('search')]);
      },
      { onUnavailable: (u) => unavailable.push(u) },
    );
    expect(listed.map((t) => t.name)).toEqual(['search']);
    expect(unavailable.map((u) => [u.server, u.reason])).toEqual([['tracker', 'error']]);
  });

  describe('with a member that does not answer', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('waits its timeout_ms (default 5000), aborts it, reports it and lists the others', async () => {
      const members = new VirtualMembers(
        virtual(
          { server: 'tracker', prefix: 't_' },
          { server: 'crm', timeout_ms: 200 },
          { server: 'docs', prefix: 'd_' },
        ),
      );
      const unavailable: MemberUnavailable[] = [];
      const { ask, signals } = lists<Tool>({
        tracker: new Promise<Tool[]>(() => undefined),
        crm: new Promise<Tool[]>(() => undefined),
        docs: [tool('read')],
      });
      let done = false;
      const listing = members.listTools(ask, { onUnavailable: (u) => unavailable.push(u) });
      void listing.then(() => (done = true));
      await jest.advanceTimersByTimeAsync(199);
      expect(unavailable).toEqual([]);
      await jest.advanceTimersByTimeAsync(1);
      expect(unavailable).toEqual([{ server: 'crm', reason: 'timeout' }]);
      expect(signals.get('crm')?.aborted).toBe(true);
      expect(signals.get('tracker')?.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(4799);
      expect(done).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect((await listing).map((t) => t.name)).toEqual(['d_read']);
      expect(unavailable).toEqual([
        { server: 'crm', reason: 'timeout' },
        { server: 'tracker', reason: 'timeout' },
      ]);
      expect(signals.get('tracker')?.aborted).toBe(true);
      expect(signals.get('docs')?.aborted).toBe(false);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('keeps the routes of the tools it listed before', async () => {
      const members = new VirtualMembers(virtual({ server: 'tracker' }, { server: 'crm', timeout_ms: 100 }));
      await members.listTools(lists<Tool>({ tracker: [tool('open')], crm: [tool('search')] }).ask);
      const listing = members.listTools(
        lists<Tool>({ tracker: [tool('open')], crm: new Promise<Tool[]>(() => undefined) }).ask,
      );
      await jest.advanceTimersByTimeAsync(100);
      expect((await listing).map((t) => t.name)).toEqual(['open']);
      expect(members.routeTool('search')).toEqual({ server: 'crm', name: 'search' });
      // A member that answered forgets what it no longer lists.
      await members.listTools(lists<Tool>({ tracker: [], crm: [tool('search')] }).ask);
      expect(members.routeTool('open')).toBeUndefined();
    });
  });

  it('leaves out the later member of a name two list, with a report', async () => {
    const members = new VirtualMembers(
      virtual({ server: 'tracker' }, { server: 'crm', rename: { find: 'search' } }, { server: 'docs' }),
    );
    const collisions: VirtualNameCollision[] = [];
    const listed = await members.listTools(
      lists<Tool>({ tracker: [tool('search', 'tracker')], crm: [tool('find')], docs: [tool('search', 'docs')] }).ask,
      { onCollision: (c) => collisions.push(c) },
    );
    expect(listed).toEqual([tool('search', 'tracker')]);
    expect(collisions).toEqual([
      { kind: 'tool', name: 'search', kept: 'tracker', dropped: 'crm' },
      { kind: 'tool', name: 'search', kept: 'tracker', dropped: 'docs' },
    ]);
    expect(members.routeTool('search')).toEqual({ server: 'tracker', name: 'search' });
  });
});

describe('collisions found when the members can be listed (start-up, admin API)', () => {
  it('refuses two members with the same prefix, or both without one, listing the same name', () => {
    const same = virtual({ server: 'tracker', prefix: 'x_' }, { server: 'crm', prefix: 'x_' });
    expect(() =>
      findToolCollisions(
        same,
        new Map([
          ['tracker', ['open', 'search']],
          ['crm', ['search']],
        ]),
      ),
    ).toThrow(
      new VirtualToolCollisionError(
        'virtualServers[workbench]: "tracker" and "crm" would both list the tool "x_search"; give one of them a prefix, or rename one of the tools.',
      ),
    );
    try {
      findToolCollisions(
        virtual({ server: 'tracker' }, { server: 'crm' }),
        new Map([
          ['tracker', ['a']],
          ['crm', ['a']],
        ]),
      );
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(VirtualToolCollisionError);
      expect((error as VirtualToolCollisionError).code).toBe('virtual_tool_collision');
      expect((error as VirtualToolCollisionError).status).toBe(400);
    }
  });

  it('refuses a rename onto a name another member lists, and accepts what does not collide', () => {
    const renamed = virtual({ server: 'tracker' }, { server: 'crm', rename: { find: 'open' } });
    expect(() =>
      findToolCollisions(
        renamed,
        new Map([
          ['tracker', ['open']],
          ['crm', ['find']],
        ]),
      ),
    ).toThrow(/"tracker" and "crm" would both list the tool "open"/);
    const apart = virtual({ server: 'tracker', prefix: 't_' }, { server: 'crm', tools: ['search_*'] });
    expect(() =>
      findToolCollisions(
        apart,
        new Map([
          ['tracker', ['search_a']],
          ['crm', ['search_a', 'open', 'open']],
        ]),
      ),
    ).not.toThrow();
    // A name a member lists twice is one tool; a member not listed is not checked.
    expect(() =>
      findToolCollisions(virtual({ server: 'tracker' }, { server: 'crm' }), new Map([['crm', ['a', 'a']]])),
    ).not.toThrow();
  });
});

describe('prompts and resources of a virtual server', () => {
  it('prefixes prompt names (tools and rename do not apply) and routes them back', async () => {
    const members = new VirtualMembers(
      virtual({ server: 'tracker', prefix: 't_', tools: ['x'], rename: { summary: 'nope' } }, { server: 'crm' }),
    );
    const prompt = (name: string): Prompt => ({ name, description: name });
    const collisions: VirtualNameCollision[] = [];
    const listed = await members.listPrompts(
      lists<Prompt>({ tracker: [prompt('summary')], crm: [prompt('summary'), prompt('t_summary')] }).ask,
      { onCollision: (c) => collisions.push(c) },
    );
    expect(listed).toEqual([{ name: 't_summary', description: 'summary' }, prompt('summary')]);
    expect(collisions).toEqual([{ kind: 'prompt', name: 't_summary', kept: 'tracker', dropped: 'crm' }]);
    expect(members.routePrompt('t_summary')).toEqual({ server: 'tracker', name: 'summary' });
    expect(members.routePrompt('summary')).toEqual({ server: 'crm', name: 'summary' });
    expect(members.routePrompt('t_other')).toEqual({ server: 'tracker', name: 'other' });
    expect(members.routePrompt('other')).toBeUndefined();
  });

  it('keeps resource URIs, routes each to the member that listed it, the first member for a URI two list', async () => {
    const members = new VirtualMembers(virtual({ server: 'tracker', prefix: 't_' }, { server: 'crm' }));
    const resource = (uri: string): Resource => ({ uri, name: uri });
    const listed = await members.listResources(
      lists<Resource>({
        tracker: [resource('file:///a'), resource('file:///shared')],
        crm: [resource('file:///shared'), resource('crm://b')],
      }).ask,
    );
    expect(listed.map((r) => r.uri)).toEqual(['file:///a', 'file:///shared', 'crm://b']);
    expect(members.routeResource('file:///shared')).toBe('tracker');
    expect(members.routeResource('crm://b')).toBe('crm');
    expect(members.routeResource('crm://c')).toBeUndefined();
  });

  it('routes a URI matching a member template to the first such member', async () => {
    const members = new VirtualMembers(virtual({ server: 'tracker' }, { server: 'crm' }, { server: 'docs' }));
    const template = (uriTemplate: string): ResourceTemplate => ({ uriTemplate, name: uriTemplate });
    const listed = await members.listResourceTemplates(
      lists<ResourceTemplate>({
        tracker: [template('tickets://{id}')],
        crm: [template('people://{id}'), template('tickets://{id}/notes')],
        docs: [template('people://{id}')],
      }).ask,
    );
    expect(listed.map((t) => t.uriTemplate)).toEqual([
      'tickets://{id}',
      'people://{id}',
      'tickets://{id}/notes',
      'people://{id}',
    ]);
    expect(members.routeResource('people://42')).toBe('crm');
    expect(members.routeResource('tickets://7')).toBe('tracker');
    expect(members.routeResource('docs://x')).toBeUndefined();
  });
});
