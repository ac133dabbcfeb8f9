import { readFile, writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, signUpAdmin, type Client } from '../../support/http.ts';
import { policyCopy } from '../policy/support.ts';

// Every admin route, API and console page, walked as each kind of caller. The routes are read from
// what the gateway's routers serve, so a new admin route is walked without anyone listing it. Twice:
// under the shipped policy, and under one with every admin line taken out and the admin paths
// opened to all; the routers' own rule must then refuse the same callers on its own.

const ID = '00000000-0000-4000-8000-000000000000';
const concrete = (path: string) => path.replace(/:v\b/g, '999999').replace(/:action\b/g, 'nothing').replace(/:\w+/g, ID);
const isAdminRoute = (path: string) => /^(\/api)?\/admin(\/|$)/.test(path);
const isPage = (path: string) => !path.startsWith('/api/');

/** The shipped policy with every line that keeps admin paths to admins removed, and those paths opened. */
async function openedPolicy() {
  const files = await policyCopy();
  const guards = /, (anon\.console-needs-session|key\.console|session\.admin-needs-role|key\.admin)$/;
  const lines = (await readFile(files.file, 'utf8')).split('\n').filter((l) => !guards.test(l.trim()))
    .map((l) => (l.includes('anon.needs-caller') ? l.replace(' except ', ' except /api/admin/** ') : l));
  lines.push('p, *, *, .*, /api/admin/**, allow, test.admin-api-open', 'p, *, *, .*, /admin/**, allow, test.console-open');
  await writeFile(files.file, lines.join('\n'));
  return { file: files.file, model: files.model };
}

interface Asker { name: string; admin: boolean; anonymous: boolean; headers: Record<string, string> }

const cookieOf = (c: Client) => [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

async function askers(gw: TestGateway): Promise<Asker[]> {
  const user = await signUp(gw.url);
  const admin = await signUpAdmin(gw, { name: 'Admin' });
  const keyOf = async (c: Client) => {
    const r = await c.post('/api/api-keys', { name: 'walker' });
    expect(r.status, r.text).to.equal(201);
    return (r.body as { key: string }).key;
  };
  return [
    { name: 'anonymous', admin: false, anonymous: true, headers: {} },
    { name: 'a signed-in user', admin: false, anonymous: false, headers: { cookie: cookieOf(user.client) } },
    { name: "a user's key", admin: false, anonymous: false, headers: { 'x-api-key': await keyOf(user.client) } },
    { name: "an admin's key", admin: false, anonymous: false, headers: { 'x-api-key': await keyOf(admin.client) } },
    { name: 'a signed-in admin', admin: true, anonymous: false, headers: { cookie: cookieOf(admin.client) } },
  ];
}

interface Outcome { route: string; asker: string; status: number; type: string; location: string }

async function walk(gw: TestGateway): Promise<{ routes: string[]; outcomes: Outcome[]; who: Asker[] }> {
  const who = await askers(gw);
  const routes = gw.routes.filter((r) => isAdminRoute(r.path))
    .flatMap((r) => r.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${r.path}`));
  const outcomes: Outcome[] = [];
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string];
    for (const a of who) {
      const page = isPage(path);
      const body = method === 'GET' ? undefined : page ? '' : '{}';
      const res = await fetch(gw.url + concrete(path), {
        method,
        redirect: 'manual',
        body,
        headers: {
          ...a.headers,
          accept: page ? 'text/html' : 'application/json',
          ...(body === undefined ? {} : { 'content-type': page ? 'application/x-www-form-urlencoded' : 'application/json' }),
        },
      });
      await res.arrayBuffer();
      const type = res.headers.get('content-type') ?? '';
      outcomes.push({ route, asker: a.name, status: res.status, type, location: res.headers.get('location') ?? '' });
    }
  }
  return { routes, outcomes, who };
}

function refusedAsItShould(o: Outcome, a: Asker): boolean {
  const page = isPage(o.route.split(' ')[1]!);
  if (!page) return (o.status === 401 || o.status === 403) && o.type.startsWith('application/problem+json');
  // A page refuses in words, or sends the anonymous visitor to sign in.
  if (a.anonymous && o.status === 302) return o.location.startsWith('/sign-in');
  return (o.status === 401 || o.status === 403) && o.type.startsWith('text/html');
}

function check({ routes, outcomes, who }: Awaited<ReturnType<typeof walk>>) {
  // Not vacuous: the API's, the console's and the webhooks' routers are all in the walk.
  for (const known of ['GET /api/admin/api-keys', 'POST /api/admin/policy/rollback', 'DELETE /api/admin/webhooks/:id',
    'GET /api/admin/api-keys/:id/usage', 'GET /admin', 'POST /admin/keys/:id/:action', 'POST /admin/webhooks/:id/:action']) {
    expect(routes).to.include(known);
  }
  const wrong = outcomes.filter((o) => {
    const a = who.find((w) => w.name === o.asker)!;
    // The admin is never refused by role (nor reaches a handler that finds no admin: a 500).
    return a.admin ? o.status === 401 || o.status === 403 || o.status >= 500 : !refusedAsItShould(o, a);
  });
  expect(wrong.map((o) => `${o.route} as ${o.asker}: ${o.status} ${o.type} ${o.location}`)).to.deep.equal([]);
}

describe('every admin route is for signed-in admins only', () => {
  describe('under the shipped policy', () => {
    let gw: TestGateway;
    useGateway({}, (g) => (gw = g));

    it('refuses anonymous visitors, plain users and keys (an admin\'s too) on every admin route, and never refuses the admin', async () => {
      check(await walk(gw));
    });
  });

  describe('under a policy without its admin lines, the admin paths open to all', () => {
    let gw: TestGateway;
    let policy: { file: string; model: string };
    before(async () => (policy = await openedPolicy()));
    useGateway({ config: { get policy() { return policy; } } }, (g) => (gw = g));

    it('the routers\' own rule still refuses them, with the same answers', async () => {
      const walked = await walk(gw);
      // The policy really is open here: a plain user's request reached the rule, not a policy line.
      const decided = await fetch(`${gw.url}/api/admin/overview`, { headers: { cookie: walked.who[1]!.headers.cookie! } });
      expect(decided.status).to.equal(403);
      expect(await decided.text()).to.include('The operator console is for admins');
      check(walked);
    });
  });
});
