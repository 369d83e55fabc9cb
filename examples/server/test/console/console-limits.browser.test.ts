import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  type AnthropicDouble,
} from '../catalog/catalog-support';
import { eventually } from '../observability/otel-support';
import { axeViolations, goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

jest.setTimeout(180_000);

/** Callers of the config file: one the console's limit is for, two whose requests are priced. */
const LIMITED = 'gw-console-limits-limited-0001';
const PRICED = 'gw-console-limits-priced-0002';
const OTHER = 'gw-console-limits-other-0003';
let double: AnthropicDouble;
let gateway: RunningGateway;
let adminKey: string;
let admin: ReturnType<typeof adminClient>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  double = await startAnthropicDouble();
  adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: LIMITED, user: { user_id: 'u-limited' } },
          { key: PRICED, user: { user_id: 'u-priced' } },
          { key: OTHER, user: { user_id: 'u-other' } },
        ],
      },
      limits: [
        {
          slug: 'from-file',
          subjects: { users: ['u-other'] },
          per: 'shared',
          cost_usd_per_day: 5,
        },
      ],
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey);
  // A provider of the catalog (not of the config file), so the console may edit its prices.
  const created = await admin('POST', '/providers', {
    provider: 'anthropic',
    slug: 'claude',
    name: 'Claude',
    apiKey: 'sk-ant-console-limits-0000000000001234',
    baseUrl: double.url,
  });
  expect(created.status).toBe(201);
  ({ browser, context, page } = await launchConsoleBrowser());
  await signIn(page, gateway.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await double?.close();
});

