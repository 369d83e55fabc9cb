/**
 * The routing engine alone (CONTRACT section 17): which targets a config tries, in which order,
 * for scripted outcomes; load balancing over 1,000 seeded requests; the config's shape checks.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import {
  UpstreamTimeoutError,
  UpstreamUnreachableError,
  chooseByWeight,
  createInMemoryCatalog,
  readConfigObject,
  runAcrossTargets,
  type GatewayLocals,
  type RoutingGroup,
} from '../../src';

const catalog = createInMemoryCatalog(
  ['a', 'b', 'c', 'd'].map((slug) => ({ slug, provider: 'anthropic' as const, apiKey: `sk-ant-${slug}` })),
);

/** A seeded generator of numbers in [0, 1) (mulberry32). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Script = Record<string, (number | 'unreachable' | 'timeout')[]>;

/**
 * Runs one request with `config` against providers answering what `script` says (per provider, in
 * order; 200 when nothing is left). Returns the providers called, in order, and the answer.
 */
async function route(config: Record<string, unknown>, script: Script = {}, random: () => number = Math.random) {
  const req = new IncomingMessage(new Socket());
  req.headers = {};
  const res = new ServerResponse(req);
  const called: string[] = [];
  const dumped: string[] = [];
  const answer = await runAcrossTargets(
    { catalog, random },
    req,
    res,
    { model: 'claude-sonnet-4-5', messages: [] },
    readConfigObject(config),
    {
      prepare: (attempt) => attempt,
      begin: async () => false,
      call: async (_prepared, attempt) => {
        const slug = attempt.provider.slug;
        called.push(slug);
        const next = script[slug]?.shift() ?? 200;
        if (next === 'unreachable') throw new UpstreamUnreachableError('down');
        if (next === 'timeout') throw new UpstreamTimeoutError('slow');
        return {
          statusCode: next,
          headers: {},
          body: { dump: async () => void dumped.push(slug) },
        } as unknown as Dispatcher.ResponseData;
      },
    },
  ).then(
    (answering) => ({ status: answering?.response.statusCode, provider: answering?.attempt.provider.slug }),
    (error: { status: number; code: string }) => ({ status: error.status, code: error.code }),
  );
  const locals = (res as unknown as { locals: { gateway: GatewayLocals } }).locals.gateway;
  return { called, dumped, answer, locals, res };
}

const fallback = (...providers: string[]) => ({
  strategy: { mode: 'fallback' },
  targets: providers.map((provider) => ({ provider })),
});

describe('fallback order', () => {
  it('stops at the first answer, and at a status its list does not name', async () => {
    expect((await route(fallback('a', 'b'), {})).called).toEqual(['a']);
    expect((await route(fallback('a', 'b', 'c'), { a: [529], b: [503] })).called).toEqual(['a', 'b', 'c']);
    expect((await route(fallback('a', 'b', 'c'), { a: [400] })).called).toEqual(['a']);
    for (const status of [401, 403, 404, 413, 422])
      expect((await route(fallback('a', 'b'), { a: [status] })).answer.status).toBe(status);
  });

  it('falls back on an unreachable or timed-out provider whatever the list, and drops each replaced answer', async () => {
    const run = await route(
      {
        strategy: { mode: 'fallback', on_status_codes: [418] },
        targets: [{ provider: 'a' }, { provider: 'b' }, { provider: 'c' }, { provider: 'd' }],
      },
      { a: ['unreachable'], b: ['timeout'], c: [418] },
    );
    expect(run.called).toEqual(['a', 'b', 'c', 'd']);
    expect(run.dumped).toEqual(['c']);
    expect(run.answer).toEqual({ status: 200, provider: 'd' });
    expect(run.locals.attempts?.map((a) => [a.index, a.provider, a.status, a.error])).toEqual([
      ['0', 'a', 502, 'upstream_unreachable'],
      ['1', 'b', 504, 'upstream_timeout'],
      ['2', 'c', 418, undefined],
      ['3', 'd', 200, undefined],
    ]);
    expect(run.locals.answeredIndex).toBe('3');
    expect(run.res.getHeader('x-gateway-last-used-option-index')).toBe('3');
    expect(run.res.getHeader('x-gateway-provider-used')).toBe('d');
  });

  it('names the answering target once (two headers) and marks its attempt answered', async () => {
    const setHeader = jest.spyOn(ServerResponse.prototype, 'setHeader');
    try {
      const first = await route(fallback('a', 'b'));
      expect(setHeader.mock.calls).toEqual([
        ['x-gateway-last-used-option-index', '0'],
        ['x-gateway-provider-used', 'a'],
      ]);
      expect(first.locals.attempts).toEqual([
        { index: '0', provider: 'a', model: 'claude-sonnet-4-5', status: 200, ms: expect.any(Number), answered: true },
      ]);
      setHeader.mockClear();
      const second = await route(fallback('a', 'b'), { a: [529] });
      expect(setHeader.mock.calls).toEqual([
        ['x-gateway-last-used-option-index', '0'],
        ['x-gateway-provider-used', 'a'],
        ['x-gateway-last-used-option-index', '1'],
        ['x-gateway-provider-used', 'b'],
      ]);
      expect(second.locals.attempts?.map((attempt) => [attempt.index, attempt.answered])).toEqual([
        ['0', undefined],
        ['1', true],
      ]);
      expect(second.res.getHeader('x-gateway-last-used-option-index')).toBe('1');
    } finally {
      setHeader.mockRestore();
    }
  });

  it('gives the last failure: a thrown one is thrown, an answer is answered', async () => {
    expect((await route(fallback('a', 'b'), { a: [529], b: ['unreachable'] })).answer).toEqual({
      status: 502,
      code: 'upstream_unreachable',
    });
    const last = await route(fallback('a', 'b'), { a: ['unreachable'], b: [503] });
    expect(last.answer).toEqual({ status: 503, provider: 'b' });
    expect(last.dumped).toEqual([]);
  });

  it('applies each group’s own list to its targets', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { strategy: { mode: 'fallback', on_status_codes: [503] }, targets: [{ provider: 'a' }, { provider: 'b' }] },
        { provider: 'c' },
      ],
    };
    // 429 is not in the inner list: b is not tried; the outer list names 429: c is.
    expect((await route(config, { a: [429] })).called).toEqual(['a', 'c']);
    expect((await route(config, { a: [503] })).called).toEqual(['a', 'b']);
  });

  it('single uses its first target only', async () => {
    const run = await route(
      { strategy: { mode: 'single' }, targets: [{ provider: 'a' }, { provider: 'b' }] },
      { a: [529] },
    );
    expect(run.called).toEqual(['a']);
    expect(run.answer.status).toBe(529);
  });
});

