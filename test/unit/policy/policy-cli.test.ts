import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, withPolicyCopy } from './helpers.ts';

describe('keygate policy explain', () => {
  describe('when an unscoped key asks for GET /api/ai/threads', () => {
    it('then it prints the refusal, the deciding line and the permission that would allow it', async () => {
      const r = await runCli(['explain', '--subject', 'key', '--method', 'GET', '--path', '/api/ai/threads', '--variant', 'A']);
      expect(r.code).to.equal(0);
      expect(r.out).to.include('decision: deny\n');
      expect(r.out).to.match(/^decided by: policies\/variant-a\.csv:\d+  p, key, !perm:ai, \.\*, \/api\/ai\/\*\* except \/api\/ai\/automations\/\*\*, deny, key\.ai-needs-ai$/m);
      expect(r.out).to.include('a key with the "ai" permission would be allowed');
    });
  });

  describe('when the path carries a suffix or capitals the gateway reads past', () => {
    it('then it names the line the gateway decides by, on the path it decides', async () => {
      const r = await runCli(['explain', '--subject', 'key', '--method', 'GET', '--path', '/api/billing/subscription/Pending.JSON', '--variant', 'A']);
      expect(r.out).to.include('decision: deny\ndecided as: /api/billing/subscription/pending\n');
      expect(r.out).to.match(/^decided by: policies\/variant-a\.csv:\d+  p, key, \*, \.\*, \/api\/billing\/subscription\/pending, deny, key\.billing-pending$/m);
      const json = JSON.parse((await runCli(['explain', '--subject', 'session', '--method', 'DELETE', '--path', '/API/Admin/Users', '--variant', 'A', '--json'])).out);
      expect(json.decidedBy.id).to.equal('session.admin-needs-role');
    });
  });

  describe('when no permission would allow the key', () => {
    it('then it says only a signed-in session can', async () => {
      const r = await runCli(['explain', '--subject', 'key', '--permissions', 'ai,mcp', '--method', 'PUT', '--path', '/api/ai/settings', '--variant', 'A']);
      expect(r.out).to.include('no permission would allow a key here; only a signed-in session can');
    });
  });

  describe('when the flags are wrong', () => {
    it('then it exits 1 with a one-line reason', async () => {
      const r = await runCli(['explain', '--subject', 'robot', '--method', 'GET', '--path', '/api/x', '--variant', 'A']);
      expect(r.code).to.equal(1);
      expect(r.err).to.equal('keygate: --subject must be session, key or anonymous\n');
      expect((await runCli(['explain', '--colour', 'red'])).err).to.match(/Unknown option '--colour'/);
    });
  });
});

describe('keygate policy lint', () => {
  describe('when the shipped policies are linted', () => {
    it('then there are no findings', async () => {
      const r = await runCli(['lint']);
      expect(r.out).to.equal('0 findings in 2 files\n');
      expect(r.code).to.equal(0);
    });
  });

  describe('when a policy has a duplicate line, a malformed line and an unreachable allow', () => {
    it('then each is reported with its file and line number', async () => {
      await withPolicyCopy(async (dir) => {
        const csv = [
          '# a broken policy',
          'p, key, *, .*, /api/**, allow, key.api',
          'p, key, *, .*, /api/billing/**, deny, key.billing',
          'p, key, *, .*, /api/**, allow, key.api-again',
          'p, key, *, GET, /api/x, allow, key.unanchored',
          'p, key, *, ^POST$, /api/billing/checkout, allow, key.checkout',
          'p, key, perm:billing, .*, /api/y, allow, key.billing-scope',
          'p, key, *, ^GET$, /signup, allow, key.signup',
        ].join('\n');
        await writeFile(join(dir, 'policies/broken.csv'), csv);
        const r = await runCli(['lint', 'policies/broken.csv'], dir);
        expect(r.code).to.equal(1);
        expect(r.out).to.include('policies/broken.csv:4: key.api-again: duplicate of line 2');
        expect(r.out).to.include('policies/broken.csv:5: method: a method pattern must be .* or anchored with ^ and $');
        expect(r.out).to.include('policies/broken.csv:6: key.checkout: allow can never take effect; every request it matches is denied by line 3 (key.billing)');
        expect(r.out).to.include('policies/broken.csv:7: key.billing-scope: unknown perm:billing');
        expect(r.out).to.include('policies/broken.csv:8: key.signup: path /signup matches no route the gateway serves');
        expect(r.out).to.match(/^policies\/broken\.csv: route GET \/healthz is decided by no policy line for session, key, anonymous/m);
      });
    });
  });
});

