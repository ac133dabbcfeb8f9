import { expect } from 'chai';
import { createMcpSessionIds, type SessionHolder } from '../../../src/services/mcp-session-ids.ts';

// The MCP session id is checked by whichever instance a request lands on: it must verify with the
// shared key alone, only for the holder it was issued to, and carry nothing secret.

const SHARED = 'a-shared-cookie-key-of-the-fleet';
const fleet = () => createMcpSessionIds({ sharedKey: async () => SHARED });
const key: SessionHolder = { kind: 'key', id: 'key-1', userId: 'user-1' };

describe('MCP session ids', () => {
  it('an id issued by one instance is held by the same caller on another instance', async () => {
    const id = await fleet().issue(key);
    expect(await fleet().holds(id, key)).to.equal(true);
  });

  it('is visible ASCII and contains neither the shared key nor the holder', async () => {
    const id = await fleet().issue(key);
    expect(id).to.match(/^[\x21-\x7E]+$/);
    expect(id).to.not.include(SHARED).and.not.include('key-1').and.not.include('user-1');
  });

  it('is a different id at every initialize', async () => {
    const ids = await Promise.all([1, 2, 3].map(() => fleet().issue(key)));
    expect(new Set(ids).size).to.equal(3);
  });

  describe('is not held', () => {
    it('by another key, another owner, or a grant with the same id', async () => {
      const id = await fleet().issue(key);
      const ids = fleet();
      expect(await ids.holds(id, { ...key, id: 'key-2' })).to.equal(false);
      expect(await ids.holds(id, { ...key, userId: 'user-2' })).to.equal(false);
      expect(await ids.holds(id, { ...key, kind: 'grant' })).to.equal(false);
    });

    it('when a single character is changed, or it is malformed', async () => {
      const id = await fleet().issue(key);
      const ids = fleet();
      for (const i of [0, id.indexOf('.') + 1, id.length - 1]) {
        const changed = id.slice(0, i) + (id[i] === 'A' ? 'B' : 'A') + id.slice(i + 1);
        expect(await ids.holds(changed, key), changed).to.equal(false);
      }
      for (const bad of ['', '.', id + 'A', id.replace('.', ''), 'x'.repeat(68)]) expect(await ids.holds(bad, key), bad).to.equal(false);
    });

    it('by a fleet with another shared key', async () => {
      const id = await fleet().issue(key);
      expect(await createMcpSessionIds({ sharedKey: async () => 'another' }).holds(id, key)).to.equal(false);
    });
  });

  it('a shared key that could not be loaded is loaded again at the next request', async () => {
    let calls = 0;
    const ids = createMcpSessionIds({
      sharedKey: async () => {
        calls += 1;
        if (calls === 1) throw new Error('database down');
        return SHARED;
      },
    });
    let failed = false;
    await ids.issue(key).catch(() => { failed = true; });
    expect(failed).to.equal(true);
    const id = await ids.issue(key);
    expect(await fleet().holds(id, key)).to.equal(true);
    expect(calls).to.equal(2);
  });
});
