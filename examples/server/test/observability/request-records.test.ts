import { Portkey } from 'portkey-ai';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { ANSWERED_MODEL, eventually, metric, startProviderDouble, type ProviderDouble } from './otel-support';

jest.setTimeout(240_000);

const KEY_A = 'gw-records-key-A-0123456789abcdefAAAA';
const KEY_B = 'gw-records-key-B-0123456789abcdefBBBB';
const ADMIN_KEY = newAdminKey();

let provider: ProviderDouble;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  provider = await startProviderDouble();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: KEY_A, user: { user_id: 'u_alice' } },
          { key: KEY_B, user: { user_id: 'u_bob' } },
        ],
      },
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-records-secret', baseUrl: provider.url }],
    }),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, ADMIN_KEY);
});

afterAll(async () => {
  await gateway.stop();
  await provider.close();
});

function chat(key: string, options: { stream?: boolean; fail?: boolean; metadata?: string }) {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(options.metadata === undefined ? {} : { 'x-gateway-metadata': options.metadata }),
    },
    body: JSON.stringify({
      model: '@claude/claude-haiku-4-5',
      max_tokens: 16,
      stream: options.stream === true,
      ...(options.stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content: options.fail ? 'please fail' : 'hello' }],
    }),
  });
}

describe('x-gateway-metadata', () => {
  it.each([
    ['not JSON', '{team:'],
    ['not an object', '["a"]'],
    ['a value that is not a string', '{"n":1}'],
    ['too many keys', JSON.stringify(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])))],
    ['a key too long', JSON.stringify({ ['k'.repeat(65)]: 'v' })],
    ['a value too long', JSON.stringify({ k: 'v'.repeat(513) })],
  ])('refuses %s with 400 invalid_metadata naming the header', async (_name, metadata) => {
    const res = await chat(KEY_A, { metadata });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param: string } };
    expect(body.error).toMatchObject({ code: 'invalid_metadata', param: 'x-gateway-metadata' });
  });

  it('accepts the limits exactly: 32 keys, 64-character keys, 512-character values', async () => {
    // Within Node's 16 KiB of request headers: one value of 512 characters, the others shorter.
    const metadata = Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [`${i}`.padStart(64, 'k'), 'v'.repeat(i === 0 ? 512 : 200)]),
    );
    expect((await chat(KEY_A, { metadata: JSON.stringify(metadata) })).status).toBe(200);
  });

  it("takes the portkey-ai SDK's metadata option, and refuses a non-string value from it", async () => {
    const portkey = new Portkey({
      apiKey: KEY_B,
      baseURL: `${gateway.url}/v1`,
      provider: '@claude',
      metadata: { _user: 'someone-else', source: 'portkey-sdk' },
    });
    const data = await portkey.chat.completions.create({
      model: 'claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(data.choices?.[0]?.message?.content).toBe('SECRET-ANSWER');
    await eventually(10_000, async () => {
      const page = await admin('GET', '/requests?metadata.source=portkey-sdk');
      return page.body.data.length === 1;
    });
    const page = await admin('GET', '/requests?metadata.source=portkey-sdk');
    // `_user` is a label: the record's user is the API key's.
    expect(page.body.data[0]).toMatchObject({ user_id: 'u_bob', metadata: { _user: 'someone-else' } });

    const bad = new Portkey({
      apiKey: KEY_B,
      baseURL: `${gateway.url}/v1`,
      provider: '@claude',
      metadata: { n: 1 } as never,
    });
    await expect(
      bad.chat.completions.create({
        model: 'claude-haiku-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toMatchObject({ status: 400 });
  });
});

describe('request records', () => {
  it('records ~1,000 mixed requests exactly: filters, pagination, usage sums', async () => {
    await eventually(10_000, async () => (await metric(gateway.url, 'gateway_request_records_queued')) === 0);
    const since = new Date().toISOString();
    const reportedBefore = provider.reported.length;
    const sent: { id: string; user: string; status: number; team: string | undefined }[] = [];
    const plan = Array.from({ length: 1000 }, (_, i) => ({
      key: i % 3 === 0 ? KEY_B : KEY_A,
      user: i % 3 === 0 ? 'u_bob' : 'u_alice',
      stream: i % 4 === 1,
      fail: i % 10 === 7,
      team: i % 5 === 0 ? 'red' : i % 5 === 1 ? 'blue' : undefined,
    }));
    for (let start = 0; start < plan.length; start += 25) {
      await Promise.all(
        plan.slice(start, start + 25).map(async (p) => {
          const res = await chat(p.key, {
            stream: p.stream,
            fail: p.fail,
            metadata: p.team ? JSON.stringify({ team: p.team }) : undefined,
          });
          await res.arrayBuffer();
          sent.push({
            id: res.headers.get('x-gateway-request-id') as string,
            user: p.user,
            status: res.status,
            team: p.team,
          });
        }),
      );
    }
    expect(sent.filter((s) => s.status === 429)).toHaveLength(100);
    await eventually(30_000, async () => (await metric(gateway.url, 'gateway_request_records_queued')) === 0);

    /** Every page of a query, following next_cursor; fails on a repeated record. */
    const all = async (query: string) => {
      const records: { request_id: string; [k: string]: unknown }[] = [];
      let cursor: string | null = null;
      do {
        const page = await admin(
          'GET',
          `/requests?from=${encodeURIComponent(since)}&limit=97&${query}${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(page.status).toBe(200);
        records.push(...page.body.data);
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(new Set(records.map((r) => r.request_id)).size).toBe(records.length);
      return records;
    };
    const ids = (list: { id: string }[]) => list.map((s) => s.id).sort();
    const alice = await all('user=u_alice');
    expect(alice.map((r) => r.request_id).sort()).toEqual(ids(sent.filter((s) => s.user === 'u_alice')));
    const redOk = await all('metadata.team=red&status=200');
    expect(redOk.map((r) => r.request_id).sort()).toEqual(
      ids(sent.filter((s) => s.team === 'red' && s.status === 200)),
    );
    const failed = await all('status=429&user=u_bob');
    expect(failed.map((r) => r.request_id).sort()).toEqual(
      ids(sent.filter((s) => s.status === 429 && s.user === 'u_bob')),
    );
    expect(failed[0]).toMatchObject({ error_code: expect.any(String), provider: 'claude' });
    const everything = await all('');
    expect(everything).toHaveLength(1000);
    // Newest first.
    const times = everything.map((r) => Date.parse(r.time as string));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const ok = everything.find((r) => r.status === 200) as Record<string, unknown>;
    expect(ok).toMatchObject({
      model_requested: 'claude-haiku-4-5',
      model_answered: ANSWERED_MODEL,
      key_hint: expect.stringMatching(/^…/),
    });

    const reported = provider.reported.slice(reportedBefore);
    const usage = await admin('GET', `/usage?group_by=user&from=${encodeURIComponent(since)}`);
    const sum = (field: string) =>
      usage.body.data.reduce((t: number, g: Record<string, number>) => t + (g[field] as number), 0);
    expect(sum('requests')).toBe(1000);
    expect(sum('errors')).toBe(100);
    expect(sum('input_tokens')).toBe(reported.reduce((t, [i]) => t + i, 0));
    expect(sum('output_tokens')).toBe(reported.reduce((t, [, o]) => t + o, 0));
    expect(sum('cache_read_input_tokens')).toBe(reported.length);
    const byDay = await admin('GET', `/usage?group_by=day&from=${encodeURIComponent(since)}`);
    expect(byDay.body.data.reduce((t: number, g: { requests: number }) => t + g.requests, 0)).toBe(1000);
    // No message content in any record.
    expect(JSON.stringify(everything)).not.toContain('SECRET-ANSWER');
    expect(JSON.stringify(everything)).not.toContain(KEY_A);
  });

  it('refuses a bad filter, limit or cursor with 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['limit=501', 'limit'],
      ['cursor=nope', 'cursor'],
      ['from=yesterday', 'from'],
      ['status=abc', 'status'],
    ]) {
      const res = await admin('GET', `/requests?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect((await admin('GET', '/usage?group_by=team')).body.error.param).toBe('group_by');
  });
});
