import type { Config } from '../config.ts';
import type { AccountService } from '../services/accounts.ts';
import { AppError } from '../errors.ts';
import { parseFlags, required, UsageError } from './args.ts';

interface Io { stdout(s: string): void; stderr(s: string): void }

function knownPlan(config: Config, plan: string): string {
  if (!(plan in config.plans)) throw new UsageError(`plan "${plan}" is not defined in the configuration (plans: ${Object.keys(config.plans).join(', ')})`);
  return plan;
}

const USER_FLAGS = {
  email: { type: 'string' },
  password: { type: 'string' },
  name: { type: 'string' },
  admin: { type: 'boolean' },
  plan: { type: 'string' },
  role: { type: 'string' },
} as const;

export async function runUserCommand(accounts: AccountService, config: Config, args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  const f = parseFlags(rest, USER_FLAGS);
  const email = required(f, 'email');
  const missing = () => {
    throw new UsageError(`no user with e-mail ${email}`);
  };
  switch (sub) {
    case 'create': {
      const password = required(f, 'password');
      const plan = f.plan !== undefined ? knownPlan(config, required(f, 'plan')) : null;
      try {
        const user = await accounts.createUser({ email, password, name: f.name || email.split('@')[0]!, role: f.admin ? 'admin' : 'user', plan });
        io.stdout(`created ${user.role} ${user.email} (${user.id})`);
      } catch (e) {
        if (e instanceof AppError && e.code === 'EMAIL_TAKEN') throw new UsageError(`a user with e-mail ${email} already exists`);
        if (e instanceof AppError && e.code === 'VALIDATION_FAILED') throw new UsageError(`--password: ${e.detail}`);
        throw e;
      }
      return 0;
    }
    case 'set-role': {
      const role = required(f, 'role');
      if (role !== 'admin' && role !== 'user') throw new UsageError('--role must be admin or user');
      (await accounts.setRole(email, role)) ?? missing();
      io.stdout(`${email} is now ${role}`);
      return 0;
    }
    case 'set-plan': {
      const plan = knownPlan(config, required(f, 'plan'));
      (await accounts.setPlan(email, plan)) ?? missing();
      io.stdout(`${email} is now on plan ${plan}; keys created from now on get its quota`);
      return 0;
    }
    case 'ban':
    case 'unban': {
      const user = (await accounts.findUserByEmail(email)) ?? missing();
      // The same path as the admin route, so running gateways stop (or restart) the keys at once.
      await accounts.setBanned(user.id, sub === 'ban');
      io.stdout(`${email} ${sub === 'ban' ? 'banned' : 'unbanned'}`);
      return 0;
    }
    default:
      throw new UsageError('usage: keygate user create|set-role|set-plan|ban|unban --email E ...');
  }
}

export async function runOrgCommand(accounts: AccountService, config: Config, args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'set-plan') throw new UsageError('usage: keygate org set-plan --slug S --plan P');
  const f = parseFlags(rest, { slug: { type: 'string' }, plan: { type: 'string' } });
  const slug = required(f, 'slug');
  const org = await accounts.setOrganizationPlan(slug, knownPlan(config, required(f, 'plan')));
  if (!org) throw new UsageError(`no organization with slug ${slug}`);
  io.stdout(`${slug} is now on plan ${org.plan}`);
  return 0;
}
