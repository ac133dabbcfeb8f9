// The load generator's own process (started by load-process.ts):
//   node --import tsx test/bench/loader.ts
// autocannon times every response in the process that sends the requests, so a pause of that
// process is counted as the server's latency. The bench's parent holds the policy measurements'
// heap (40–55 MB live after them, with incremental marking steps of up to 17 ms under the load);
// this process holds only autocannon and the latencies of the run in hand.
import { hangUps, load } from './load.ts';
import type { LoaderReply, LoaderRequest } from './load-process.ts';

const send = (m: LoaderReply) => process.send?.(m);

process.on('message', (m: LoaderRequest) => {
  const work = m.type === 'load' ? load(m.target, m.opts) : hangUps(m.target, m.count).then(() => null);
  work.then(
    (result) => send({ type: 'done', id: m.id, result }),
    (e: unknown) => send({ type: 'failed', id: m.id, message: e instanceof Error ? e.message : String(e) }),
  );
});
// The bench went away: nobody will ask for more load.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
