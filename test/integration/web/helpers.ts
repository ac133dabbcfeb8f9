import { expect } from 'chai';
import type { Page } from 'playwright-core';

// Steps a user takes on Settings → Developers, written once so the tests read as behaviour.

export { signedUpUser } from '../../support/browser.ts';

/** Fills the create form and submits it; answers nothing, the caller looks at the outcome. */
export async function submitCreate(page: Page, name: string, access: { ai?: boolean; mcp?: boolean } = {}): Promise<void> {
  await page.getByLabel('Name', { exact: true }).fill(name);
  if (access.ai) await page.getByLabel('Allow AI access').check();
  if (access.mcp) await page.getByLabel('Allow MCP access').check();
  await page.getByRole('button', { name: 'Create key' }).click();
}

/** Creates a key through the page and answers the plaintext the page shows once. */
export async function createKey(page: Page, name: string, access: { ai?: boolean; mcp?: boolean } = {}): Promise<string> {
  await submitCreate(page, name, access);
  const value = page.locator('#new-key-value');
  await value.waitFor({ state: 'visible' });
  const key = (await value.textContent()) ?? '';
  expect(key).to.match(/^key_[0-9A-Za-z]{38,}$/);
  return key;
}

export const keyItem = (page: Page, name: string) => page.locator('#keys-list > li', { has: page.getByRole('heading', { name, exact: true }) });

export async function revokeKey(page: Page, name: string): Promise<void> {
  await keyItem(page, name).getByRole('button', { name: /^Revoke/ }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
  await keyItem(page, name).waitFor({ state: 'detached' });
}

export const createError = (page: Page) => page.locator('#create-error');
