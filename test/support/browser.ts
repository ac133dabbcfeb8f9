import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { AxeResults, Result as AxeViolation } from 'axe-core';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from './gateway.ts';
import { signUp, type Client } from './http.ts';

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

export interface SignedUp { client: Client; user: { id: string; email: string }; password: string; cookie: string }

/** Signs a user up and answers their client with the session cookie a browser context takes. */
export async function signedUpUser(gw: TestGateway): Promise<SignedUp> {
  const u = await signUp(gw.url, { name: 'Ada Lovelace' });
  const cookie = u.client.cookies.get('keygate_session');
  if (!cookie) throw new Error('sign-up set no session cookie');
  return { ...u, cookie };
}

export interface PageSuite { gw: TestGateway; browser: Browser; t: TestPage; /** A new user; the context holds their session cookie only with `signedIn`. */ person: SignedUp }

/**
 * The hooks every page suite needs: one gateway and one Chromium for the file, a fresh browser
 * context per test (a new user each time, signed in when asked), and after each test no script error and
 * no CSP refusal. `use` is handed the current parts before each test.
 */
export function pageSuite(opts: { signedIn?: boolean; clipboard?: boolean; gateway?: TestGatewayOptions }, use: (s: PageSuite) => void): void {
  let gw: TestGateway | undefined;
  let browser: Browser | undefined;
  let t: TestPage | undefined;
  before(async () => {
    [gw, browser] = await Promise.all([startTestGateway(opts.gateway), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });
  beforeEach(async () => {
    if (!gw || !browser) throw new Error('the page suite did not start');
    const person = await signedUpUser(gw);
    t = await openContext(browser, gw.url, { sessionCookie: opts.signedIn ? person.cookie : undefined, clipboard: opts.clipboard });
    use({ gw, browser, t, person });
  });
  afterEach(async () => {
    if (!t) return;
    expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
    await t.close();
  });
}
