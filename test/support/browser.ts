import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { AxeResults, Result as AxeViolation } from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

// The page tests drive Debian's Chromium through playwright-core: no browser download, the same
// binary in CI (.ci/run installs it) and here. A missing binary fails the run loudly; a skipped
// page suite would look green while testing nothing.

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// Without the background-networking flags Chromium keeps calling Google's hosts, which this
// machine's closed network refuses, many at a time.
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}; the page tests need it. Install it with \`apt-get install -y chromium\` (CI does), or set CHROMIUM_PATH.`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ARGS });
}

export const viewports = {
  desktop: { width: 1280, height: 860 },
  phone: { width: 375, height: 740 },
} as const;

export interface TestPage {
  context: BrowserContext;
  page: Page;
  /** Uncaught errors and console errors that are not failed requests (a 401 is an expected answer). */
  problems: string[];
  close(): Promise<void>;
}

export interface OpenOptions {
  viewport?: keyof typeof viewports;
  /** A session cookie to start with: the page is opened signed in. */
  sessionCookie?: string;
  clipboard?: boolean;
}

export async function openContext(browser: Browser, baseURL: string, opts: OpenOptions = {}): Promise<TestPage> {
  const context = await browser.newContext({ baseURL, viewport: viewports[opts.viewport ?? 'desktop'], locale: 'en-GB', timezoneId: 'Europe/Berlin' });
  if (opts.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL });
  if (opts.sessionCookie) await context.addCookies([{ name: 'keygate_session', value: opts.sessionCookie, url: baseURL }]);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return { context, page, problems, close: () => context.close() };
}

const require = createRequire(import.meta.url);
let axeSource: string | null = null;

/**
 * Runs axe-core in the page and answers the violations of impact serious or critical. axe is
 * evaluated over the DevTools protocol, which CSP does not govern, so the page keeps its real policy.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const results = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<AxeResults> } }).axe.run());
  return results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A readable summary for an assertion message. */
export const describeViolations = (vs: AxeViolation[]) => vs.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`).join('\n');

const artifacts = resolve('test-artifacts', 'web');

/** Saves a full-page screenshot under test-artifacts/web/ (git-ignored) for a person to look at. */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(artifacts, { recursive: true });
  const path = resolve(artifacts, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}
