// `keygate webhook …`: the operator's webhook endpoints, through the same service as the admin
// API, audited with the command line as actor.
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { EVENT_TYPES, type EventType } from '../services/events/types.ts';
import type { WebhookService } from '../services/events/webhooks.ts';
import { parseFlags, required, UsageError } from './args.ts';
import { listOf, type Usage } from './help.ts';

interface Io { stdout(s: string): void; stderr(s: string): void }
interface Ctx { webhooks: WebhookService; config: Config; io: Io }
interface Subcommand extends Usage { run(args: string[], ctx: Ctx): Promise<number> }

const CLI_META = { ip: null, userAgent: null };

function eventsOf(text: string | undefined): EventType[] | undefined {
  if (text === undefined) return undefined;
  const list = text.split(',').map((t) => t.trim()).filter(Boolean);
  const unknown = list.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0 || list.length === 0) {
    throw new UsageError(`--events: not event types: ${unknown.join(', ') || '(none)'} (types: ${EVENT_TYPES.join(', ')})`);
  }
  return list as EventType[];
}

/** Refusals of the service (a bad URL, an unknown id) become the command line's usage errors. */
async function said<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    const refused: string[] = ['VALIDATION_FAILED', 'NOT_FOUND', 'SECRET_ROTATION_PENDING'];
    if (e instanceof AppError && refused.includes(e.code)) throw new UsageError(e.detail);
    throw e;
  }
}

const out = (io: Io, json: boolean | undefined, value: unknown, text: string) => io.stdout(json ? JSON.stringify(value, null, 2) : text);

export const webhookCommands: Record<string, Subcommand> = {
  add: {
    usage: 'keygate webhook add --url URL [--events TYPE,TYPE] [--description D] [--json]',
    about: 'Register an endpoint; prints its signing secret, shown this once.',
    examples: [
      'npx keygate webhook add --url https://hooks.example.com/keygate',
      'npx keygate webhook add --url https://hooks.example.com/keys --events key.created,key.revoked --json',
    ],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, {
        url: { type: 'string' }, events: { type: 'string' }, description: { type: 'string' }, json: { type: 'boolean' },
      });
      const endpoint = { url: required(f, 'url'), events: eventsOf(f.events), description: f.description };
      const created = await said(() => webhooks.create('cli', endpoint, CLI_META));
      out(io, f.json, created, `added ${created.id} ${created.url}\nsecret (shown once): ${created.secret}`);
      return 0;
    },
  },
  list: {
    usage: 'keygate webhook list [--json]',
    about: 'Every endpoint, its event types and whether it is enabled.',
    examples: ['npx keygate webhook list', 'npx keygate webhook list --json'],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, { json: { type: 'boolean' } });
      const list = await webhooks.list();
      const state = (w: (typeof list)[number]) => (w.enabled ? 'enabled ' : `disabled${w.disabledReason ? ` (${w.disabledReason})` : ''}`);
      const lines = list.map((w) => `${w.id}  ${state(w)}  ${w.url}  ${w.events?.join(',') ?? 'all events'}`);
      out(io, f.json, { webhooks: list }, lines.join('\n') || 'no endpoints');
      return 0;
    },
  },
  remove: {
    usage: 'keygate webhook remove --id ID',
    about: 'Delete an endpoint and its delivery log.',
    examples: ['npx keygate webhook remove --id <id>'],
    async run(args, { webhooks, io }) {
      const id = required(parseFlags(args, { id: { type: 'string' } }), 'id');
      await said(() => webhooks.remove('cli', id, CLI_META));
      io.stdout(`removed ${id}`);
      return 0;
    },
  },
  rotate: {
    usage: 'keygate webhook rotate --id ID [--json]',
    about: 'A new signing secret; the old one keeps signing beside it for 24 h, and until then it cannot be rotated again.',
    examples: ['npx keygate webhook rotate --id <id>'],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, { id: { type: 'string' }, json: { type: 'boolean' } });
      const r = await said(() => webhooks.rotateSecret('cli', required(f, 'id'), CLI_META));
      out(io, f.json, r, `new secret (shown once): ${r.secret}\nthe old secret signs too until ${r.previousSecretExpiresAt}`);
      return 0;
    },
  },
  test: {
    usage: 'keygate webhook test --id ID [--json]',
    about: 'Send a webhook.test event to the endpoint (a running gateway delivers it).',
    examples: ['npx keygate webhook test --id <id>'],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, { id: { type: 'string' }, json: { type: 'boolean' } });
      const r = await said(() => webhooks.test('cli', required(f, 'id')));
      out(io, f.json, r, `queued ${r.eventId}`);
      return 0;
    },
  },
  deliveries: {
    usage: 'keygate webhook deliveries --id ID [--limit N] [--json]',
    about: 'Recent deliveries, newest first, with every attempt.',
    examples: ['npx keygate webhook deliveries --id <id> --limit 5'],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, { id: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
      const limit = f.limit === undefined ? 20 : Number(f.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError('--limit: a whole number from 1 to 100');
      const r = await said(() => webhooks.deliveries(required(f, 'id'), limit));
      const attempts = (d: (typeof r.deliveries)[number]) => d.attempts.map((a) => a.status ?? a.error).join(', ') || 'no attempt yet';
      const lines = r.deliveries.map((d) => `${d.eventId}  ${d.type}  ${d.state}  ${attempts(d)}`);
      out(io, f.json, r, lines.join('\n') || 'no deliveries');
      return 0;
    },
  },
  redeliver: {
    usage: 'keygate webhook redeliver --id ID --event EVENT_ID',
    about: 'Send a delivery again, its retry schedule started over.',
    examples: ['npx keygate webhook redeliver --id <id> --event <event-id>'],
    async run(args, { webhooks, io }) {
      const f = parseFlags(args, { id: { type: 'string' }, event: { type: 'string' } });
      const event = required(f, 'event');
      await said(() => webhooks.redeliver(required(f, 'id'), event));
      io.stdout(`queued ${event} again`);
      return 0;
    },
  },
};


export async function runWebhookCommand(webhooks: WebhookService, config: Config, args: string[], io: Io): Promise<number> {
  const [sub = '', ...rest] = args;
  const command = Object.hasOwn(webhookCommands, sub) ? webhookCommands[sub] : undefined;
  if (!command) throw new UsageError(`${sub ? `unknown subcommand "${sub}"\n` : ''}usage:\n${listOf(webhookCommands)}`);
  return command.run(rest, { webhooks, config, io });
}
