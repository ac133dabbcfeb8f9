// node --import tsx test/bench/profile-top.ts FILE.cpuprofile [N]
// Where a server spent its CPU: the N functions with the most self time, and self time by package
// (or by file under src/), from a V8 CPU profile such as `npm run bench -- --profile DIR` writes.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const [file, top = '25'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node --import tsx test/bench/profile-top.ts FILE.cpuprofile [N]');
  process.exit(1);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const where = (url: string): string => {
  if (!url) return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  if (path.startsWith('node:')) return path;
  return relative(process.cwd(), path);
};

const fns = new Map<string, number>();
const places = new Map<string, number>();
let total = 0;
for (const [id, us] of self) {
  const n = byId.get(id);
  // Idle time is the other targets' turns: shares are of the time the server was busy.
  if (!n || n.callFrame.functionName === '(idle)') continue;
  total += us;
  const place = where(n.callFrame.url);
  const name = `${n.callFrame.functionName || '(anonymous)'}  ${place}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
  fns.set(name, (fns.get(name) ?? 0) + us);
  places.set(place, (places.get(place) ?? 0) + us);
}
const show = (m: Map<string, number>, n: number) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
console.log(`${(total / 1e6).toFixed(1)} s busy in ${file}\n\nBy function (self time):\n${show(fns, Number(top))}\n\nBy package or file:\n${show(places, Number(top))}`);
