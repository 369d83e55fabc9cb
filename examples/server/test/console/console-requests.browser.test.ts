import type { Browser, BrowserContext, Page } from 'playwright-core';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import {
  eventually,
  metric,
  startProviderDouble,
  ANSWERED_MODEL,
  type ProviderDouble,
} from '../observability/otel-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { axeViolations, goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

jest.setTimeout(180_000);

const ALICE = 'gw-console-requests-alice-0001';
const BOB = 'gw-console-requests-bob-0002';
let provider: ProviderDouble;
let gateway: RunningGateway;
let adminKey: string;
let admin: ReturnType<typeof adminClient>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** What the gateway answered each request made here, in order. */
interface Sent {
  user: string;
  status: number;
  requestId: string;
  traceId: string;
  /** The double's [input, output] tokens for a successful request. */
  tokens?: [number, number];
  metadata?: Record<string, string>;
}
const sent: Sent[] = [];

async function chat(key: string, user: string, options: { fail?: boolean; metadata?: Record<string, string> } = {}) {
  const res = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(options.metadata ? { 'x-gateway-metadata': JSON.stringify(options.metadata) } : {}),
    },
    body: JSON.stringify({
      model: '@claude/claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: options.fail ? 'please fail' : 'hello' }],
    }),
  });
  await res.text();
  sent.push({
    user,
    status: res.status,
    requestId: String(res.headers.get('x-gateway-request-id')),
    traceId: String(res.headers.get('x-gateway-trace-id')),
    tokens: res.status === 200 ? provider.reported.at(-1) : undefined,
    metadata: options.metadata,
  });
}

beforeAll(async () => {
  provider = await startProviderDouble();
  adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: ALICE, user: { user_id: 'u_alice' } },
          { key: BOB, user: { user_id: 'u_bob' } },
        ],
      },
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-console-records-0001', baseUrl: provider.url },
      ],
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey);
  for (let i = 0; i < 3; i++) await chat(ALICE, 'u_alice', { metadata: { team: 'search', run: String(i) } });
  await chat(BOB, 'u_bob');
  await chat(BOB, 'u_bob', { fail: true });
  await chat(BOB, 'u_bob', { metadata: { team: 'billing', note: '<b>not bold</b>' } });
  await eventually(15_000, async () => (await admin('GET', '/requests')).body.data.length === sent.length);
  expect(await metric(gateway.url, 'gateway_request_records_queued')).toBe(0);
  ({ browser, context, page } = await launchConsoleBrowser());
  await signIn(page, gateway.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await provider?.close();
});

/** The Requests table's rows, as cell texts. */
async function rows(): Promise<string[][]> {
  const texts = await page.locator('table tbody tr').allInnerTexts();
  return texts.map((row) => row.split('\t').map((c) => c.trim()));
}

async function filter(fields: Record<string, string>): Promise<void> {
  const form = page.getByRole('form', { name: 'Filter requests' });
  for (const label of ['User id', 'Provider', 'Model', 'Status', 'Metadata', 'From', 'To']) {
    await form.getByLabel(label, { exact: true }).fill(fields[label] ?? '');
  }
  await form.getByLabel('Per page').fill(fields['Per page'] ?? '50');
  // The page renders anew: wait for a heading that is not the one of the page before.
  await page
    .locator('h1')
    .evaluate((h) => (h as unknown as { setAttribute(n: string, v: string): void }).setAttribute('data-stale', ''));
  await form.getByRole('button', { name: 'Show' }).click();
  await page.locator('h1:not([data-stale])').waitFor();
}

