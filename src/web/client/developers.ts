import type { ApiKeyView } from '../../services/keys/types.ts';
import type { KeysPageConfig } from '../page-config.ts';
import { createApi } from './api.ts';
import { byId, maybeById, readConfig, whileBusy } from './dom.ts';
import { checkedPermissions, clearErrors, showFieldErrors, textOf } from './forms.ts';
import { renderKeys } from './key-list.ts';
import { createRefusal, nameSentence, revokeRefusal } from './refusals.ts';
import { createReveal } from './reveal.ts';
import { createRotateFlow, drawUsage, expiryOf } from './key-life.ts';
import { connectedApps } from './connected-apps.ts';

const config = readConfig();
const api = createApi(config.apiPrefix);

function wireSignOut(): void {
  const button = byId('sign-out', HTMLButtonElement);
  button.addEventListener('click', () => {
    void whileBusy(button, async () => {
      await api.post('/auth/sign-out');
      // Whatever the answer, this page is done with: a 401 means the session had already ended.
      location.assign('/sign-in');
    });
  });
}

function keysPage(keys: KeysPageConfig): void {
  const status = byId('page-status', HTMLElement);
  const list = byId('keys-list', HTMLUListElement);
  const listMessage = byId('keys-message', HTMLElement);
  const listHeading = byId('keys-title', HTMLElement);
  const form = byId('create-form', HTMLFormElement);
  const formError = byId('create-error', HTMLElement);
  const nameInput = byId('create-name', HTMLInputElement);
  const submit = form.querySelector('button[type="submit"]');
  const dialog = byId('revoke-dialog', HTMLDialogElement);
  const reveal = createReveal();
  let current: ApiKeyView[] = [];

  const signedOut = () => location.assign('/sign-in');
  const rotation = createRotateFlow(api, {
    rotated(fresh, plaintext, old) {
      status.textContent = `The key “${old.name}” was rotated. Use the new key below; the old one works until the time on its row.`;
      void refresh().then(() => reveal.show(fresh.id, fresh.name, plaintext));
    },
    failed(message, trigger) {
      status.textContent = message;
      trigger.focus();
    },
  });
  const show = (next: ApiKeyView[]) => {
    current = next;
    renderKeys(list, listMessage, current, keys.scopes, { revoke: askToRevoke, rotate: (key, button) => rotation.ask(key, button) });
    void drawUsage(api, list, current);
  };

  async function refresh(): Promise<void> {
    const res = await api.get<{ keys: ApiKeyView[] }>('/api-keys');
    if (res.ok) return show(res.data.keys);
    if (res.problem.status === 401) return signedOut();
    listMessage.textContent = 'Your keys could not be loaded. Reload the page to try again.';
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!(submit instanceof HTMLButtonElement)) return;
    void whileBusy(submit, async () => {
      clearErrors(form, formError);
      status.textContent = '';
      // Variant B's create body is the name alone; scopes are sent only when the form offers them.
      const body = {
        name: textOf(form, 'name'),
        ...(keys.scopes.some((s) => s.available) ? { permissions: checkedPermissions(form) } : {}),
        ...expiryOf(form),
      };
      const res = await api.post<ApiKeyView & { key: string }>('/api-keys', body);
      if (!res.ok) {
        const p = res.problem;
        if (p.status === 401) return signedOut();
        const invalid = p.code === 'VALIDATION_FAILED' ? showFieldErrors(form, p.errors, { name: nameSentence }) : null;
        if (invalid) return invalid.focus();
        formError.textContent = createRefusal(p, keys);
        return;
      }
      const { key: plaintext, ...created } = res.data;
      form.reset();
      show([created, ...current.filter((k) => k.id !== created.id)]);
      reveal.show(created.id, created.name, plaintext);
    });
  });

  function askToRevoke(key: ApiKeyView, trigger: HTMLButtonElement): void {
    byId('revoke-name', HTMLElement).textContent = key.name;
    dialog.returnValue = '';
    dialog.addEventListener('close', () => void onClose(key, trigger), { once: true });
    dialog.showModal();
  }

  async function onClose(key: ApiKeyView, trigger: HTMLButtonElement): Promise<void> {
    if (dialog.returnValue !== 'revoke') return trigger.focus();
    const res = await api.delete(`/api-keys/${encodeURIComponent(key.id)}`);
    if (res.ok) {
      show(current.filter((k) => k.id !== key.id));
      reveal.forget(key.id);
      status.textContent = `The key “${key.name}” was revoked. Anything that used it can no longer sign in with it.`;
    } else {
      if (res.problem.status === 401) return signedOut();
      status.textContent = revokeRefusal(res.problem);
      if (res.problem.code === 'NOT_FOUND') await refresh();
    }
    // The row and its button are gone; the list's heading is the nearest stable place to go on from.
    listHeading.focus();
  }

  nameInput.addEventListener('input', () => {
    if (nameInput.getAttribute('aria-invalid') === 'true') clearErrors(form, formError);
  });
  void refresh();
}

wireSignOut();
if (config.keys && maybeById('create-form', HTMLFormElement)) keysPage(config.keys);
if (config.connectedApps && maybeById('apps-list', HTMLUListElement)) connectedApps(api, () => location.assign('/sign-in'));
