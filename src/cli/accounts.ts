import type { Config } from '../config.ts';
import type { Pool } from '../store/db.ts';
import * as users from '../store/users.ts';
import * as orgs from '../store/organizations.ts';
import { hashPassword } from '../services/secrets.ts';
import { createAccountService } from '../services/accounts.ts';
import { systemClock } from '../services/clock.ts';
import { signal } from '../store/notify.ts';
import { flags, required, UsageError } from './main.ts';

interface Io { stdout(s: string): void; stderr(s: string): void }

function knownPlan(config: Config, plan: string): string {
  if (!(plan in config.plans)) throw new UsageError(`plan "${plan}" is not defined in the configuration (plans: ${Object.keys(config.plans).join(', ')})`);
  return plan;
}

export async function runUserCommand(pool: Pool, config: Config, args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  const f = flags(rest);
  const email = required(f, 'email');
  const missing = () => {
    throw new UsageError(`no user with e-mail ${email}`);
  };
  switch (sub) {
    case 'create': {
      const password = required(f, 'password');
      if (password.length < 8 || password.length > 128) throw new UsageError('--password must be 8 to 128 characters');
      const plan = f.has('plan') ? knownPlan(config, required(f, 'plan')) : null;
      const name = typeof f.get('name') === 'string' ? (f.get('name') as string) : email.split('@')[0]!;
      const row = await users.insertUser(pool, { email, name, passwordHash: await hashPassword(password), role: f.get('admin') === true ? 'admin' : 'user', plan });
      if (!row) throw new UsageError(`a user with e-mail ${email} already exists`);
      io.stdout(`created ${row.role} ${row.email} (${row.id})`);
      return 0;
    }
    case 'set-role': {
      const role = required(f, 'role');
      if (role !== 'admin' && role !== 'user') throw new UsageError('--role must be admin or user');
      const row = (await users.setUserRole(pool, email, role)) ?? missing();
      // Running gateways drop what they cached of this user's keys, role included.
      await signal(pool, { type: 'user', id: row.id });
      io.stdout(`${email} is now ${role}`);
      return 0;
    }
    case 'set-plan': {
      (await users.setUserPlan(pool, email, knownPlan(config, required(f, 'plan')))) ?? missing();
      io.stdout(`${email} is now on plan ${f.get('plan')}; keys created from now on get its quota`);
      return 0;
    }
    case 'ban':
    case 'unban': {
      const row = (await users.findUserByEmail(pool, email)) ?? missing();
      // Through the service, so running gateways hear of it and stop (or restart) the keys at once.
      await createAccountService({ pool, clock: systemClock, sessionTtlDays: config.auth.sessionTtlDays }).setBanned(row.id, sub === 'ban');
      io.stdout(`${email} ${sub === 'ban' ? 'banned' : 'unbanned'}`);
      return 0;
    }
    default:
      throw new UsageError('usage: keygate user create|set-role|set-plan|ban|unban --email E ...');
  }
}

export async function runOrgCommand(pool: Pool, config: Config, args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'set-plan') throw new UsageError('usage: keygate org set-plan --slug S --plan P');
  const f = flags(rest);
  const slug = required(f, 'slug');
  const org = await orgs.setOrganizationPlan(pool, slug, knownPlan(config, required(f, 'plan')));
  if (!org) throw new UsageError(`no organization with slug ${slug}`);
  io.stdout(`${slug} is now on plan ${org.plan}`);
  return 0;
}
