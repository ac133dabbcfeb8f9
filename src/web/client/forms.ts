import type { FieldError } from './api.ts';

// Errors are shown in words next to what they are about: a field's error under the field (and
// tied to it with aria-describedby in the markup), anything else in the form's alert line.

function errorSlot(input: HTMLInputElement): HTMLElement | null {
  return document.getElementById(`${input.id}-error`);
}

export function setFieldError(input: HTMLInputElement, message: string): void {
  const slot = errorSlot(input);
  if (slot) slot.textContent = message;
  input.setAttribute('aria-invalid', 'true');
}

export function clearErrors(form: HTMLFormElement, formError: HTMLElement): void {
  formError.textContent = '';
  form.querySelectorAll('input').forEach((input) => {
    input.removeAttribute('aria-invalid');
    const slot = errorSlot(input);
    if (slot) slot.textContent = '';
  });
}

/**
 * Puts each error under its field, in the page's own words where it has them, and answers the
 * first field in error (to move focus to) or null when none named a field of this form.
 */
export function showFieldErrors(form: HTMLFormElement, errors: FieldError[], sentences: Record<string, string>): HTMLInputElement | null {
  let first: HTMLInputElement | null = null;
  for (const e of errors) {
    const input = form.elements.namedItem(e.path);
    if (!(input instanceof HTMLInputElement)) continue;
    if (input.getAttribute('aria-invalid') === 'true') continue;
    setFieldError(input, sentences[e.path] ?? e.message);
    first ??= input;
  }
  return first;
}

export const textOf = (form: HTMLFormElement, name: string): string => {
  const v = new FormData(form).get(name);
  return typeof v === 'string' ? v : '';
};

export const checked = (form: HTMLFormElement, name: string): boolean => {
  const input = form.elements.namedItem(name);
  return input instanceof HTMLInputElement && input.checked;
};

/** The checked `scope:action` boxes as the create body's `permissions` map. */
export function checkedPermissions(form: HTMLFormElement): Record<string, string[]> {
  // Without a prototype, so a scope named `constructor` is a scope like any other.
  const out: Record<string, string[]> = Object.create(null);
  for (const v of new FormData(form).getAll('permission')) {
    if (typeof v !== 'string') continue;
    const [scope, action] = v.split(':');
    if (scope && action) (out[scope] ??= []).push(action);
  }
  return out;
}
