import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { loadConfig } from '../../src/config.ts';
import { buildOpenApi } from '../../src/http/openapi.ts';

// Every answer the integration tests receive through test/support/http.ts is recorded here; the
// root hook (hooks.ts) checks each one that names a route of the OpenAPI document against it, so
// the document cannot drift from what the gateway sends.

export interface RecordedResponse { method: string; path: string; status: number; contentType: string; body: unknown }

export const recorded: RecordedResponse[] = [];
let recording = true;
export const record = (r: RecordedResponse) => void (recording && recorded.push(r));
/** For a test that sends something on purpose the document must not accept. */
export const pauseRecording = (paused: boolean) => void (recording = !paused);

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>> };

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export function createResponseChecker(doc: Doc = buildOpenApi(loadConfig({ env: {}, overrides: {} })) as Doc) {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: false }));
  const compiled = new Map<object, ValidateFunction>();
  const templates = Object.keys(doc.paths).map((t) => ({ t, re: new RegExp('^' + t.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/]+') + '$') }));

  /** Why the answer does not match the document, or null when it does (or names no route of it). */
  return function check(r: RecordedResponse): string | null {
    const path = r.path.split('?')[0]!;
    const template = templates.find(({ re }) => re.test(path))?.t;
    if (!template) return null;
    const op = doc.paths[template]![r.method.toLowerCase() === 'head' ? 'get' : r.method.toLowerCase()];
    // A method the route does not serve (405), or a 500 (always a bug, reported by its own test).
    if (!op || r.status === 405 || r.status >= 500 && r.status !== 502 && r.status !== 503) return null;
    const declared = op.responses[String(r.status)];
    if (!declared) return `${r.method} ${path}: status ${r.status} is not in the document`;
    if (!declared.content || r.method === 'HEAD') return null;
    const mediaType = Object.keys(declared.content).find((m) => r.contentType.startsWith(m));
    if (!mediaType) return `${r.method} ${path} ${r.status}: content type ${r.contentType || '(none)'} is not ${Object.keys(declared.content).join(' or ')}`;
    if (!mediaType.includes('json')) return null;
    const schema = declared.content[mediaType]!.schema;
    let validate = compiled.get(schema);
    if (!validate) compiled.set(schema, (validate = ajv.compile(schema)));
    if (validate(r.body)) return null;
    return `${r.method} ${path} ${r.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(r.body).slice(0, 300)}`;
  };
}

export function checkRecorded(): string[] {
  const check = createResponseChecker();
  return [...new Set(recorded.map(check).filter((m): m is string => m !== null))];
}
