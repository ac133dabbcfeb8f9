import { expect } from 'chai';
import pg from 'pg';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { ANSWER_BOUND_MS, drive, type Answer, type Drive, type Request, summary } from './support.ts';

// The traffic every store fault runs under: key requests forwarded upstream (they spend quota),
// key creates and revokes (database rows, audit entries and the daily create counter), a signed-in
// session reading its key list, and liveness. Afterwards the books must balance.

export interface Scenario {
  gw: TestGateway;
  echo: Echo;
  keyId: string;
  userId: string;
  /** The signed-in owner of the key, for requests beside the drive. */
  session: Client;
  drive: Drive;
  stop(): Promise<void>;
}

export async function startScenario(gateway: TestGatewayOptions): Promise<Scenario> {
  const echo = await startEcho();
  const gw = await startTestGateway({
    // Counted one by one: the books compare requests served with the counter, which a leased block
    // advances 200 at a time; and a block already leased is spent without the store,
    // so a key holding one keeps working through an outage until it runs out (docs/reliability.md).
    quotaLease: { floor: Number.MAX_SAFE_INTEGER },
    ...gateway,
    config: { upstream: { url: echo.url }, defaultApiRateLimit: 1_000_000, apiKeys: { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 10_000, maxCreatesPerDay: 100_000 } },
  });
  const { client: session, user } = await signUp(gw.url);
  const made = await session.post('/api/api-keys', { name: 'traffic' });
  const key = made.body.key as string;
  // One request before the fault puts the key in this instance's cache (the degraded modes use it).
  await new Client(gw.url).withKey(key).get('/api/projects');
  const cookie = [...session.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const created: string[] = [];
  const send = async (path: string, init: RequestInit, signal: AbortSignal) => {
    const res = await fetch(gw.url + path, { ...init, signal });
    const text = await res.text();
    return { status: res.status, text };
  };
  const requests: Request[] = [
    { kind: 'key', send: async (signal) => (await send('/api/projects', { headers: { 'x-api-key': key } }, signal)).status },
    {
      kind: 'create',
      send: async (signal) => {
        const res = await send('/api/api-keys', { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{"name":"fault"}' }, signal);
        if (res.status === 201) created.push((JSON.parse(res.text) as { id: string }).id);
        return res.status;
      },
    },
    { kind: 'key', send: async (signal) => (await send('/api/projects', { headers: { 'x-api-key': key } }, signal)).status },
    { kind: 'session', send: async (signal) => (await send('/api/api-keys', { headers: { cookie } }, signal)).status },
    {
      kind: 'revoke',
      send: async (signal) => {
        const id = created.shift();
        if (!id) return (await send('/healthz', {}, signal)).status;
        const res = await send(`/api/api-keys/${id}`, { method: 'DELETE', headers: { cookie } }, signal);
        // A revoke that failed is tried again later: the key must not be left behind unnoticed.
        if (res.status !== 204) created.unshift(id);
        return res.status;
      },
    },
  ];
  return {
    gw, echo, session, keyId: made.body.id as string, userId: user.id, drive: drive(requests),
    async stop() {
      await gw.stop();
      await echo.close();
    },
  };
}

const count = (answers: Answer[], kind: string, pred: (s: number) => boolean) => answers.filter((a) => a.kind === kind && pred(a.status)).length;

/** Every answer was a success or a 503, none took longer than the bound. */
export function expectNoHangNoError(answers: Answer[], ok: Record<string, number[]>): void {
  const wrong = answers.filter((a) => a.status !== 503 && !(ok[a.kind] ?? [200]).includes(a.status));
  expect(wrong, `answers other than success or 503 (${summary(answers)})`).to.deep.equal([]);
  const slow = answers.filter((a) => a.ms > ANSWER_BOUND_MS);
  expect(slow, `answers slower than ${ANSWER_BOUND_MS} ms (${summary(answers)})`).to.deep.equal([]);
}

/** The first key request started after `since` that succeeded, in ms after `since`. */
export function recoveredAfter(answers: Answer[], since: number): number {
  const first = answers.filter((a) => a.kind === 'key' && a.at >= since && a.status === 200).sort((a, b) => a.at - b.at)[0];
  if (!first) throw new Error(`no key request succeeded after the store came back (${summary(answers.filter((a) => a.at >= since))})`);
  return first.at + first.ms - since;
}

export interface Books { made: number; revoked: number; createdEntries: number; revokedEntries: number }

/** The scenario's key rows (made, revoked) and their audit entries, as the database holds them. */
export async function readBooks(databaseUrl: string, userId: string): Promise<Books> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows: [k] } = await db.query<{ made: string; revoked: string }>(
      `SELECT count(*) AS made, count(revoked_at) AS revoked FROM apikeys WHERE user_id = $1 AND name = 'fault'`, [userId]);
    const { rows: [a] } = await db.query<{ created: string; revoked: string }>(
      `SELECT count(*) FILTER (WHERE a.type = 'API_KEY_CREATED') AS created, count(*) FILTER (WHERE a.type = 'API_KEY_REVOKED') AS revoked
         FROM audit_log a JOIN apikeys k ON k.id = a.key_id WHERE k.user_id = $1 AND k.name = 'fault'`, [userId]);
    return { made: Number(k!.made), revoked: Number(k!.revoked), createdEntries: Number(a!.created), revokedEntries: Number(a!.revoked) };
  } finally {
    await db.end();
  }
}

/** Every key row has its creation entry and every revocation its entry: nothing half-written. */
export function expectEntriesMatchRows(b: Books): void {
  expect(b.createdEntries, 'API_KEY_CREATED entries vs key rows').to.equal(b.made);
  expect(b.revokedEntries, 'API_KEY_REVOKED entries vs revoked rows').to.equal(b.revoked);
}

/**
 * Keys, audit entries and the answers agree: each 201 is one key row with one creation entry,
 * each 204 one revocation with its entry, and no 503 left a row or an entry behind.
 */
export async function expectBooksBalance(databaseUrl: string, userId: string, answers: Answer[]): Promise<{ rows: number }> {
  const b = await readBooks(databaseUrl, userId);
  expect(b.made, 'key rows vs creates answered 201').to.equal(count(answers, 'create', (s) => s === 201));
  expect(b.revoked, 'revoked rows vs revokes answered 204').to.equal(count(answers, 'revoke', (s) => s === 204));
  expectEntriesMatchRows(b);
  return { rows: b.made };
}

export const served = (answers: Answer[], kind: string) => count(answers, kind, (s) => s !== 503 && s !== 0);
export const refused503 = (answers: Answer[], kind: string) => count(answers, kind, (s) => s === 503);
