import { createApi, networkSentence, type Problem } from './api.ts';
import { byId, maybeById, readConfig, whileBusy } from './dom.ts';
import { clearErrors, showFieldErrors, textOf } from './forms.ts';
import { safeReturnPath } from '../return-path.ts';
import { fieldSentences, signInSentence, signUpSentence } from '../sign-in-words.ts';

const config = readConfig();
const api = createApi(config.apiPrefix);
// Back to an OAuth consent step or a console page when one sent the person here; any other `next`
// is ignored (src/web/return-path.ts), so the page cannot bounce someone to an attacker's address.
const destination = safeReturnPath(new URLSearchParams(location.search).get('next')) ?? '/settings/developers';

// The page's own sentences for a refusal, and the network's when no answer came.
const inWords = (sentence: (p: Problem) => string) => (p: Problem) => (p.code === 'NETWORK' ? networkSentence : sentence(p));

/** One form's submit: clear old errors, send, then go on or say in words what went wrong. */
function wire(
  formId: string, errorId: string, path: string, body: (form: HTMLFormElement) => Record<string, string>, sentence: (p: Problem) => string,
) {
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

const signInBody = (f: HTMLFormElement) => ({ email: textOf(f, 'email'), password: textOf(f, 'password') });
const signUpBody = (f: HTMLFormElement) => ({ name: textOf(f, 'name'), ...signInBody(f) });
wire('sign-in-form', 'sign-in-error', '/auth/sign-in/email', signInBody, inWords(signInSentence));
wire('sign-up-form', 'sign-up-error', '/auth/sign-up/email', signUpBody, inWords(signUpSentence));