describe('load balancing', () => {
  it('splits 1,000 requests by weight within statistical bounds (seeded)', async () => {
    const random = mulberry32(1234);
    const config = {
      strategy: { mode: 'loadbalance' },
      targets: [
        { provider: 'a', weight: 5 },
        { provider: 'b', weight: 3 },
        { provider: 'c', weight: 2 },
        { provider: 'd', weight: 0 },
      ],
    };
    const tally: Record<string, number> = { a: 0, b: 0, c: 0, d: 0 };
    for (let i = 0; i < 1000; i++) {
      const { called } = await route(config, {}, random);
      expect(called).toHaveLength(1);
      tally[called[0] as string]! += 1;
    }
    // Expected 500, 300, 200; each within 5 standard deviations (15.8, 14.5, 12.6).
    expect(Math.abs((tally.a as number) - 500)).toBeLessThan(80);
    expect(Math.abs((tally.b as number) - 300)).toBeLessThan(73);
    expect(Math.abs((tally.c as number) - 200)).toBeLessThan(63);
    expect(tally.d).toBe(0);
  });

  it('picks by the cumulative weight at the random point', () => {
    const group = readConfigObject({
      strategy: { mode: 'loadbalance' },
      targets: [
        { provider: 'a', weight: 1 },
        { provider: 'b', weight: 0 },
        { provider: 'c', weight: 3 },
      ],
    }).targets as RoutingGroup;
    expect(chooseByWeight(group, [0, 1, 2], () => 0)).toBe(0);
    expect(chooseByWeight(group, [0, 1, 2], () => 0.2499)).toBe(0);
    expect(chooseByWeight(group, [0, 1, 2], () => 0.25)).toBe(2);
    expect(chooseByWeight(group, [0, 1, 2], () => 0.9999999)).toBe(2);
    expect(chooseByWeight(group, [1], () => 0.5)).toBeUndefined();
    expect(chooseByWeight(group, [0, 1], () => 0.5)).toBe(0);
  });
});

describe('the config’s shape', () => {
  it('gives targets their group’s retry, request_timeout and cache unless they set their own', () => {
    const config = readConfigObject({
      request_timeout: 1000,
      retry: { attempts: 2 },
      strategy: { mode: 'fallback' },
      targets: [
        { provider: '@a' },
        { provider: 'b', request_timeout: 50, retry: { attempts: 0 }, cache: { mode: 'simple', max_age: 60 } },
      ],
    });
    const [first, second] = (config.targets as RoutingGroup).targets as unknown as [
      { config: unknown; provider: string },
      { config: unknown; provider: string },
    ];
    expect(first.provider).toBe('a');
    expect(first.config).toEqual({
      request_timeout: 1000,
      retry: { attempts: 2, on_status_codes: [429, 500, 502, 503, 504, 529] },
    });
    expect(second.config).toEqual({
      request_timeout: 50,
      retry: { attempts: 0, on_status_codes: [429, 500, 502, 503, 504, 529] },
      cache: { mode: 'simple', max_age: 60 },
    });
  });

  it('names where a shape error is', () => {
    expect(() =>
      readConfigObject({
        strategy: { mode: 'fallback' },
        targets: [{ provider: 'a' }, { strategy: { mode: 'loadbalance' }, targets: [{ provider: 'b', weight: 'x' }] }],
      }),
    ).toThrow(/^targets\[1\]\.targets\[0\]: weight/);
    expect(() => readConfigObject({ targets: Array.from({ length: 17 }, () => ({ provider: 'a' })) })).toThrow(
      /1 to 16 targets/,
    );
    expect(() =>
      readConfigObject({
        targets: Array.from({ length: 16 }, () => ({ targets: Array.from({ length: 5 }, () => ({ provider: 'a' })) })),
      }),
    ).toThrow(/at most 64 targets/);
    expect(() => readConfigObject({ targets: [{ provider: 'a/b' }] })).toThrow(/provider must name/);
    expect(() => readConfigObject({ targets: [{ targets: [{ provider: 'a' }], override_params: {} }] })).toThrow(
      /a group/,
    );
  });
});