describe('keygate policy lint: a path pattern that is not linear-time', () => {
  it('is an error naming the line and why (one 30-character path once blocked the event loop for seconds)', async () => {
    await withPolicyCopy(async (dir) => {
      const csv = join(dir, 'policies/variant-a.csv');
      await writeFile(csv, `${await readFile(csv, 'utf8')}p, key, *, .*, ^/api/reports/(a+)+b$, deny, key.reports-slow\n`);
      const r = await runCli(['lint', 'policies/variant-a.csv'], dir);
      expect(r.code).to.equal(1);
      expect(r.out).to.match(/^policies\/variant-a\.csv:\d+: path: not linear-time: nested quantifiers \(\(a\+\)\+\)/m);
    });
  });
});

describe('keygate policy lint: a declared scope action that opens nothing', () => {
  const withBilling = async (dir: string, lines: string[]) => {
    const scopes = join(dir, 'policies/scopes.yaml');
    await writeFile(scopes, `${await readFile(scopes, 'utf8')}  billing:\n    label: Billing\n    actions: [read, write]\n`);
    const csv = join(dir, 'policies/variant-a.csv');
    await writeFile(csv, `${await readFile(csv, 'utf8')}${lines.join('\n')}\n`);
    return runCli(['lint', 'policies/variant-a.csv'], dir);
  };

  it('is an error naming the line that asks for it and the line that refuses it anyway (the shipped billing writes line)', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await withBilling(dir, [
        'p, key, !perm:billing:read, ^(GET|HEAD)$, /api/billing/**, deny, key.billing-needs-read',
        'p, key, !perm:billing:write, ^(POST|PUT|PATCH|DELETE)$, /api/billing/**, deny, key.billing-needs-write',
      ]);
      expect(r.code).to.equal(1);
      expect(r.out).to.match(/^policies\/variant-a\.csv:(\d+): billing:write opens nothing: every request line \1 \(key\.billing-needs-write\) asks it for is refused to keys holding it by line \d+ \(key\.billing-writes\)$/m);
      // billing:read opens the reads: no finding for it.
      expect(r.out).not.to.match(/billing:read opens nothing/);
      expect(r.out).to.match(/^1 finding in 1 file$/m);
    });
  });

  it('is no error once the action asks for routes a key can reach', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await withBilling(dir, [
        'p, key, !perm:billing:read, ^(GET|HEAD)$, /api/billing/**, deny, key.billing-needs-read',
        'p, key, !perm:billing:write, ^(GET|HEAD)$, /api/billing/invoices/**, deny, key.billing-invoices',
      ]);
      expect(r.out).to.equal('0 findings in 1 file\n');
      expect(r.code).to.equal(0);
    });
  });
});

describe('keygate policy diff', () => {
  describe('when Variant A is compared with Variant B', () => {
    it('then it lists the billing writes and AI routes that B opens to keys', async () => {
      const r = await runCli(['diff', 'policies/variant-a.csv', 'policies/variant-b.csv']);
      expect(r.code).to.equal(0);
      const allKeys = 'key, key[ai], key[mcp], key[ai,mcp]';
      expect(r.out).to.include(`POST /api/billing/checkout  ${allKeys}: deny (key.billing-writes) -> allow (key.api)`);
      expect(r.out).to.include(`PUT /api/billing/auto-topup  ${allKeys}: deny (key.billing-writes) -> allow (key.api)`);
      expect(r.out).to.include(`GET /api/billing/subscription/switch-preview  ${allKeys}: deny (key.billing-switch-preview) -> allow (key.api)`);
      expect(r.out).to.include('POST /api/ai/chat  key, key[mcp]: deny (key.ai-needs-ai) -> allow (key.api)');
      expect(r.out).to.include(`PATCH /api/ai/threads/t-1  ${allKeys}: deny (key.ai-threads-writes) -> allow (key.api)`);
      expect(r.out).to.include(`PUT /api/ai/settings  ${allKeys}: deny (key.ai-settings-writes) -> allow (key.api)`);
      expect(r.out).to.include('POST /api/mcp  key[mcp], key[ai,mcp]: allow (key.api) -> deny (key.mcp-off)');
      expect(r.out).to.include('POST /api/auth/api-key/create  session, session[admin]: deny (auth.api-key-create-off) -> allow (session.api)');
      expect(r.out).to.include('- policies/variant-a.csv:');
      expect(r.out).to.include('+ policies/variant-b.csv:');
      // Nothing changes for anonymous callers, and the public routes stay as they are.
      expect(r.out).not.to.match(/ anonymous[,:]/);
      expect(r.out).not.to.match(/^ {2}GET \/healthz /m);
    });
  });

  describe('when a policy is compared with itself', () => {
    it('then nothing changes', async () => {
      const r = await runCli(['diff', 'policies/variant-b.csv', 'policies/variant-b.csv']);
      expect(r.out).to.match(/^0 decisions change over \d+ requests x 7 subjects$/m);
    });
  });
});

describe('keygate policy', () => {
  it('answers an unknown subcommand with the usage and exit code 1', async () => {
    const r = await runCli(['apply-everything']);
    expect(r.code).to.equal(1);
    expect(r.err).to.include('unknown policy command "apply-everything"');
    expect(r.err).to.include('keygate policy test');
  });
});