describe('limits, prices and costs in the console', () => {
  test('a limit created in the console refuses the request past its cap; the Limits page shows its counters', async () => {
    await goTo(page, 'Limits');
    const form = page.getByRole('form', { name: 'Add a limit' });
    // Checked on the page: a cap that is not a whole number, and a limit without any cap.
    await form.getByLabel('Slug', { exact: false }).fill('two-a-minute');
    await form.getByLabel('Users').fill('u-limited');
    await form.getByLabel('Requests per minute').fill('2.5');
    await form.getByLabel('Cost per day (USD)').fill('-1');
    await form.getByRole('button', { name: 'Add limit' }).click();
    await form.getByText('Requests per minute must be a whole number from 0 to 1,000,000').waitFor();
    await form.getByText('Cost per day (USD) must be an amount from 0 to 1,000,000').waitFor();
    expect(await form.getByLabel('Cost per day (USD)').getAttribute('aria-invalid')).toBe('true');
    await form.getByLabel('Requests per minute').fill('');
    await form.getByLabel('Cost per day (USD)').fill('');
    await form.getByRole('button', { name: 'Add limit' }).click();
    await form.getByText('Set at least one cap').waitFor();
    expect((await admin('GET', '/limits/two-a-minute')).status).toBe(404);

    await form.getByLabel('Requests per minute').fill('2');
    await form.getByLabel('Cost per month (USD)').fill('400');
    await form.getByRole('button', { name: 'Add limit' }).click();
    const card = page.locator('li.record', { has: page.getByRole('heading', { name: 'two-a-minute' }) });
    await card.waitFor();
    const stored = (await admin('GET', '/limits/two-a-minute')).body;
    expect(stored).toMatchObject({
      subjects: { users: ['u-limited'] },
      per: 'each',
      requests_per_minute: 2,
      cost_usd_per_month: 400,
      source: 'admin',
    });
    expect(stored.cost_usd_per_day).toBeUndefined();

    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof chat>> | undefined;
    for (let i = 0; i < 5 && !refused; i++) {
      const answer = await chat(gateway.url, LIMITED, '@claude/claude-haiku-4-5');
      statuses.push(answer.status);
      if (answer.status === 429) refused = answer;
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(refused?.body.error.code).toBe('rate_limited');

    // Per caller: nothing shows until a caller is looked up.
    await goTo(page, 'Limits');
    await card.getByText('look up a user id or API key id').waitFor();
    const lookup = page.getByRole('form', { name: 'Counters of a caller' });
    await lookup.getByLabel('User id').fill('u-limited');
    await lookup.getByRole('button', { name: 'Show counters' }).click();
    const counters = page.locator('table.counters[data-limit="two-a-minute"]');
    await counters.waitFor();
    expect(await counters.locator('caption').textContent()).toContain('of user u-limited');
    const requestsRow = counters.getByRole('row', { name: /Requests per minute/ });
    expect(await requestsRow.getByRole('cell').first().textContent()).toBe('2 / 2');
    expect(await requestsRow.getByRole('cell').nth(1).textContent()).toBe('0');
    const monthRow = counters.getByRole('row', { name: /Cost this month/ });
    expect(await monthRow.getByRole('cell').first().textContent()).toMatch(/^\$0\.0000\d\d \/ \$400\.00$/);
    expect(await counters.getByRole('row', { name: /Tokens per minute/ }).count()).toBe(0);
    await shot(page, 'limits');
    expect(await axeViolations(context, page)).toEqual([]);

    // The config file's limit: read-only, its shared counters shown without a lookup.
    const fileCard = page.locator('li.record', { has: page.getByRole('heading', { name: 'from-file' }) });
    await fileCard.getByText('Defined in the config file.').waitFor();
    expect(await fileCard.getByRole('button').count()).toBe(0);
    expect(
      await fileCard
        .getByRole('row', { name: /Cost today/ })
        .getByRole('cell')
        .first()
        .textContent(),
    ).toBe('$0.00 / $5.00');

    // Edited in place: a higher cap lets the caller through again; a cap emptied is removed.
    await card.getByRole('button', { name: 'Edit limit two-a-minute' }).click();
    const edit = page.getByRole('form', { name: 'Edit limit two-a-minute' });
    await edit.getByLabel('Requests per minute').fill('3');
    await edit.getByLabel('Cost per month (USD)').fill('');
    await edit.getByRole('button', { name: 'Save limit' }).click();
    await page.getByText('Requests per minute: 3').waitFor();
    const edited = (await admin('GET', '/limits/two-a-minute')).body;
    expect(edited.version).toBe(stored.version + 1);
    expect(edited.requests_per_minute).toBe(3);
    expect(edited.cost_usd_per_month).toBeUndefined();
    expect((await chat(gateway.url, LIMITED, '@claude/claude-haiku-4-5')).status).toBe(200);
    expect((await chat(gateway.url, LIMITED, '@claude/claude-haiku-4-5')).status).toBe(429);

    // A stale edit is refused, not applied over another's change.
    await card.getByRole('button', { name: 'Edit limit two-a-minute' }).click();
    expect((await admin('PATCH', '/limits/two-a-minute', { version: edited.version, name: 'Moved' })).status).toBe(200);
    await edit.getByLabel('Requests per minute').fill('50');
    await edit.getByRole('button', { name: 'Save limit' }).click();
    await edit.getByText('(version_conflict)').waitFor();
    expect((await admin('GET', '/limits/two-a-minute')).body.requests_per_minute).toBe(3);

    await goTo(page, 'Limits');
    await page.getByRole('button', { name: 'Delete limit two-a-minute' }).click();
    await page
      .getByText('No limits yet.')
      .or(page.getByRole('heading', { name: 'from-file' }))
      .waitFor();
    await eventually(5000, async () => (await admin('GET', '/limits/two-a-minute')).status === 404);
    expect((await chat(gateway.url, LIMITED, '@claude/claude-haiku-4-5')).status).toBe(200);
  });

  test("a price set in the console gives a request's cost on the Requests page and the sums on the Usage page", async () => {
    await goTo(page, 'Model catalog');
    await page.getByRole('button', { name: 'Edit claude' }).click();
    const form = page.getByRole('form', { name: 'Settings of @claude' });
    await form.getByRole('button', { name: 'Add a model price' }).click();
    const row = form.getByRole('group', { name: 'Price 1' });
    // Checked on the page, every wrong cell beside itself.
    await row.getByLabel('Model id').fill('claude-sonnet-4-5');
    await row.getByLabel('Input').fill('-3');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Price 1: the input price must be a number of dollars from 0 to 100,000').waitFor();
    await form.getByText('Price 1: enter the output price (0 if free).').waitFor();
    expect(await row.getByLabel('Output').getAttribute('aria-invalid')).toBe('true');
    expect((await admin('GET', '/providers/claude')).body.pricing).toBeUndefined();

    await row.getByLabel('Input').fill('10000');
    await row.getByLabel('Output').fill('25000');
    await row.getByLabel('Cache read').fill('1000');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('claude-sonnet-4-5: $10,000 in, $25,000 out, $1,000 cache read').waitFor();
    expect((await admin('GET', '/providers/claude')).body.pricing).toEqual({
      'claude-sonnet-4-5': { input: 10000, output: 25000, cacheRead: 1000 },
    });
    await page.getByRole('button', { name: 'Edit claude' }).click();
    await shot(page, 'provider-pricing');

    // The double answers 3 input and 4 output tokens: 3 × $0.01 + 4 × $0.025 = $0.13 a request.
    for (let i = 0; i < 2; i++) expect((await chat(gateway.url, PRICED, '@claude/claude-sonnet-4-5')).status).toBe(200);
    // At the bundled price of claude-haiku-4-5 ($1 and $5 a million): $0.000023.
    expect((await chat(gateway.url, OTHER, '@claude/claude-haiku-4-5')).status).toBe(200);
    // All three requests' records written (they are written after the answers, in the background) before the
    // pages read them: the Usage page's row of u-other too.
    await eventually(10_000, async () => {
      const priced = (await admin('GET', '/requests?user=u-priced')).body.data ?? [];
      const other = (await admin('GET', '/requests?user=u-other')).body.data ?? [];
      return priced.length === 2 && other.length === 1;
    });

    await page.goto(`${gateway.url}/console/#/requests?user=u-priced`);
    await page.getByRole('heading', { level: 1, name: 'Requests' }).waitFor();
    const firstRow = page.locator('tbody tr').first();
    expect(await firstRow.locator('td[data-label="Cost"]').textContent()).toBe('$0.13');
    await page
      .getByRole('button', { name: /^Open request/ })
      .first()
      .click();
    const detail = page.locator('#request-detail');
    await detail.waitFor();
    expect(await detail.locator('dt:text-is("Cost") + dd').textContent()).toBe('$0.13');

    await goTo(page, 'Usage');
    const filter = page.getByRole('form', { name: 'Usage over a date range' });
    const usageRow = (key: string) =>
      page.locator('#usage-table tbody tr', { has: page.getByRole('rowheader', { name: key, exact: true }) });
    const costOf = async (key: string) => usageRow(key).locator('td.cost').textContent();
    await filter.getByLabel('Group by').selectOption('user');
    await filter.getByRole('button', { name: 'Show' }).click();
    await usageRow('u-priced').waitFor();
    expect(await costOf('u-priced')).toBe('$0.26');
    expect(await costOf('u-other')).toBe('$0.000023');
    expect(await page.locator('#usage-table tfoot td.cost').textContent()).toMatch(/^\$0\.26$/);
    await page
      .locator('#usage-total')
      .getByText(/Total cost .*: \$0\.26 for/)
      .waitFor();
    await shot(page, 'usage-cost-by-user');

    await filter.getByLabel('Group by').selectOption('model');
    await filter.getByRole('button', { name: 'Show' }).click();
    await usageRow('claude-sonnet-4-5').waitFor();
    expect(await costOf('claude-sonnet-4-5')).toBe('$0.26');

    await filter.getByLabel('Group by').selectOption('key');
    await filter.getByRole('button', { name: 'Show' }).click();
    await usageRow(`…${PRICED.slice(-4)}`).waitFor();
    expect(await costOf(`…${PRICED.slice(-4)}`)).toBe('$0.26');
    expect(await axeViolations(context, page)).toEqual([]);
  });
});