describe('the Requests page', () => {
  it('lists every request newest first', async () => {
    await goTo(page, 'Requests');
    const all = await rows();
    expect(all.map((r) => r[1])).toEqual(sent.map((s) => s.user).reverse());
    expect(all.map((r) => r[4])).toEqual(
      sent.map((s) => (s.status === 200 ? '200' : `${s.status} rate_limit_error`)).reverse(),
    );
  });

  it('filters by user, pages with next_cursor, and by metadata and status', async () => {
    await filter({ 'User id': 'u_alice' });
    expect((await rows()).map((r) => r[1])).toEqual(['u_alice', 'u_alice', 'u_alice']);
    await shot(page, 'requests');

    await filter({ 'User id': 'u_alice', 'Per page': '2' });
    const first = await rows();
    expect(first.length).toBe(2);
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.getByRole('link', { name: 'First page' }).waitFor();
    const second = await rows();
    expect(second.length).toBe(1);
    expect(await page.getByRole('link', { name: 'Next page' }).count()).toBe(0);
    const alice = sent.filter((s) => s.user === 'u_alice').reverse();
    for (const [i, row] of [...first, ...second].entries()) {
      expect(row[6]).toBe(`${alice[i]!.tokens![0]} / ${alice[i]!.tokens![1]}`);
    }

    await filter({ Metadata: 'team=billing' });
    expect((await rows()).map((r) => r[1])).toEqual(['u_bob']);
    // Text from the server is text: markup in a metadata value is shown, never made into elements.
    await page.getByRole('button', { name: `Open request ${sent.at(-1)!.requestId}` }).click();
    await page.getByText('note = <b>not bold</b>').waitFor();
    expect(await page.locator('#request-detail b').count()).toBe(0);
    await filter({ Status: '429' });
    expect((await rows()).map((r) => [r[1], r[4]])).toEqual([['u_bob', '429 rate_limit_error']]);
    await filter({ 'User id': 'u_nobody' });
    await page.getByText('No requests match.').waitFor();
    // A metadata line that is not key=value is refused beside its field, before anything is sent.
    await filter({ Metadata: 'team' });
    await page.getByText(/write metadata filters as key=value/).waitFor();
  });

  it('opens a record: its timings, tokens, cache status, trace id and metadata', async () => {
    await filter({ 'User id': 'u_alice' });
    const newest = sent.filter((s) => s.user === 'u_alice').at(-1)!;
    await page.getByRole('button', { name: `Open request ${newest.requestId}` }).click();
    const detail = page.getByRole('region', { name: `Request ${newest.requestId}` });
    await detail.waitFor();
    const terms = await detail.locator('dt').allInnerTexts();
    const values = await detail.locator('dd').allInnerTexts();
    const facts = Object.fromEntries(terms.map((t, i) => [t, values[i]?.replace(/\s+/g, ' ').trim()]));
    expect(facts).toMatchObject({
      'Request id': newest.requestId,
      'Trace id': newest.traceId,
      User: expect.stringMatching(/^u_alice, key …0001$/),
      Provider: 'claude',
      'Model asked': 'claude-haiku-4-5',
      'Model answered': ANSWERED_MODEL,
      Status: '200',
      'Input tokens': String(newest.tokens![0]),
      'Output tokens': String(newest.tokens![1]),
      'Cache creation tokens': '2',
      'Cache read tokens': '1',
      'Cache status': 'no cache asked',
      Metadata: 'run = 2 team = search',
    });
    expect(facts['Total time']).toMatch(/^\d[\d,]* ms$/);
    expect(facts['Time to first byte']).toMatch(/^\d[\d,]* ms$/);
    expect(
      await page.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement
            .textContent,
      ),
    ).toBe(`Request ${newest.requestId}`);
    expect(await page.content()).not.toContain('SECRET-ANSWER');
    expect(await axeViolations(context, page)).toEqual([]);
    await shot(page, 'request-detail');
  });
});

