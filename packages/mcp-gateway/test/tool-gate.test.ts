import fc from 'fast-check';
import { filterJsonAnswer, filterJsonBytes, type McpListedTool, type McpToolGate } from '../src';

/** Allows the tools whose name starts with `ok`. */
const gate = (namesOnly: boolean): McpToolGate & { seen: McpListedTool[] } => {
  const seen: McpListedTool[] = [];
  return {
    namesOnly,
    seen,
    listed: (tool) => {
      seen.push(tool);
      return tool.name.startsWith('ok') ? 'allowed' : 'access_denied';
    },
    called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
  };
};

type Message = { id?: unknown; result?: { tools?: unknown } | null };

/** What the filter must answer, read the obvious way: parse, drop the tools not allowed, whatever the id. */
function reference(text: string): unknown {
  const parsed = JSON.parse(text) as Message | Message[];
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof m !== 'object' || m === null) continue;
    const tools = typeof m.result === 'object' && m.result !== null ? m.result.tools : undefined;
    if (!Array.isArray(tools)) continue;
    (m.result as { tools: unknown[] }).tools = tools.filter(
      (t) =>
        typeof t === 'object' &&
        t !== null &&
        typeof (t as { name?: unknown }).name === 'string' &&
        (t as { name: string }).name.startsWith('ok'),
    );
  }
  return parsed;
}

/** JSON text of `value` with random whitespace, and keys or strings sometimes written with escapes. */
const jsonText = (value: unknown, spaces: boolean[], escapes: boolean[]): string => {
  let n = 0;
  const ws = () => (spaces[n++ % spaces.length] ? ' \n\t' : '');
  const str = (s: string) => {
    const plain = JSON.stringify(s);
    if (!escapes[n++ % escapes.length] || s === '') return plain;
    // The first character as a \u escape.
    return `"\\u${s.charCodeAt(0).toString(16).padStart(4, '0')}${JSON.stringify(s.slice(1)).slice(1)}`;
  };
  const write = (v: unknown): string => {
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => `${write(x)}${ws()}`).join(`,${ws()}`)}]`;
    if (typeof v === 'object' && v !== null)
      return `{${ws()}${Object.entries(v)
        .map(([k, x]) => `${str(k)}${ws()}:${ws()}${write(x)}`)
        .join(`,${ws()}`)}${ws()}}`;
    if (typeof v === 'string') return str(v);
    return JSON.stringify(v);
  };
  return `${ws()}${write(value)}${ws()}`;
};

describe('the tool gate on tools/list answers', () => {
  it('keeps exactly the allowed tools, their bytes as received, for random answers (JSON text, escapes, batches)', () => {
    const name = fc.oneof(
      fc.constantFrom('ok_a', 'ok_é', 'no_b', 'no', 'ok"q', 'ok\\n', 'okö\u2028'),
      fc.string({ maxLength: 6 }),
    );
    const tool = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record(
          { name, description: fc.string(), inputSchema: fc.jsonValue({ maxDepth: 3 }) },
          { requiredKeys: ['name'] },
        ),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
      { weight: 1, arbitrary: fc.record({ name: fc.oneof(fc.integer(), fc.constant(null)), x: fc.string() }) },
    );
    const message = fc.record(
      {
        jsonrpc: fc.constant('2.0'),
        id: fc.oneof(fc.constantFrom(1, 2, 'a', 'b', 1.5, -0), fc.constant(null)),
        result: fc.oneof(
          fc.record({ tools: fc.array(tool, { maxLength: 6 }), nextCursor: fc.string() }, { requiredKeys: ['tools'] }),
          fc.record({ tools: fc.jsonValue({ maxDepth: 1 }) }),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        method: fc.string({ maxLength: 3 }),
      },
      { requiredKeys: ['id'] },
    );
    const answer = fc.oneof(message, fc.array(message, { maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }));
    fc.assert(
      fc.property(
        answer,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        (value, spaces, escapes, namesOnly) => {
          const text = jsonText(value, spaces, escapes);
          const expected = reference(text);
          const g = gate(namesOnly);
          const out = filterJsonAnswer(text, g);
          expect(JSON.parse(out)).toEqual(expected);
          const bytes = filterJsonBytes(Buffer.from(text), gate(namesOnly));
          expect(bytes.toString()).toBe(out);
          // The whole tool reaches a gate that reads more than the name.
          if (!namesOnly) for (const t of g.seen) expect(Object.keys(t).length).toBeGreaterThanOrEqual(1);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
