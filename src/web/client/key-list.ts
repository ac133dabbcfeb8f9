import type { ApiKeyView, KeyState } from '../../services/keys/types.ts';
import type { PageScope } from '../page-config.ts';
import { el } from './dom.ts';

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

const stateWords: Record<KeyState, string> = {
  active: 'Active',
  disabled: 'Disabled',
  expired: 'Expired',
  'rate-limited': 'Rate-limited until tomorrow (UTC)',
};

export function time(iso: string | null, none: string): Node {
  if (!iso) return document.createTextNode(none);
  return el('time', { datetime: iso }, when.format(new Date(iso)));
}

function badge(text: string, description: string): HTMLElement {
  return el('span', { class: 'badge', title: description }, text, el('span', { class: 'visually-hidden' }, ` (${description})`));
}

export function meta(term: string, value: Node | string): HTMLElement {
  return el('div', {}, el('dt', {}, term), el('dd', {}, value));
}

/** One badge per held scope: `MCP` for a scope whose only action is access, `reports: read` otherwise. */
function scopeBadges(key: ApiKeyView, scopes: PageScope[]): HTMLElement[] {
  return scopes.flatMap((s) => {
    const held = (Object.hasOwn(key.permissions, s.name) ? key.permissions[s.name]! : []).filter((a) => s.actions.includes(a));
    if (held.length === 0) return [];
    const words = s.label.replace(/^allow\s+/i, '');
    const accessOnly = s.actions.length === 1 && s.actions[0] === 'access';
    return [accessOnly ? badge(s.name.toUpperCase(), words) : badge(`${s.name}: ${held.join(', ')}`, `${words}: ${held.join(', ')}`)];
  });
}

export interface KeyActions {
  revoke(key: ApiKeyView, button: HTMLButtonElement): void;
  rotate(key: ApiKeyView, button: HTMLButtonElement): void;
}

const rowId = (id: string) => `key-${id}`;

/** A link to another row of the list, named by the start of its key. */
function keyLink(other: ApiKeyView): HTMLElement {
  return el('a', { href: `#${rowId(other.id)}` }, el('code', {}, `${other.start}…`));
}

/**
 * A rotation leaves two rows with one name: each says which key it replaced or was replaced by, by
 * the start of that key, and links to its row. A predecessor no longer listed is said in words.
 */
function rotationMeta(key: ApiKeyView, byId: Map<string, ApiKeyView>): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (key.rotatedFrom) {
    const before = byId.get(key.rotatedFrom);
    out.push(meta('Replaces', before ? keyLink(before) : 'a key that no longer works'));
  }
  const after = key.rotatedTo ? byId.get(key.rotatedTo) : undefined;
  if (after) out.push(meta('Replaced by', keyLink(after)));
  return out;
}

function keyItem(key: ApiKeyView, scopes: PageScope[], actions: KeyActions, byId: Map<string, ApiKeyView>): HTMLLIElement {
  const headingId = `key-${key.id}-name`;
  // The start too: after a rotation two rows share the name, and their buttons must not read alike.
  const which = ` key “${key.name}” (${key.start}…)`;
  const hidden = () => el('span', { class: 'visually-hidden' }, which);
  const revoke = el('button', { type: 'button', class: 'danger secondary small' }, 'Revoke', hidden());
  revoke.addEventListener('click', () => actions.revoke(key, revoke));
  // A key already replaced cannot be rotated again; its row says until when it still works.
  const rotate = key.rotatedTo ? null : el('button', { type: 'button', class: 'secondary small' }, 'Rotate', hidden());
  rotate?.addEventListener('click', () => actions.rotate(key, rotate));
  const expiry = key.rotatedTo
    ? meta('Replaced, works until', time(key.expiresAt, ''))
    : meta('Expires', time(key.expiresAt, 'Never'));
  return el(
    'li',
    { class: 'key', id: rowId(key.id), 'data-key-id': key.id },
    el('div', { class: 'key-head' },
      el('h3', { class: 'key-name', id: headingId }, key.name),
      ...scopeBadges(key, scopes),
      key.expiresSoon && !key.rotatedTo && badge('Expires soon', 'stops working within 7 days; rotate it to keep access'),
    ),
    el('dl', { class: 'key-meta' },
      meta('Key', el('code', { class: 'key-start' }, `${key.start}…`)),
      meta('Created', time(key.createdAt, '')),
      meta('Last used', time(key.lastUsedAt, 'Never')),
      meta('State', el('span', { class: `state state-${key.state}` }, stateWords[key.state])),
      expiry,
      ...rotationMeta(key, byId),
    ),
    el('div', { class: 'key-usage', 'data-usage-for': key.id }, 'Loading usage…'),
    el('div', { class: 'key-actions' }, rotate ?? false, revoke),
  );
}

export function renderKeys(
  list: HTMLUListElement, message: HTMLElement, keys: ApiKeyView[], scopes: PageScope[], actions: KeyActions,
): void {
  const byId = new Map(keys.map((k) => [k.id, k]));
  list.replaceChildren(...keys.map((k) => keyItem(k, scopes, actions, byId)));
  message.textContent = keys.length ? '' : 'You have no API keys yet. Create one above.';
}
