import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// The session id a 2025-era MCP client gets from initialize and sends back on every later request.
// The fleet keeps no session: the id is a random part and a MAC over it and the caller it was
// issued to, so any instance can tell whether it is genuine and whose it is, and nothing is stored.
// It grants nothing on its own: every request still brings its credential, checked first.

/** Who a session id belongs to: `key:<id>` or `grant:<id>`, and the owner. */
export interface SessionHolder { kind: 'key' | 'grant'; id: string; userId: string }

export interface McpSessionIds {
  /** A new id for this holder: visible ASCII (base64url and a dot), no secret in it. */
  issue(holder: SessionHolder): Promise<string>;
  /** Whether `id` was issued by this fleet to this holder; false for anything else, malformed included. */
  holds(id: string, holder: SessionHolder): Promise<boolean>;
  /**
   * Takes the key ahead of the first request (at start) when the shared row already holds it; a
   * missing row (made with an RSA pair, which is slow) or a failed read is left to the first request.
   */
  load(): Promise<void>;
}

const RANDOM_BYTES = 18;
const SHAPE = /^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{43})$/;
// A label no cookie of the authorization flow could sign ("name=value" always has an "="), so the
// key derived from the shared cookie key signs nothing the cookie key itself signs, nor the reverse.
const LABEL = 'keygate/mcp-session-id/v1';

/**
 * `sharedKey` answers the secret every instance holds alike (the shared secrets' cookie key); the
 * MAC key is derived from it once and kept. A failed load (a database outage) is tried again on the
 * next request rather than remembered.
 */
export function createMcpSessionIds({ sharedKey, existingKey }: {
  sharedKey: () => Promise<string>;
  existingKey?: () => Promise<string | null>;
}): McpSessionIds {
  let key: Promise<Buffer> | null = null;
  const derive = (k: string) => createHmac('sha256', k).update(LABEL).digest();
  const macKey = (): Promise<Buffer> => {
    if (key) return key;
    const loading = sharedKey().then(derive);
    key = loading;
    loading.catch(() => {
      if (key === loading) key = null;
    });
    return loading;
  };
  const mac = async (random: string, holder: SessionHolder) =>
    createHmac('sha256', await macKey()).update(`${random}\n${holder.kind}:${holder.id}\n${holder.userId}`).digest();

  return {
    async load() {
      const k = await existingKey?.().catch(() => null);
      if (k && !key) key = Promise.resolve(derive(k));
    },
    async issue(holder) {
      const random = randomBytes(RANDOM_BYTES).toString('base64url');
      return `${random}.${(await mac(random, holder)).toString('base64url')}`;
    },
    async holds(id, holder) {
      const parts = SHAPE.exec(id);
      if (!parts) return false;
      // Compared as text: base64url has several spellings of the same last bits, and only the
      // one issued counts.
      const expected = Buffer.from((await mac(parts[1]!, holder)).toString('base64url'));
      return timingSafeEqual(Buffer.from(parts[2]!), expected);
    },
  };
}
