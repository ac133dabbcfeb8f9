import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import type { TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { twoInstances, type TwoInstances } from './support.ts';

// A request is decided by one policy version throughout, even when its decision takes two questions:
// a suffixed path allowed as spelled is refused by the route without the suffix. Version 1 refuses a
// key `pending` (so `pending.json` too); version 2 refuses `pending.json` by a line of its own and
// opens `pending`. Asking the spelled path of one and the bare path of the other would let
// `pending.json` through; while the two versions take turns under traffic, no request gets through.

const PATH = '/api/billing/subscription/pending.json';

describe('a reload while requests are decided', function () {
  this.timeout(120_000);
  let files: TwoInstances['files'];
  let a: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_policy_one_version', (s) => ({ files, a, cli } = s));

  it('decides each request by one version: a suffixed path refused under both is never let through', async () => {
    expect((await cli('apply', '--message', 'v1')).code).to.equal(0);
    const v1 = await readFile(files.file, 'utf8');
    const v2 = v1.replace(/^p, key, \*, \.\*, \/api\/billing\/subscription\/pending, deny, key\.billing-pending$/m,
      `p, key, *, .*, ${PATH}, deny, key.billing-pending-json`);
    expect(v2).to.not.equal(v1);
    await writeFile(files.file, v2);
    expect((await cli('apply', '--force', '--message', 'v2')).code).to.equal(0);

    const owner = await signUp(a.url);
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) keys.push((await owner.client.post('/api/api-keys', { name: `k${i}` })).body.key);
    const seen = new Map<number, number>();
    let flipping = true;
    const traffic = keys.map(async (key, i) => {
      const client = new Client(a.url).withKey(key);
      // Each key's 100 requests a day bound the traffic; the flips end well before.
      for (let n = 0; n < 95 && flipping; n++) {
        const r = await client.get(i % 2 ? PATH : PATH.replace('pending', 'Pending'));
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      }
    });
    const versions = new Set<number>();
    for (let round = 0; round < 6; round++) {
      const target = round % 2 === 0 ? 1 : 2;
      expect((await cli('rollback', String(target))).code).to.equal(0);
      const version = 3 + round;
      await until(`version ${version}`, () => a.policy.service.loaded.version === version, 5_000);
      versions.add(target);
    }
    flipping = false;
    await Promise.all(traffic);
    expect([...versions]).to.have.members([1, 2]);
    expect(Object.fromEntries(seen), 'every request refused (403)').to.have.all.keys('403');
  });
});
