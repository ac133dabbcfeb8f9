// node --import tsx test/bench/heap-top.ts AFTER.heapsnapshot [BEFORE.heapsnapshot]
// The kinds of object that hold the most heap in a V8 heap snapshot (self size summed by type and
// constructor or string), and with a second snapshot the growth between the two. Live objects
// only: V8 collects garbage before it writes a snapshot.
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

function tally(path: string): Map<string, { count: number; bytes: number }> {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const width = fields.length;
  const at = (f: string) => fields.indexOf(f);
  const [typeAt, nameAt, sizeAt] = [at('type'), at('name'), at('self_size')];
  const types = s.snapshot.meta.node_types[0];
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt]!]!;
    let name = s.strings[s.nodes[i + nameAt]!] ?? '';
    // Strings by shape, not by text: a hash in hex and a UUID are what to recognise.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = /^[0-9a-f]{64}$/.test(name) ? '<64 hex>' : /^[0-9a-f-]{36}$/.test(name) ? '<uuid>' : `<${Math.min(name.length, 1000)} chars>`;
    const k = `${type} ${name.slice(0, 80)}`;
    const t = out.get(k) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += s.nodes[i + sizeAt]!;
    out.set(k, t);
  }
  return out;
}

const [afterPath, beforePath] = process.argv.slice(2);
if (!afterPath) throw new Error('usage: heap-top.ts AFTER.heapsnapshot [BEFORE.heapsnapshot]');
const after = tally(afterPath);
const before = beforePath ? tally(beforePath) : new Map<string, { count: number; bytes: number }>();
const total = (m: typeof after) => [...m.values()].reduce((a, t) => a + t.bytes, 0);
console.log(`live heap: ${(total(after) / 2 ** 20).toFixed(1)} MB${beforePath ? `, before ${(total(before) / 2 ** 20).toFixed(1)} MB` : ''}`);
const rows = [...after].map(([k, t]) => ({ k, count: t.count - (before.get(k)?.count ?? 0), bytes: t.bytes - (before.get(k)?.bytes ?? 0) }));
for (const r of rows.sort((a, b) => b.bytes - a.bytes).slice(0, 40)) {
  console.log(`${(r.bytes / 2 ** 20).toFixed(2).padStart(8)} MB ${String(r.count).padStart(9)}  ${r.k}`);
}
