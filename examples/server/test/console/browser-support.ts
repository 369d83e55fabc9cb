import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any, document: any;

/** Debian's Chromium, installed by the test command (scripts/system-deps.sh). */
export const CHROMIUM = '/usr/bin/chromium';
/** Where the console's browser tests write their screenshots. */
export const SHOTS = join(__dirname, '..', '..', 'test-output', 'console');

/** A signed-out page in a fresh Chromium, as console.browser.test.ts starts one. */
export async function launchConsoleBrowser(): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      'No Chromium at /usr/bin/chromium: the test command installs it (scripts/system-deps.sh: apt-get install chromium).',
    );
  }
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  return { browser, context, page };
}

/** Signs in with the admin key and waits for the first page. */
export async function signIn(page: Page, gatewayUrl: string, adminKey: string): Promise<void> {
  await page.goto(`${gatewayUrl}/console/#/models`);
  await page.getByLabel('Admin key').fill(adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Model catalog' }).waitFor();
}

/** Follows the navigation link of `section` and waits for its heading. */
export async function goTo(page: Page, section: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: section }).waitFor();
}

/**
 * Whether the browser tests write their screenshots: only with `CONSOLE_SCREENSHOTS=1` (default off).
 * No test compares them, and a full-page screenshot costs the browser about 0.6 s of CPU.
 */
export const WRITE_SHOTS = process.env.CONSOLE_SCREENSHOTS === '1';

/**
 * Clears the passing status message, then, with `CONSOLE_SCREENSHOTS=1`, writes a full-page
 * screenshot to {@link SHOTS}. The status is cleared either way, so a test meets the same page
 * whether or not screenshots are written.
 */
export async function shot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => {
    const status = document.getElementById('status');
    if (status) status.textContent = '';
  });
  if (WRITE_SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** What axe-core reports of one violated rule. */
export interface AxeViolation {
  id: string;
  impact: string;
  nodes: { target: unknown }[];
}

let axeSource: string | undefined;

/**
 * Runs axe-core (every rule, as `axe.run()` does by default) in the page and resolves with its
 * violations. axe-core is injected through the DevTools protocol (the console's CSP refuses inline
 * scripts), once per document: a check after a hash navigation reuses it. Only the violations are
 * collected in full (`resultTypes`), which changes what axe-core reports of passes, never which
 * rules fail.
 */
export async function axeRun(context: BrowserContext, page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => typeof window.axe?.run === 'function'))) {
    axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    const session = await context.newCDPSession(page);
    await session.send('Runtime.evaluate', { expression: axeSource });
    await session.detach();
  }
  const result = (await page.evaluate(async () => window.axe.run({ resultTypes: ['violations'] }))) as {
    violations: AxeViolation[];
  };
  return result.violations;
}

/** Every axe-core violation in the page (see {@link axeRun}), one line each: rule, impact, elements. */
export async function axeViolations(context: BrowserContext, page: Page): Promise<string[]> {
  return (await axeRun(context, page)).map(
    (v) => `${v.id} [${v.impact}]: ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`,
  );
}
