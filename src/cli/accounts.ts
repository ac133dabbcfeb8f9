// `keygate user …` and `keygate org …`: the operator's account commands, one table each, so the
// usage `--help` prints and the dispatch cannot drift apart.
import type { Config } from '../config.ts';
import type { AccountService } from '../services/accounts.ts';
import { AppError } from '../errors.ts';
import { parseFlags, required, UsageError } from './args.ts';
import { listOf, type Usage } from './help.ts';
import { passwordRule } from '../services/accounts.ts';

interface Io { stdout(s: string): void; stderr(s: string): void }

interface Ctx { accounts: AccountService; config: Config; io: Io }

interface Subcommand extends Usage {
  run(args: string[], ctx: Ctx): Promise<number>;
}

function knownPlan(config: Config, plan: string): string {
  if (!(plan in config.plans)) {
    throw new UsageError(`plan "${plan}" is not defined in the configuration (plans: ${Object.keys(config.plans).join(', ')})`);
  }
  return plan;
}

const noUser = (email: string): never => {
  throw new UsageError(`no user with e-mail ${email}`);
};

const banCommand = (ban: boolean): Subcommand => ({
  usage: `keygate user ${ban ? 'ban' : 'unban'} --email E`,
  about: ban
    ? 'Bans the user: their sessions end and their keys stop answering on every running gateway at once.'
    : 'Lifts a ban: the user can sign in again and their keys answer again.',
  examples: [`npx keygate user ${ban ? 'ban' : 'unban'} --email ada@example.com`],
  async run(args, { accounts, io }) {
    const email = required(parseFlags(args, { email: { type: 'string' } }), 'email');
    (await accounts.findUserByEmail(email)) ?? noUser(email);
    // The same path as the admin route, so running gateways stop (or restart) the keys at once.
    await accounts.setBanned({ email }, ban, 'cli');
    io.stdout(`${email} ${ban ? 'banned' : 'unbanned'}`);
    return 0;
  },
});

export const userCommands: Record<string, Subcommand> = {
  create: {
    usage: 'keygate user create --email E --password P [--name N] [--admin] [--plan P]',
    about: 'Creates an account that can sign in at once (the first admin, for one); the password takes 8 to 128 characters.',
    examples: ["npx keygate user create --email ada@example.com --password 'correct horse battery' --admin"],
    async run(args, { accounts, config, io }) {
      const f = parseFlags(args, {
        email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' },
        admin: { type: 'boolean' }, plan: { type: 'string' },
      });
      const email = required(f, 'email');
      const password = required(f, 'password');
      const checked = passwordRule.safeParse(password);
      if (!checked.success) throw new UsageError(`--password ${passwordProblem(checked.error.issues[0])}`);
      const plan = f.plan !== undefined ? knownPlan(config, required(f, 'plan')) : null;
      try {
        const name = f.name || email.split('@')[0]!;
        const user = await accounts.createUser({ email, password, name, role: f.admin ? 'admin' : 'user', plan });
        io.stdout(`created ${user.role} ${user.email} (${user.id})`);
      } catch (e) {
        if (e instanceof AppError && e.code === 'EMAIL_TAKEN') throw new UsageError(`a user with e-mail ${email} already exists`);
        throw e;
      }
      return 0;
    },
  },
  list: {
    usage: 'keygate user list [--q PREFIX] [--json]',
    about: 'Lists every user, oldest first, or those whose e-mail or name starts with PREFIX.',
    examples: ['npx keygate user list --q ada', 'npx keygate user list --json'],
    async run(args, { accounts, io }) {
      const f = parseFlags(args, { q: { type: 'string' }, json: { type: 'boolean' } });
      const rows = await accounts.listUsers(f.q ?? null);
      const users = rows.map((u) => ({
        id: u.id, email: u.email, name: u.name, role: u.role, plan: u.plan, banned: u.banned, created: u.createdAt.toISOString(),
      }));
      if (f.json) {
        io.stdout(JSON.stringify({ users }));
        return 0;
      }
      for (const u of users) {
        io.stdout([u.id, u.email, u.role, u.plan ?? '-', u.banned ? 'banned' : 'active', u.created, JSON.stringify(u.name)].join('  '));
      }
      io.stdout(`${users.length} user${users.length === 1 ? '' : 's'}${f.q !== undefined ? ` starting with ${JSON.stringify(f.q)}` : ''}`);
      return 0;
    },
  },
  'set-role': {
    usage: 'keygate user set-role --email E --role admin|user',
    about: 'Makes the user an admin (the console and the admin API) or takes that away.',
    examples: ['npx keygate user set-role --email ada@example.com --role admin'],
    async run(args, { accounts, io }) {
      const f = parseFlags(args, { email: { type: 'string' }, role: { type: 'string' } });
      const email = required(f, 'email');
      const role = required(f, 'role');
      if (role !== 'admin' && role !== 'user') throw new UsageError('--role must be admin or user');
      (await accounts.setRole({ email }, role, 'cli')) ?? noUser(email);
      io.stdout(`${email} is now ${role}`);
      return 0;
    },
  },
  'set-plan': {
    usage: 'keygate user set-plan --email E --plan P',
    about: 'Moves the user to a plan named in the configuration; keys created from then on get its quota.',
    examples: ['npx keygate user set-plan --email ada@example.com --plan pro'],
    async run(args, { accounts, config, io }) {
      const f = parseFlags(args, { email: { type: 'string' }, plan: { type: 'string' } });
      const email = required(f, 'email');
      const plan = knownPlan(config, required(f, 'plan'));
      (await accounts.setPlan({ email }, plan, 'cli')) ?? noUser(email);
      io.stdout(`${email} is now on plan ${plan}; keys created from now on get its quota`);
      return 0;
    },
  },
  ban: banCommand(true),
  unban: banCommand(false),
};

