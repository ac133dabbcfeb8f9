import type { ApiKeyView, KeyState } from '../../services/keys/types.ts';
import { el } from './dom.ts';

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

const stateWords: Record<KeyState, string> = {
  active: 'Active',
  disabled: 'Disabled',
  expired: 'Expired',
  'rate-limited': 'Rate-limited until tomorrow (UTC)',
};

function time(iso: string | null, none: string): Node {
  if (!iso) return document.createTextNode(none);
  return el('time', { datetime: iso }, when.format(new Date(iso)));
}

function badge(text: string, description: string): HTMLElement {
  return el('span', { class: 'badge', title: description }, text, el('span', { class: 'visually-hidden' }, ` (${description})`));
}

function meta(term: string, value: Node | string): HTMLElement {
  return el('div', {}, el('dt', {}, term), el('dd', {}, value));
}

function keyItem(key: ApiKeyView, onRevoke: (key: ApiKeyView, button: HTMLButtonElement) => void): HTMLLIElement {
  const headingId = `key-${key.id}-name`;
  const revoke = el('button', { type: 'button', class: 'danger secondary small' }, 'Revoke', el('span', { class: 'visually-hidden' }, ` key “${key.name}”`));
  revoke.addEventListener('click', () => onRevoke(key, revoke));
  return el(
    'li',
    { class: 'key', 'data-key-id': key.id },
    el('div', { class: 'key-head' },
      el('h3', { class: 'key-name', id: headingId }, key.name),
      key.mcp && badge('MCP', 'MCP access'),
      key.ai && badge('AI', 'AI access'),
    ),
    el('dl', { class: 'key-meta' },
      meta('Key', el('code', { class: 'key-start' }, `${key.start}…`)),
      meta('Created', time(key.createdAt, '')),
      meta('Last used', time(key.lastUsedAt, 'Never')),
      meta('State', el('span', { class: `state state-${key.state}` }, stateWords[key.state])),
    ),
    el('div', { class: 'key-actions' }, revoke),
  );
}

export function renderKeys(list: HTMLUListElement, message: HTMLElement, keys: ApiKeyView[], onRevoke: (key: ApiKeyView, button: HTMLButtonElement) => void): void {
  list.replaceChildren(...keys.map((k) => keyItem(k, onRevoke)));
  message.textContent = keys.length ? '' : 'You have no API keys yet. Create one above.';
}
