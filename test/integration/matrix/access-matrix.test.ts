import { expect } from 'chai';
import { expectOAuth401, LOCAL_BASE } from '../../support/oauth.ts';
import { CALLERS, describeCaller, expectForwarded, expectNotForwarded, expectProblem, startMatrixGateway, traced, type CallerName, type MatrixGateway } from './support.ts';
import { MATRIX, concrete, expectedOutcome, type MatrixRequest, type Outcome, type Surface } from './table.ts';

// The access matrix walked end to end: every surface, every caller, both variants, through the real HTTP
// server in front of a real echo upstream. The expectations come from the one table in table.ts.

interface Case { surface: Surface; request: MatrixRequest; caller: CallerName; outcome: Outcome }

const OUTCOMES: { when: string; holds: (o: Outcome) => boolean }[] = [
  { when: 'when the matrix allows a forwarded path, then the upstream receives the request unchanged with the gateway\'s identity headers', holds: (o) => o.kind === 'forwarded' },
  { when: 'when the matrix allows a path the gateway serves itself, then its handler answers and nothing is forwarded', holds: (o) => o.kind === 'served' },
  { when: 'when a permission would open it, then the key gets 403 FORBIDDEN naming requiredPermission "ai"', holds: (o) => o.kind === 'forbidden' && o.requiredPermission === 'ai' },
  { when: 'when the matrix refuses the caller, then 403 FORBIDDEN with a detail and no permission to ask for', holds: (o) => o.kind === 'forbidden' && o.requiredPermission === null },
  { when: 'when nobody is calling, then 401 UNAUTHENTICATED', holds: (o) => o.kind === 'unauthenticated' },
  { when: 'when /api/mcp refuses, then 401 in OAuth form with WWW-Authenticate naming the resource metadata', holds: (o) => o.kind === 'oauth' },
];

function title(c: Case): string {
  const q = c.request.query ? '?' + Object.entries(c.request.query).map(([k, v]) => `${k}=${v}`).join('&') : '';
  return `${describeCaller[c.caller]}: ${c.request.method} ${c.request.path}${q}`;
}

async function check(m: MatrixGateway, c: Case): Promise<void> {
  const party = m.parties[c.caller];
  const sent = concrete(c.request, party.identity, m.owner);
  const { res, upstream } = await traced(m.echo, party.client(), sent.method, sent.target, sent.body, c.request.headers);
  const o = c.outcome;
  switch (o.kind) {
    case 'forwarded':
      expectForwarded(res, upstream, sent, party.identity);
      return;
    case 'served':
      expect(res.status, `${res.status} ${res.text.slice(0, 300)}`).to.equal(o.status);
      if (o.code) expect(res.body.code).to.equal(o.code);
      expectNotForwarded(upstream);
      return;
    case 'forbidden':
      expectProblem(res, 403, 'FORBIDDEN');
      if (o.requiredPermission) expect(res.body.requiredPermission).to.equal(o.requiredPermission);
      else expect(res.body).to.not.have.property('requiredPermission');
      expectNotForwarded(upstream);
      return;
    case 'unauthenticated':
      expectProblem(res, 401, 'UNAUTHENTICATED');
      expectNotForwarded(upstream);
      return;
    case 'oauth':
      expectOAuth401(res, LOCAL_BASE);
      expectNotForwarded(upstream);
      return;
  }
}

for (const variant of ['A', 'B'] as const) {
  describe(`access matrix, Variant ${variant}: every surface for every caller, through the gateway to a real upstream`, () => {
    let m: MatrixGateway;
    before(async () => {
      m = await startMatrixGateway(variant);
    });
    after(async () => m?.stop());

    const cases: Case[] = MATRIX.flatMap((surface) =>
      surface.requests.flatMap((request) => CALLERS.map((caller) => ({ surface, request, caller, outcome: expectedOutcome(surface, request, caller, variant) }))),
    );

    for (const { when, holds } of OUTCOMES) {
      const mine = cases.filter((c) => holds(c.outcome));
      if (!mine.length) continue;
      describe(when, () => {
        for (const surface of MATRIX) {
          const here = mine.filter((c) => c.surface === surface);
          if (here.length) describe(surface.surface, () => here.forEach((c) => it(title(c), () => check(m, c))));
        }
      });
    }
  });
}
