import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { Agent } from 'undici';
import {
  KNOWN_ANTHROPIC_MODELS,
  MAX_BACKGROUND_REFRESHES,
  ProviderKey,
  ProviderModelLists,
  type ModelListProvider,
  type ProviderModelListsOptions,
} from '../src';

const KEY = 'sk-ant-models-test-key-111';
const ROTATED = 'sk-ant-models-test-key-222';
const WRONG = 'sk-ant-models-wrong-key-999';

interface Seen {
  url: URL;
  headers: IncomingHttpHeaders;
}

/**
 * A local server that answers like Anthropic's `GET /v1/models`: it checks `x-api-key` and
 * `anthropic-version`, honours `limit` (up to `pageSize`, so small pages can be forced) and
 * `after_id`, and answers `data`, `has_more`, `first_id` and `last_id`.
 */
async function anthropicModels(options: {
  /** The models each key sees; any other key gets 401. */
  keys: Map<string, string[]>;
  pageSize?: number;
  /** Answer nothing at all. */
  hang?: boolean;
  /** Always `has_more: true`, with a fresh model on every page. */
  endless?: boolean;
  /** Wait this long before every answer. */
  delayMs?: number;
}) {
  const seen: Seen[] = [];
  const pageSize = options.pageSize ?? 1000;
  let endlessCount = 0;
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, type: string, message: string) =>
    json(res, status, { type: 'error', error: { type, message } });
  const model = (id: string) => ({
    type: 'model',
    id,
    display_name: `Model ${id}`,
    created_at: '2025-09-29T00:00:00Z',
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    seen.push({ url, headers: req.headers });
    if (options.hang) return;
    if (options.delayMs) setTimeout(() => answer(req, res, url), options.delayMs);
    else answer(req, res, url);
  });
  const answer = (req: IncomingMessage, res: ServerResponse, url: URL) => {
    if (req.method !== 'GET' || url.pathname !== '/v1/models') return error(res, 404, 'not_found_error', 'no route');
    if (req.headers['anthropic-version'] !== '2023-06-01')
      return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    const ids = options.keys.get(String(req.headers['x-api-key']));
    if (!ids) return error(res, 401, 'authentication_error', 'invalid x-api-key');
    const limit = Number(url.searchParams.get('limit') ?? '20');
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= 1000))
      return error(res, 400, 'invalid_request_error', 'limit: out of range');
    if (options.endless) {
      const id = `claude-endless-${++endlessCount}`;
      return json(res, 200, { data: [model(id)], has_more: true, first_id: id, last_id: id });
    }
    const after = url.searchParams.get('after_id');
    const start = after === null ? 0 : ids.indexOf(after) + 1;
    if (after !== null && start === 0) return error(res, 400, 'invalid_request_error', 'after_id: unknown');
    const page = ids.slice(start, start + Math.min(limit, pageSize));
    json(res, 200, {
      data: page.map(model),
      has_more: start + page.length < ids.length,
      first_id: page[0] ?? null,
      last_id: page.at(-1) ?? null,
    });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const PROVIDER_IDS = ['claude-brand-new-5', 'claude-sonnet-4-5-20250929', 'claude-haiku-4-5-20251001'];
const BUNDLED_IDS = [...KNOWN_ANTHROPIC_MODELS];

type Server = Awaited<ReturnType<typeof anthropicModels>>;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server and a ProviderModelLists whose `onRefresh` outcomes are recorded and awaitable. */
async function setup(server: Parameters<typeof anthropicModels>[0], options: ProviderModelListsOptions = {}) {
  const mock: Server = await anthropicModels(server);
  cleanups.push(mock.close);
  const dispatcher = new Agent();
  cleanups.push(() => dispatcher.close());
  const reports: [string, string][] = [];
  const waiters: (() => void)[] = [];
  const lists = new ProviderModelLists({
    dispatcher,
    ...options,
    onRefresh: (slug, outcome) => {
      reports.push([slug, outcome]);
      for (const wake of waiters.splice(0)) wake();
    },
  });
  cleanups.push(() => lists.stop());
  /** Resolves at the next reported refresh. */
  const nextRefresh = () => new Promise<void>((resolve) => waiters.push(resolve));
  const provider = (apiKey: string | ProviderKey = KEY, slug = 'anthropic-test'): ModelListProvider => ({
    slug,
    apiKey,
    baseUrl: mock.url,
  });
  return { mock, lists, reports, nextRefresh, provider };
}

