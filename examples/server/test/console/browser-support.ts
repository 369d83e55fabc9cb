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

/** Runs axe-core in the page (through the DevTools protocol: the console's CSP refuses inline scripts). */
export async function axeViolations(context: BrowserContext, page: Page): Promise<string[]> {
  const session = await context.newCDPSession(page);
  await session.send('Runtime.evaluate', { expression: readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8') });
  await session.detach();
  const result = (await page.evaluate(async () => window.axe.run())) as {
    violations: { id: string; impact: string; nodes: { target: unknown }[] }[];
  };
  return result.violations.map(
    (v) => `${v.id} [${v.impact}]: ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`,
  );
}
