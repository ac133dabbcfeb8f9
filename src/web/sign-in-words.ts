// What a refused sign-in or sign-up means, in words: the same sentences whether the page's script
// shows them or the server draws the page again after a form POST without script.

export interface Refusal { code: string; detail: string }

export const fieldSentences: Record<string, string> = {
  email: 'Enter your e-mail address, such as ann@example.com.',
  password: 'Use a password of 8 to 128 characters.',
  name: 'Enter your name, up to 100 characters.',
};

export function signInSentence(p: Refusal): string {
  switch (p.code) {
    case 'INVALID_CREDENTIALS': return 'Wrong e-mail or password. Check both and try again.';
    case 'USER_BANNED': return 'This account has been suspended. Contact the people who run this server.';
    default: return p.detail || 'Signing in did not work. Try again in a moment.';
  }
}

export function signUpSentence(p: Refusal): string {
  switch (p.code) {
    case 'EMAIL_TAKEN': return 'An account with this e-mail already exists. Sign in with it instead, or use another e-mail.';
    case 'FORBIDDEN': return 'New accounts cannot be created here. Ask an administrator for one.';
    default: return p.detail || 'The account could not be created. Try again in a moment.';
  }
}
