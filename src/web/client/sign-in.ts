import { createApi, networkSentence, type Problem } from './api.ts';
import { byId, maybeById, readConfig, whileBusy } from './dom.ts';
import { clearErrors, showFieldErrors, textOf } from './forms.ts';
import { safeReturnPath } from '../return-path.ts';

const config = readConfig();
const api = createApi(config.apiPrefix);
// Back to an OAuth consent step or a console page when one sent the person here; any other `next`
// is ignored (src/web/return-path.ts), so the page cannot bounce someone to an attacker's address.
const destination = safeReturnPath(new URLSearchParams(location.search).get('next')) ?? '/settings/developers';

const fieldSentences: Record<string, string> = {
  email: 'Enter your e-mail address, such as ann@example.com.',
  password: 'Use a password of 8 to 128 characters.',
  name: 'Enter your name, up to 100 characters.',
};

function signInSentence(p: Problem): string {
  switch (p.code) {
    case 'INVALID_CREDENTIALS': return 'Wrong e-mail or password. Check both and try again.';
    case 'USER_BANNED': return 'This account has been suspended. Contact the people who run this server.';
    case 'NETWORK': return networkSentence;
    default: return p.detail || 'Signing in did not work. Try again in a moment.';
  }
}

function signUpSentence(p: Problem): string {
  switch (p.code) {
    case 'EMAIL_TAKEN': return 'An account with this e-mail already exists. Sign in with it instead, or use another e-mail.';
    case 'FORBIDDEN': return 'New accounts cannot be created here. Ask an administrator for one.';
    case 'NETWORK': return networkSentence;
    default: return p.detail || 'The account could not be created. Try again in a moment.';
  }
}

/** One form's submit: clear old errors, send, then go on or say in words what went wrong. */
function wire(formId: string, errorId: string, path: string, body: (form: HTMLFormElement) => Record<string, string>, sentence: (p: Problem) => string) {
  const form = maybeById(formId, HTMLFormElement);
  if (!form) return;
  const formError = byId(errorId, HTMLElement);
  const submit = form.querySelector('button[type="submit"]');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!(submit instanceof HTMLButtonElement)) return;
    void whileBusy(submit, async () => {
      clearErrors(form, formError);
      const res = await api.post(path, body(form));
      if (res.ok) return location.assign(destination);
      const p = res.problem;
      const firstInvalid = p.code === 'VALIDATION_FAILED' ? showFieldErrors(form, p.errors, fieldSentences) : null;
      if (firstInvalid) {
        firstInvalid.focus();
        return;
      }
      formError.textContent = sentence(p);
      if (p.code === 'EMAIL_TAKEN') {
        const email = form.elements.namedItem('email');
        if (email instanceof HTMLInputElement) email.setAttribute('aria-invalid', 'true');
      }
    });
  });
}

wire('sign-in-form', 'sign-in-error', '/auth/sign-in/email', (f) => ({ email: textOf(f, 'email'), password: textOf(f, 'password') }), signInSentence);
wire('sign-up-form', 'sign-up-error', '/auth/sign-up/email', (f) => ({ name: textOf(f, 'name'), email: textOf(f, 'email'), password: textOf(f, 'password') }), signUpSentence);
