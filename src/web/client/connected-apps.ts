import type { GrantView } from '../../services/oauth-grants.ts';
import { networkSentence, type Api, type Problem } from './api.ts';
import { byId, el } from './dom.ts';
import { meta, time } from './key-list.ts';

// Connected apps: each OAuth grant with when it was given and last used, and a
// Revoke behind a confirmation, as the keys list does it. Client names are chosen by whoever
// registered the client, so they only ever go in as text.

/** The start of a grant's id: enough to tell two connections of one app apart. */
const connection = (grant: GrantView) => `${grant.id.slice(0, 8)}…`;

function appItem(grant: GrantView, sameApp: number, revoke: (grant: GrantView, button: HTMLButtonElement) => void): HTMLLIElement {
  const button = el('button', { type: 'button', class: 'danger secondary small' }, 'Revoke',
    el('span', { class: 'visually-hidden' }, ` access for “${grant.clientName}” (connection ${connection(grant)})`));
  button.addEventListener('click', () => revoke(grant, button));
  return el(
    'li',
    { class: 'key', 'data-grant-id': grant.id },
    el('div', { class: 'key-head' }, el('h3', { class: 'key-name' }, grant.clientName)),
    // Each allow on the consent page is a connection of its own, with its own tokens.
    sameApp > 1 && el('p', { class: 'muted' },
      `Connected ${sameApp} times: each connection has its own tokens. Revoke those you no longer use.`),
    el('dl', { class: 'key-meta' },
      meta('Granted', time(grant.createdAt, '')),
      meta('Last used', time(grant.lastUsedAt, 'Never')),
      meta('Connection', el('code', {}, connection(grant))),
    ),
    el('div', { class: 'key-actions' }, button),
  );
}

function revokeRefusal(p: Problem): string {
  switch (p.code) {
    case 'NOT_FOUND':
      return 'That app was already disconnected. The list has been refreshed.';
    case 'NETWORK':
      return networkSentence;
    default:
      return p.detail || 'The app could not be disconnected. Try again in a moment.';
  }
}

export const emptySentence = 'No apps are connected. An MCP client you sign in to with this account and allow will be listed here.';

/** Wires the section drawn by connected-apps-markup.ts; `signedOut` runs when the session has ended. */
export function connectedApps(api: Api, signedOut: () => void): void {
  const list = byId('apps-list', HTMLUListElement);
  const message = byId('apps-message', HTMLElement);
  const status = byId('apps-status', HTMLElement);
  const heading = byId('apps-title', HTMLElement);
  const dialog = byId('revoke-app-dialog', HTMLDialogElement);
  let current: GrantView[] = [];

  const show = (grants: GrantView[]) => {
    current = grants;
    const perApp = new Map<string, number>();
    for (const g of grants) perApp.set(g.clientId, (perApp.get(g.clientId) ?? 0) + 1);
    list.replaceChildren(...grants.map((g) => appItem(g, perApp.get(g.clientId) ?? 1, askToRevoke)));
    message.textContent = grants.length ? '' : emptySentence;
  };

  async function refresh(): Promise<void> {
    const res = await api.get<{ grants: GrantView[] }>('/oauth/grants');
    if (res.ok) return show(res.data.grants);
    if (res.problem.status === 401) return signedOut();
    message.textContent = 'Your connected apps could not be loaded. Reload the page to try again.';
  }

  function askToRevoke(grant: GrantView, trigger: HTMLButtonElement): void {
    byId('revoke-app-name', HTMLElement).textContent = grant.clientName;
    dialog.returnValue = '';
    dialog.addEventListener('close', () => void onClose(grant, trigger), { once: true });
    dialog.showModal();
  }

  async function onClose(grant: GrantView, trigger: HTMLButtonElement): Promise<void> {
    if (dialog.returnValue !== 'revoke') return trigger.focus();
    status.textContent = '';
    const res = await api.delete(`/oauth/grants/${encodeURIComponent(grant.id)}`);
    if (res.ok) {
      show(current.filter((g) => g.id !== grant.id));
      status.textContent = `“${grant.clientName}” was disconnected. It can no longer act as you.`;
    } else {
      if (res.problem.status === 401) return signedOut();
      status.textContent = revokeRefusal(res.problem);
      if (res.problem.code === 'NOT_FOUND') await refresh();
    }
    // The row and its button are gone; the section's heading is the nearest stable place to go on from.
    heading.focus();
  }

  void refresh();
}
