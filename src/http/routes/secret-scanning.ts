import Router from '@koa/router';
import { z } from 'zod';
import type { SecretScanning } from '../../services/events/secret-scanning.ts';
import { AppError, notFound } from '../../errors.ts';
import { readBodyText, zodErrors } from '../body.ts';
import type { GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';

const MAX_TOKENS = 10_000;
export const scanningReport = z.array(z.object({
  token: z.string().max(1000), type: z.string().max(200), url: z.string().max(2048), source: z.string().max(200),
}).passthrough()).max(MAX_TOKENS);
const verdicts = z.array(z.object({ token_raw: z.string(), token_type: z.string(), label: z.enum(['true_positive', 'false_positive']) }));

export const secretScanningOperations = {
  github: {
    method: 'post', path: '/secret-scanning/github', tag: 'keys', security: 'public', body: scanningReport,
    summary: "GitHub secret scanning's report of keys found public: each live key named is revoked at once; signed by GitHub (ECDSA P-256)",
    ok: { status: 200, schema: verdicts }, problems: ['UNAUTHENTICATED', 'VALIDATION_FAILED', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
  },
} satisfies Record<string, Operation>;

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
    const raw = await readBodyText(ctx);
    if (!(await scanning.signedBy(raw, identifier, signature))) throw unsigned();
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
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