const ids = (list: { models: readonly { id: string }[] }) => list.models.map((model) => model.id);

describe('ProviderModelLists', () => {
  it('answers the bundled list at first, fetches in the background, then answers the provider list', async () => {
    let clock = 5_000;
    const { mock, lists, reports, nextRefresh, provider } = await setup(
      { keys: new Map([[KEY, PROVIDER_IDS]]) },
      { now: () => clock },
    );
    const refreshed = nextRefresh();
    const first = lists.list(provider());
    expect(first.source).toBe('bundled');
    expect(ids(first)).toEqual(BUNDLED_IDS);
    expect(first.fetchedAt).toBeUndefined();
    await refreshed;
    expect(reports).toEqual([['anthropic-test', 'ok']]);
    expect(mock.seen).toHaveLength(1);
    const request = mock.seen[0] as Seen;
    expect(request.url.pathname).toBe('/v1/models');
    expect(request.url.searchParams.get('limit')).toBe('1000');
    expect(request.headers['x-api-key']).toBe(KEY);
    expect(request.headers['anthropic-version']).toBe('2023-06-01');
    clock = 6_000;
    const second = lists.list(provider());
    expect(second).toEqual({
      source: 'provider',
      fetchedAt: 5_000,
      models: PROVIDER_IDS.map((id) => ({ id, display_name: `Model ${id}`, created_at: '2025-09-29T00:00:00Z' })),
    });
    // Fresh: no second fetch.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(mock.seen).toHaveLength(1);
  });

  it('follows has_more across three pages with after_id = last_id', async () => {
    const five = ['claude-a', 'claude-b', 'claude-c', 'claude-d', 'claude-e'];
    const { mock, lists, provider } = await setup({ keys: new Map([[KEY, five]]), pageSize: 2 });
    const result = await lists.refresh(provider());
    expect(result.source).toBe('provider');
    expect(ids(result)).toEqual(five);
    expect(mock.seen.map((seen) => seen.url.searchParams.get('after_id'))).toEqual([null, 'claude-b', 'claude-d']);
    expect(ids(lists.list(provider()))).toEqual(five);
  });

  it('answers the bundled list on 401, and nothing it reports holds the key', async () => {
    const logged: unknown[] = [];
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      const spy = jest.spyOn(console, method).mockImplementation((...args: unknown[]) => void logged.push(args));
      cleanups.push(() => spy.mockRestore());
    }
    const { mock, lists, reports, provider } = await setup({ keys: new Map([[KEY, PROVIDER_IDS]]) });
    const result = await lists.refresh(provider(WRONG));
    expect(mock.seen[0]?.headers['x-api-key']).toBe(WRONG);
    expect(result.source).toBe('bundled');
    expect(ids(result)).toEqual(BUNDLED_IDS);
    expect(reports).toEqual([['anthropic-test', 'error']]);
    const listed = lists.list(provider(new ProviderKey(WRONG)));
    expect(listed.source).toBe('bundled');
    const everything = JSON.stringify([result, listed, reports, logged]) + inspect(lists, { depth: 5 });
    expect(everything).not.toContain(WRONG);
    expect(everything).not.toContain('sk-ant');
  });

  it('answers the bundled list when the provider sends nothing within timeoutMs', async () => {
    const { mock, lists, reports, provider } = await setup({ keys: new Map(), hang: true }, { timeoutMs: 200 });
    const started = performance.now();
    const result = await lists.refresh(provider());
    const took = performance.now() - started;
    expect(mock.seen).toHaveLength(1);
    expect(result.source).toBe('bundled');
    expect(reports).toEqual([['anthropic-test', 'error']]);
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(3_000);
  });

  it('gives up when all the pages together take longer than timeoutMs', async () => {
    const six = ['claude-1', 'claude-2', 'claude-3', 'claude-4', 'claude-5', 'claude-6'];
    const { mock, lists, provider } = await setup(
      { keys: new Map([[KEY, six]]), pageSize: 1, delayMs: 80 },
      { timeoutMs: 300 },
    );
    const result = await lists.refresh(provider());
    expect(result.source).toBe('bundled');
    expect(mock.seen.length).toBeGreaterThanOrEqual(3);
    expect(mock.seen.length).toBeLessThan(6);
  });

  it('keeps a good list when a later fetch fails, answers bad JSON with the bundled list', async () => {
    const keys = new Map([[KEY, PROVIDER_IDS]]);
    const { lists, provider } = await setup({ keys });
    expect((await lists.refresh(provider())).source).toBe('provider');
    keys.delete(KEY);
    const failed = await lists.refresh(provider());
    expect(failed.source).toBe('provider');
    expect(ids(failed)).toEqual(PROVIDER_IDS);
    expect(ids(lists.list(provider()))).toEqual(PROVIDER_IDS);

    const garbage = createServer((_req, res) => res.end('{"data": [oops'));
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => garbage.close(resolve)));
    const port = (garbage.address() as AddressInfo).port;
    const bad = await lists.refresh({ slug: 'garbage', apiKey: KEY, baseUrl: `http://127.0.0.1:${port}` });
    expect(bad.source).toBe('bundled');
  });

  it('answers the bundled list when a page is larger than 4 MiB', async () => {
    const huge = createServer((_req, res) => {
      const model = { type: 'model', id: 'claude-x', display_name: 'x'.repeat(1024) };
      res.end(JSON.stringify({ data: Array.from({ length: 4200 }, () => model), has_more: false }));
    });
    await new Promise<void>((resolve) => huge.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => (huge.closeAllConnections(), huge.close(resolve))));
    const lists = new ProviderModelLists({ dispatcher: new Agent() });
    cleanups.push(() => lists.stop());
    const port = (huge.address() as AddressInfo).port;
    const result = await lists.refresh({ slug: 'huge', apiKey: KEY, baseUrl: `http://127.0.0.1:${port}` });
    expect(result.source).toBe('bundled');
  });

  it('refreshes a stale list in the background, answering the stale one meanwhile', async () => {
    let clock = 1_000_000;
    const keys = new Map([[KEY, PROVIDER_IDS]]);
    const { mock, lists, nextRefresh, provider } = await setup(
      { keys },
      { now: () => clock, refreshIntervalMs: 10_000 },
    );
    await lists.refresh(provider());
    expect(mock.seen).toHaveLength(1);
    clock += 9_999;
    expect(lists.list(provider()).fetchedAt).toBe(1_000_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(mock.seen).toHaveLength(1);

    keys.set(KEY, ['claude-next-6']);
    clock += 1;
    const refreshed = nextRefresh();
    const stale = lists.list(provider());
    expect(stale.source).toBe('provider');
    expect(ids(stale)).toEqual(PROVIDER_IDS);
    await refreshed;
    expect(mock.seen).toHaveLength(2);
    const fresh = lists.list(provider());
    expect(ids(fresh)).toEqual(['claude-next-6']);
    expect(fresh.fetchedAt).toBe(1_010_000);
  });

  it('after a failure, list() tries again no sooner than a minute later', async () => {
    let clock = 0;
    const keys = new Map<string, string[]>();
    const { mock, lists, nextRefresh, provider } = await setup({ keys }, { now: () => clock });
    let refreshed = nextRefresh();
    lists.list(provider());
    await refreshed;
    expect(mock.seen).toHaveLength(1);
    clock = 59_999;
    lists.list(provider());
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(mock.seen).toHaveLength(1);
    keys.set(KEY, PROVIDER_IDS);
    clock = 60_000;
    refreshed = nextRefresh();
    expect(lists.list(provider()).source).toBe('bundled');
    await refreshed;
    expect(mock.seen).toHaveLength(2);
    expect(lists.list(provider()).source).toBe('provider');
  });

  it('keeps a separate list per key: a rotated key fetches anew', async () => {
    const { mock, lists, nextRefresh, provider } = await setup({
      keys: new Map([
        [KEY, PROVIDER_IDS],
        [ROTATED, ['claude-rotated-1']],
      ]),
    });
    await lists.refresh(provider(new ProviderKey(KEY)));
    expect(ids(lists.list(provider(KEY)))).toEqual(PROVIDER_IDS);
    expect(mock.seen).toHaveLength(1);

    const refreshed = nextRefresh();
    expect(lists.list(provider(ROTATED)).source).toBe('bundled');
    await refreshed;
    expect(mock.seen).toHaveLength(2);
    expect(mock.seen[1]?.headers['x-api-key']).toBe(ROTATED);
    expect(ids(lists.list(provider(ROTATED)))).toEqual(['claude-rotated-1']);
    expect(ids(lists.list(provider(KEY)))).toEqual(PROVIDER_IDS);
    // Another slug with the same key and base URL is another entry as well.
    expect(lists.list(provider(KEY, 'other-slug')).source).toBe('bundled');
  });

  it('stops an endless has_more at maxPages', async () => {
    const { mock, lists, provider } = await setup({ keys: new Map([[KEY, []]]), endless: true }, { maxPages: 4 });
    const result = await lists.refresh(provider());
    expect(mock.seen).toHaveLength(4);
    expect(ids(result)).toEqual(['claude-endless-1', 'claude-endless-2', 'claude-endless-3', 'claude-endless-4']);
  });

  it('starts one fetch for concurrent list() and refresh() calls', async () => {
    const { mock, lists, reports, nextRefresh, provider } = await setup({ keys: new Map([[KEY, PROVIDER_IDS]]) });
    const refreshed = nextRefresh();
    for (let i = 0; i < 20; i++) expect(lists.list(provider()).source).toBe('bundled');
    const joined = lists.refresh(provider(new ProviderKey(KEY)));
    await refreshed;
    expect((await joined).source).toBe('provider');
    expect(mock.seen).toHaveLength(1);
    expect(reports).toHaveLength(1);
  });

  it(`runs at most ${MAX_BACKGROUND_REFRESHES} background refreshes at once across providers, and starts more as they end`, async () => {
    const keys = new Map(
      Array.from({ length: 30 }, (_, i) => [`sk-ant-many-${i}`, PROVIDER_IDS] as [string, string[]]),
    );
    const { mock, lists, reports, provider } = await setup({ keys, delayMs: 100 });
    const providers = [...keys.keys()].map((key, i) => provider(key, `provider-${i}`));
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    /** Waits (at most 5 s) until `done()`, then 50 ms more for anything that should not come. */
    const settle = async (done: () => boolean) => {
      for (const started = Date.now(); !done() && Date.now() - started < 5_000;) await pause(10);
      await pause(50);
    };
    for (const each of providers) expect(lists.list(each).source).toBe('bundled');
    await settle(() => mock.seen.length >= MAX_BACKGROUND_REFRESHES);
    expect(mock.seen).toHaveLength(MAX_BACKGROUND_REFRESHES);
    // Once those have ended, the next calls start the next ones.
    await settle(() => reports.length >= MAX_BACKGROUND_REFRESHES);
    for (const each of providers) lists.list(each);
    await settle(() => mock.seen.length >= 2 * MAX_BACKGROUND_REFRESHES);
    expect(mock.seen).toHaveLength(2 * MAX_BACKGROUND_REFRESHES);
    expect(lists.list(providers[0] as ModelListProvider).source).toBe('provider');
  });

  it('says what to write for bad options', () => {
    expect(() => new ProviderModelLists({ refreshIntervalMs: 0 })).toThrow(/refreshIntervalMs must be a positive/);
    expect(() => new ProviderModelLists({ timeoutMs: Number.NaN })).toThrow(/timeoutMs must be a positive/);
    expect(() => new ProviderModelLists({ maxPages: 1.5 })).toThrow(/maxPages must be a whole number from 1/);
    expect(() => new ProviderModelLists({ now: 5 as unknown as () => number })).toThrow(/now must be a function/);
    expect(() => new ProviderModelLists({ dispatcher: {} as unknown as Agent })).toThrow(/undici Dispatcher/);
  });

  it('isNewModel: not in the models known at save, or else not in the bundled list', () => {
    const lists = new ProviderModelLists({ dispatcher: new Agent() });
    cleanups.push(() => lists.stop());
    const provider = { slug: 'a', apiKey: KEY };
    expect(lists.isNewModel(provider, 'claude-sonnet-4-5')).toBe(false);
    expect(lists.isNewModel(provider, 'claude-brand-new-5')).toBe(true);
    expect(lists.isNewModel(provider, 'claude-sonnet-4-5', ['claude-haiku-4-5'])).toBe(true);
    expect(lists.isNewModel(provider, 'claude-brand-new-5', ['claude-brand-new-5'])).toBe(false);
  });
});
