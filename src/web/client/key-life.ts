import type { ApiKeyView } from '../../services/keys/types.ts';
import type { Api } from './api.ts';
import { byId } from './dom.ts';
import { usageChart, type UsageDay } from './usage-chart.ts';

// A key's life on the page (docs/key-life.md): the expiry asked for at creation, the charts of use, and
// rotation with its grace period and the one-time reveal of the successor.

/** The create body's expiry from the form's choice; a date means the end of that day, here. */
export function expiryOf(form: HTMLFormElement): { expiresIn?: number; expiresAt?: string } {
  const data = new FormData(form);
  const choice = data.get('expiry');
  if (choice === null || choice === 'never') return {};
  if (choice === 'date') {
    const day = data.get('expiresAt');
    // An empty date is sent as such, so the server's "not a date" lands under the date field.
    if (typeof day !== 'string' || !day) return { expiresAt: '' };
    return { expiresAt: new Date(`${day}T23:59:59`).toISOString() };
  }
  return { expiresIn: Number(choice) * 86_400 };
}

/**
 * What a rotated key's figure counts. The quota is per key and a successor starts with its own, so
 * its figure is its own requests, not its predecessor's carried over; the row says so, or a new key
 * showing 0 reads as lost history.
 */
export function successorNote(key: ApiKeyView, listed: ReadonlySet<string>): string | null {
  if (!key.rotatedFrom) return null;
  const before = listed.has(key.rotatedFrom)
    ? 'those made with the key it replaces are on that key’s row'
    : 'those made with the key it replaced are not counted here';
  return `Counts only requests made with this key, which has a daily quota of its own: ${before}.`;
}

/** Draws each listed key's last 30 days into its slot; a chart that cannot load says so. */
export async function drawUsage(api: Api, list: HTMLElement, keys: ApiKeyView[]): Promise<void> {
  const listed = new Set(keys.map((k) => k.id));
  await Promise.all(keys.map(async (key) => {
    const slot = list.querySelector<HTMLElement>(`[data-usage-for="${CSS.escape(key.id)}"]`);
    if (!slot) return;
    const res = await api.get<{ days: UsageDay[] }>(`/api-keys/${encodeURIComponent(key.id)}/usage?days=30`);
    slot.replaceChildren(res.ok
      ? usageChart(res.data.days, successorNote(key, listed))
      : document.createTextNode('Usage could not be loaded.'));
  }));
}

export interface RotateFlow { ask(key: ApiKeyView, trigger: HTMLButtonElement): void }

export interface RotateOutcome {
  rotated(fresh: ApiKeyView, plaintext: string, old: ApiKeyView): void;
  failed(message: string, trigger: HTMLButtonElement): void;
}

export function createRotateFlow(api: Api, on: RotateOutcome): RotateFlow {
  const dialog = byId('rotate-dialog', HTMLDialogElement);
  const form = dialog.querySelector('form')!;
  return {
    ask(key, trigger) {
      byId('rotate-name', HTMLElement).textContent = key.name;
      form.reset();
      dialog.returnValue = '';
      dialog.addEventListener('close', () => void close(key, trigger), { once: true });
      dialog.showModal();
    },
  };

  async function close(key: ApiKeyView, trigger: HTMLButtonElement): Promise<void> {
    if (dialog.returnValue !== 'rotate') return trigger.focus();
    const grace = Number(new FormData(form).get('grace') ?? 86_400);
    const path = `/api-keys/${encodeURIComponent(key.id)}/rotate`;
    const res = await api.post<ApiKeyView & { key: string }>(path, { gracePeriodSeconds: grace });
    if (!res.ok) {
      const p = res.problem;
      const message = p.code === 'API_KEY_DAILY_LIMIT'
        ? 'You have created or rotated as many keys as allowed today. Try again after midnight UTC.'
        : p.code === 'NOT_FOUND' ? `The key “${key.name}” can no longer be rotated: it was revoked, expired or already rotated.`
        : `The key “${key.name}” was not rotated${p.detail ? `: ${p.detail}` : '.'}`;
      return on.failed(message, trigger);
    }
    const { key: plaintext, ...fresh } = res.data;
    on.rotated(fresh, plaintext, key);
  }
}