export const orgCommands: Record<string, Subcommand> = {
  'set-plan': {
    usage: 'keygate org set-plan --slug S --plan P',
    about: "Moves an organization to a plan named in the configuration; its members' keys created from then on get its quota.",
    examples: ['npx keygate org set-plan --slug acme --plan pro'],
    async run(args, { accounts, config, io }) {
      const f = parseFlags(args, { slug: { type: 'string' }, plan: { type: 'string' } });
      const slug = required(f, 'slug');
      const org = await accounts.setOrganizationPlan(slug, knownPlan(config, required(f, 'plan')));
      if (!org) throw new UsageError(`no organization with slug ${slug}`);
      io.stdout(`${slug} is now on plan ${org.plan}`);
      return 0;
    },
  },
};

/** Every usage of a table, one per line, as `keygate user --help` prints them. */
export const usageOf = (table: Record<string, Usage>): string => `usage:\n${listOf(table)}`;

/** zod's wording ("Too small: expected string to have >=8 characters") said as the flag's rule. */
function passwordProblem(issue: { code: string; minimum?: unknown; maximum?: unknown; message: string } | undefined): string {
  if (issue?.code === 'too_small') return `must be at least ${String(issue.minimum)} characters`;
  if (issue?.code === 'too_big') return `must be at most ${String(issue.maximum)} characters`;
  return issue?.message ?? 'is not allowed';
}

async function dispatch(table: Record<string, Subcommand>, args: string[], ctx: Ctx): Promise<number> {
  const [sub = '', ...rest] = args;
  const command = Object.hasOwn(table, sub) ? table[sub] : undefined;
  if (!command) throw new UsageError(`${sub ? `unknown subcommand "${sub}"\n` : ''}${usageOf(table)}`);
  return command.run(rest, ctx);
}

export const runUserCommand = (accounts: AccountService, config: Config, args: string[], io: Io): Promise<number> =>
  dispatch(userCommands, args, { accounts, config, io });
export const runOrgCommand = (accounts: AccountService, config: Config, args: string[], io: Io): Promise<number> =>
  dispatch(orgCommands, args, { accounts, config, io });
