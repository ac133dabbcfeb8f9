import Router from '@koa/router';
import { z } from 'zod';
import type { SecretScanning } from '../../services/events/secret-scanning.ts';
import { AppError, notFound } from '../../errors.ts';
import { readBodyBytes, zodErrors } from '../body.ts';
import type { GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';

const LIMITS = { token: 1000, type: 200, url: 2048, source: 200 } as const;
/**
 * The most tokens one report may name: 1,000 are answered within 10 s. GitHub sends a few
 * per report, each a few hundred bytes, so 1,000 fit in the 1 MiB body limit with room to spare; a
 * body past that limit is refused for its size (413) before anything is parsed.
 */
export const MAX_REPORT_TOKENS = 1000;
export const scanningReport = z.array(z.object({
  token: z.string().max(LIMITS.token), type: z.string().max(LIMITS.type), url: z.string().max(LIMITS.url),
  source: z.string().max(LIMITS.source),
}).passthrough()).max(MAX_REPORT_TOKENS);
const verdicts = z.array(z.object({ token_raw: z.string(), token_type: z.string(), label: z.enum(['true_positive', 'false_positive']) }));

export const secretScanningOperations = {
  github: {
    method: 'post', path: '/secret-scanning/github', tag: 'keys', security: 'public', body: scanningReport,
    summary: "GitHub secret scanning's report of keys found public: each live key named is revoked at once; signed by GitHub (ECDSA P-256)",
    ok: { status: 200, schema: verdicts }, problems: ['UNAUTHENTICATED', 'VALIDATION_FAILED', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
  },
} satisfies Record<string, Operation>;

/** Refuses bytes that are not UTF-8 instead of turning them into U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

const unsigned = () => new AppError('UNAUTHENTICATED', 'The report is not signed by a key GitHub publishes.');

/** Answers as an unknown route unless secretScanning.github.enabled (`scanning` is then null). */
export function secretScanningRoutes({ scanning }: { scanning: SecretScanning | null }): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  serve(router, secretScanningOperations.github, async (ctx) => {
    if (!scanning) throw notFound('route');
    const identifier = ctx.get('github-public-key-identifier');
    const signature = ctx.get('github-public-key-signature');
    // Nothing of an unsigned report is parsed or looked up.
    if (!identifier || !signature) throw unsigned();
    // A key GitHub does not publish signs nothing: refused before the body is read.
    const key = await scanning.signer(identifier);
    if (!key) throw unsigned();
    // The signature is over the bytes GitHub sent; they are read as text only once it holds.
    const raw = await readBodyBytes(ctx);
    if (!scanning.signedBy(raw, key, signature)) throw unsigned();
    let json: unknown;
    try {
      json = JSON.parse(utf8.decode(raw));
    } catch (e) {
      if (e instanceof TypeError) throw new AppError('VALIDATION_FAILED', 'The report is not UTF-8.');
      throw new AppError('VALIDATION_FAILED', 'The report is not JSON.');
    }
    const parsed = scanningReport.safeParse(json);
    if (!parsed.success) {
      const errors = zodErrors(parsed.error);
      throw new AppError('VALIDATION_FAILED', 'The report is not a list of {token, type, url, source}.', { errors });
    }
    ctx.body = await scanning.judge(parsed.data);
  });
  return router;
}
