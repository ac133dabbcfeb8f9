import { expect } from 'chai';
import { createOAuthHolder } from '../../../src/oauth/holder.ts';
import type { OAuthRuntime } from '../../../src/oauth/provider.ts';

// The authorization server is built by its first use, once, and not at all without an issuer.

const fakeRuntime = { issuer: 'http://127.0.0.1:1' } as unknown as OAuthRuntime;

describe('the OAuth holder', () => {
  it('names no issuer and builds nothing until it is served', async () => {
    const holder = createOAuthHolder();
    expect(holder.issuer).to.equal(null);
    expect(await holder.runtime()).to.equal(null);
  });

  it('names the issuer at once and builds the library with the first use only, once for parallel callers', async () => {
    const holder = createOAuthHolder();
    let builds = 0;
    holder.serve('http://127.0.0.1:1', async () => {
      builds++;
      return fakeRuntime;
    });
    expect(holder.issuer).to.equal('http://127.0.0.1:1');
    expect(builds, 'serving builds nothing').to.equal(0);
    const [a, b] = await Promise.all([holder.runtime(), holder.runtime()]);
    expect(a).to.equal(fakeRuntime);
    expect(b).to.equal(fakeRuntime);
    await holder.runtime();
    expect(builds).to.equal(1);
  });

  it('tries again after a build that failed (the database was down, say)', async () => {
    const holder = createOAuthHolder();
    let builds = 0;
    holder.serve('http://127.0.0.1:1', async () => {
      builds++;
      if (builds === 1) throw new Error('database down');
      return fakeRuntime;
    });
    const first = await holder.runtime().then(() => null, (e: Error) => e.message);
    expect(first).to.equal('database down');
    expect(await holder.runtime()).to.equal(fakeRuntime);
    expect(builds).to.equal(2);
  });
});
