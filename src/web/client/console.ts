import { byId } from './dom.ts';

// The console pages work without this script: each action link leads to a confirmation page whose
// form POSTs. With it, the same question opens in a native dialog on this page, and its form POSTs
// to the same address, so there is one path for the action either way.

const dialog = byId('confirm-dialog', HTMLDialogElement);
const form = byId('confirm-form', HTMLFormElement);
let opener: HTMLElement | null = null;

document.addEventListener('click', (event) => {
  const link = event.target instanceof Element ? event.target.closest<HTMLAnchorElement>('a[data-confirm-title]') : null;
  if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  opener = link;
  form.action = link.href;
  byId('confirm-title', HTMLElement).textContent = link.dataset.confirmTitle ?? '';
  byId('confirm-text', HTMLElement).textContent = link.dataset.confirmText ?? '';
  byId('confirm-go', HTMLButtonElement).textContent = link.dataset.confirmGo ?? 'Confirm';
  // Only an action that keeps a message (a rollback) sends one; elsewhere the field is off.
  const asksWhy = link.dataset.confirmMessage === '1';
  byId('confirm-message-field', HTMLElement).hidden = !asksWhy;
  const why = byId('confirm-message', HTMLInputElement);
  why.disabled = !asksWhy;
  why.value = '';
  dialog.showModal();
});

byId('confirm-cancel', HTMLButtonElement).addEventListener('click', () => dialog.close());
// Focus goes back to the link that opened the dialog when it is cancelled (Escape included).
dialog.addEventListener('close', () => opener?.focus());
