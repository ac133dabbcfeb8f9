import { byId } from './dom.ts';

// The one showing of a new key. The plaintext lives only in this panel's text and in the closure
// below: never in storage, the URL or the history, so leaving or reloading the page loses it for
// good, as the warning says.

export function createReveal() {
  const panel = byId('new-key', HTMLElement);
  const heading = byId('new-key-title', HTMLElement);
  const nameSlot = byId('new-key-name', HTMLElement);
  const value = byId('new-key-value', HTMLElement);
  const copy = byId('copy-key', HTMLButtonElement);
  const dismiss = byId('dismiss-key', HTMLButtonElement);
  const copyStatus = byId('copy-status', HTMLElement);
  let plaintext: string | null = null;
  let shownId: string | null = null;

  function selectKey(): void {
    const range = document.createRange();
    range.selectNodeContents(value);
    const selection = getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
  }

  function wipe(): void {
    plaintext = null;
    shownId = null;
    value.textContent = '';
    nameSlot.textContent = '';
    copyStatus.textContent = '';
    panel.hidden = true;
  }

  copy.addEventListener('click', async () => {
    if (!plaintext) return;
    try {
      // Missing outside a secure context (plain http on another host), or refused by the browser.
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(plaintext);
      copyStatus.textContent = 'Copied. Paste it where it will be kept safe.';
    } catch {
      selectKey();
      copyStatus.textContent = 'This browser did not let the page copy. The key is selected: press Ctrl+C (⌘C on a Mac) to copy it.';
    }
  });

  dismiss.addEventListener('click', () => {
    wipe();
    byId('keys-title', HTMLElement).focus();
  });

  // A page kept in the back/forward cache would come back with the key on it.
  addEventListener('pagehide', wipe);

  return {
    show(id: string, name: string, key: string): void {
      plaintext = key;
      shownId = id;
      nameSlot.textContent = `“${name}”`;
      value.textContent = key;
      copyStatus.textContent = '';
      panel.hidden = false;
      heading.focus();
    },
    /** A revoked key is worth nothing: stop showing it as something to keep. */
    forget(id: string): void {
      if (shownId === id) wipe();
    },
  };
}
