import { CONFIG_ELEMENT_ID, type PageConfig } from '../page-config.ts';

/** The element with this id, of this type; a page without it is a bug in the markup, not a state. */
export function byId<T extends HTMLElement>(id: string, type: { new (): T; prototype: T }): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`#${id} is missing or not a ${type.name}`);
  return el;
}

export function maybeById<T extends HTMLElement>(id: string, type: { new (): T; prototype: T }): T | null {
  const el = document.getElementById(id);
  return el instanceof type ? el : null;
}

export function readConfig(): PageConfig {
  return JSON.parse(byId(CONFIG_ELEMENT_ID, HTMLScriptElement).textContent ?? '{}') as PageConfig;
}

type Child = Node | string | null | false;

/**
 * Builds an element. Text always goes in as text nodes, never as markup: key names are chosen by
 * users and must not become HTML.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K, attrs: Record<string, string> = {}, ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) if (child !== null && child !== false) node.append(child);
  return node;
}

const busy = new WeakSet<HTMLButtonElement>();

/**
 * Runs a request on behalf of a button, once at a time: a double click does not send it twice.
 * The button is marked with aria-disabled rather than disabled, which would throw its focus away.
 * Answers undefined when the button was already busy.
 */
export async function whileBusy<T>(button: HTMLButtonElement, work: () => Promise<T>): Promise<T | undefined> {
  if (busy.has(button)) return undefined;
  busy.add(button);
  button.setAttribute('aria-disabled', 'true');
  try {
    return await work();
  } finally {
    busy.delete(button);
    button.removeAttribute('aria-disabled');
  }
}
