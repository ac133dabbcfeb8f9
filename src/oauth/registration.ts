// What an anonymous caller may store with one registration (CONTRACT 22), as rules on what it
// sent. The route (http/routes/oauth.ts) reads the body within the bound and turns a refusal into
// a problem that also carries RFC 7591's `error`.

export const MAX_REGISTRATION_BYTES = 8 * 1024;
export const MAX_CLIENT_NAME = 200;

/** Why the registration's text is refused, or null: what the library does not bound itself. */
export function metadataProblem(text: string): string | null {
  let metadata: unknown;
  try {
    metadata = JSON.parse(text);
  } catch {
    return 'The client metadata is not valid JSON.';
  }
  const name = metadata !== null && typeof metadata === 'object' ? (metadata as { client_name?: unknown }).client_name : undefined;
  if (typeof name === 'string' && [...name].length > MAX_CLIENT_NAME) return `client_name is longer than ${MAX_CLIENT_NAME} characters.`;
  return null;
}