describe('the Usage page', () => {
  const sums = (records: Sent[]) => ({
    requests: records.length,
    errors: records.filter((s) => s.status >= 400).length,
    input: records.reduce((n, s) => n + (s.tokens?.[0] ?? 0), 0),
    output: records.reduce((n, s) => n + (s.tokens?.[1] ?? 0), 0),
    cacheCreation: records.filter((s) => s.tokens).length * 2,
    cacheRead: records.filter((s) => s.tokens).length,
  });
  const row = (key: string, s: ReturnType<typeof sums>) => [
    key,
    String(s.requests),
    String(s.errors),
    String(s.input),
    String(s.output),
    String(s.cacheCreation),
    String(s.cacheRead),
  ];
  /** The table's rows and total without their last cell, the cost (checked on its own). */
  async function table(): Promise<{ body: string[][]; total: string[]; costs: string[] }> {
    const cells = (await page.locator('#usage-table tbody tr').allInnerTexts()).map((r) =>
      r.split('\t').map((c) => c.trim()),
    );
    const total = (await page.locator('#usage-table tfoot tr').innerText()).split('\t').map((c) => c.trim());
    return {
      body: cells.map((r) => r.slice(0, -1)),
      total: total.slice(0, -1),
      costs: [...cells.map((r) => r.at(-1) as string), total.at(-1) as string],
    };
  }
  /** A cost as the page shows it: cents, or six decimals below a cent. */
  const dollars = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 6 : 2)}`;

  it('sums tokens and requests by user, equal to the requests made, in a table and a bar chart', async () => {
    await goTo(page, 'Usage');
    const form = page.getByRole('form', { name: 'Usage over a date range' });
    await form.getByLabel('Group by').selectOption('user');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('table', { name: /Usage by user/ }).waitFor();
    const alice = sums(sent.filter((s) => s.user === 'u_alice'));
    const bob = sums(sent.filter((s) => s.user === 'u_bob'));
    const { body, total, costs } = await table();
    expect(body).toEqual([row('u_alice', alice), row('u_bob', bob)]);
    expect(total).toEqual(row('Total', sums(sent)));
    // The cost column: the admin API's sums, and their total.
    const usage = (await admin('GET', '/usage?group_by=user')).body.data as { key: string; cost_usd: number }[];
    const costOf = (user: string) => usage.find((g) => g.key === user)?.cost_usd ?? 0;
    expect(costOf('u_alice')).toBeGreaterThan(0);
    expect(costs).toEqual([
      dollars(costOf('u_alice')),
      dollars(costOf('u_bob')),
      dollars(costOf('u_alice') + costOf('u_bob')),
    ]);
    // The chart: one labelled bar pair per user, the widths in proportion to the tokens.
    const chart = page.getByRole('img', { name: 'Input and output tokens by group' });
    expect(await chart.locator('text').allTextContents()).toEqual([
      'u_alice',
      `${alice.input + alice.output} tokens, 3 req., ${dollars(costOf('u_alice'))}`,
      'u_bob',
      `${bob.input + bob.output} tokens, 3 req., ${dollars(costOf('u_bob'))}`,
    ]);
    const widths = await chart
      .locator('rect')
      .evaluateAll((rects) =>
        rects.map((r) => Number((r as unknown as { getAttribute(n: string): string }).getAttribute('width'))),
      );
    expect(widths).toHaveLength(4);
    const most = Math.max(alice.input + alice.output, bob.input + bob.output);
    expect(widths[0]).toBeCloseTo((alice.input / most) * 520, 0);
    expect(widths[3]).toBeCloseTo((bob.output / most) * 520, 0);
    expect(await axeViolations(context, page)).toEqual([]);
    await shot(page, 'usage');
    await page.setViewportSize({ width: 360, height: 800 });
    const overflow = await page.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
      ).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  it('groups by day and by model over the date range, and leaves out a range without requests', async () => {
    const form = page.getByRole('form', { name: 'Usage over a date range' });
    await form.getByLabel('Group by').selectOption('day');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('table', { name: /Usage by day/ }).waitFor();
    const today = new Date().toISOString().slice(0, 10);
    expect((await table()).body).toEqual([row(today, sums(sent))]);

    await form.getByLabel('Group by').selectOption('model');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('table', { name: /Usage by model/ }).waitFor();
    // The failed request has no answered model: it is counted under the model it asked for.
    const { body } = await table();
    expect(body).toEqual([
      row(ANSWERED_MODEL, sums(sent.filter((s) => s.status === 200))),
      row('claude-haiku-4-5', sums(sent.filter((s) => s.status !== 200))),
    ]);

    await form.getByLabel('From (UTC day)').fill('2020-01-01');
    await form.getByLabel('To (UTC day, included)').fill('2020-01-31');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.getByText('No requests in this range.').waitFor();
  });
});
