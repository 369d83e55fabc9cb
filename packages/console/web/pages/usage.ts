/**
 * The "Usage" page: requests, tokens and their cost in US dollars per day, user, API key, provider or
 * model, as a chart and a table with a total.
 */
import { api, dataOf } from '../lib/api.js';
import { el, heading, type Json } from '../lib/dom.js';
import { formOf, refuse, showError, value } from '../lib/forms.js';
import { dollars } from '../lib/money.js';
import { hashParams, navigate } from '../lib/nav.js';

const USAGE_GROUPS: [string, string][] = [
  ['day', 'Day (UTC)'],
  ['user', 'User'],
  ['key', 'API key'],
  ['provider', 'Provider'],
  ['model', 'Model'],
];

function utcDay(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag: string, attrs: Record<string, string | number> = {}, ...children: (Node | string)[]): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [name, v] of Object.entries(attrs)) node.setAttribute(name, String(v));
  for (const child of children) node.append(child);
  return node;
}

/** Horizontal stacked bars of input and output tokens per group, drawn with SVG elements (text set as text). */
function usageChart(
  groups: { label: string; input: number; output: number; requests: number; cost: number }[],
): HTMLElement {
  const rowHeight = 28;
  const labelWidth = 200;
  const barWidth = 520;
  const width = labelWidth + barWidth + 260;
  const height = groups.length * rowHeight + 8;
  const most = Math.max(1, ...groups.map((g) => g.input + g.output));
  const title = svg('title', { id: 'usage-chart-title' }, 'Input and output tokens by group');
  const chart = svg('svg', {
    class: 'chart',
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-labelledby': 'usage-chart-title',
  });
  chart.append(title);
  for (const [i, g] of groups.entries()) {
    const y = 4 + i * rowHeight;
    const inputWidth = (g.input / most) * barWidth;
    const outputWidth = (g.output / most) * barWidth;
    const label = g.label.length > 26 ? `${g.label.slice(0, 25)}…` : g.label;
    chart.append(
      svg('text', { x: 0, y: y + 18 }, label),
      svg('rect', {
        class: 'bar-input',
        x: labelWidth,
        y: y + 4,
        width: inputWidth.toFixed(1),
        height: rowHeight - 10,
      }),
      svg('rect', {
        class: 'bar-output',
        x: (labelWidth + inputWidth).toFixed(1),
        y: y + 4,
        width: outputWidth.toFixed(1),
        height: rowHeight - 10,
      }),
      svg(
        'text',
        { x: (labelWidth + inputWidth + outputWidth + 8).toFixed(1), y: y + 18 },
        `${(g.input + g.output).toLocaleString('en-US')} tokens, ${g.requests.toLocaleString('en-US')} req., ${dollars(g.cost)}`,
      ),
    );
  }
  const figure = el('figure', { class: 'usage-figure' });
  figure.append(
    chart,
    el(
      'ul',
      { class: 'legend', 'aria-hidden': 'true' },
      el('li', {}, el('span', { class: 'swatch input' }), 'Input tokens'),
      el('li', {}, el('span', { class: 'swatch output' }), 'Output tokens'),
    ),
  );
  return figure;
}

export async function usagePage(): Promise<HTMLElement[]> {
  const params = hashParams();
  const groupBy = params.get('group_by') ?? 'day';
  const from = params.get('from') ?? utcDay(-6);
  const to = params.get('to') ?? utcDay(0);
  const filter = formOf(
    'Usage over a date range',
    [
      { name: 'group_by', label: 'Group by', type: 'select', options: USAGE_GROUPS, value: groupBy },
      { name: 'from', label: 'From (UTC day)', type: 'date', value: from, required: true },
      { name: 'to', label: 'To (UTC day, included)', type: 'date', value: to, required: true },
    ],
    'Show',
    async (form) => {
      const next = new URLSearchParams({
        group_by: value(form, 'group_by'),
        from: value(form, 'from'),
        to: value(form, 'to'),
      });
      navigate(`#/usage?${next.toString()}`);
    },
  );
  filter.classList.add('filters');
  const day = /^\d{4}-\d{2}-\d{2}$/;
  if (!day.test(from) || Number.isNaN(Date.parse(`${from}T00:00:00Z`))) {
    refuse(filter, 'from', 'from: choose a day.');
    return [heading('Usage'), filter];
  }
  if (!day.test(to) || Number.isNaN(Date.parse(`${to}T00:00:00Z`))) {
    refuse(filter, 'to', 'to: choose a day.');
    return [heading('Usage'), filter];
  }
  const until = new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString();
  const query = new URLSearchParams({ group_by: groupBy, from: `${from}T00:00:00.000Z`, to: until });
  const answer = await api('GET', `/usage?${query.toString()}`);
  if (answer.status >= 400) {
    showError(filter, answer);
    return [heading('Usage'), filter];
  }
  const groups = dataOf(answer);
  const n = (g: Json, name: string) => Number(g[name] ?? 0);
  const columns: [string, string][] = [
    ['requests', 'Requests'],
    ['errors', 'Errors'],
    ['input_tokens', 'Input tokens'],
    ['output_tokens', 'Output tokens'],
    ['cache_creation_input_tokens', 'Cache creation'],
    ['cache_read_input_tokens', 'Cache read'],
  ];
  // An API key is named by its hint in the records; its name comes from the key list.
  const keyNames = new Map<string, string>();
  if (groupBy === 'key') {
    for (const key of dataOf(await api('GET', '/api-keys')))
      if (typeof key.keyHint === 'string' && typeof key.name === 'string') {
        const known = keyNames.get(key.keyHint);
        keyNames.set(key.keyHint, known ? `${known} or ${key.name}` : key.name);
      }
  }
  const groupLabel = (USAGE_GROUPS.find(([g]) => g === groupBy) ?? ['', 'Group'])[1];
  const keyOf = (g: Json) => {
    if (g.key === null || g.key === undefined) return groupBy === 'key' ? '(no API key)' : '(none)';
    const name = groupBy === 'key' ? keyNames.get(String(g.key)) : undefined;
    return name ? `${name} (${String(g.key)})` : String(g.key);
  };
  const total = (name: string) => groups.reduce((sum, g) => sum + n(g, name), 0);
  // Summed in nano-dollars, as the gateway does, so the total is exact.
  const totalCost = groups.reduce((sum, g) => sum + Math.round(n(g, 'cost_usd') * 1e9), 0) / 1e9;
  const table = el(
    'table',
    { id: 'usage-table' },
    el('caption', { text: `Usage by ${groupLabel.toLowerCase()}, ${from} to ${to}` }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { scope: 'col', text: groupLabel }),
        ...columns.map(([, h]) => el('th', { scope: 'col', class: 'number', text: h })),
        el('th', { scope: 'col', class: 'number', text: 'Cost (USD)' }),
      ),
    ),
    el(
      'tbody',
      {},
      ...groups.map((g) =>
        el(
          'tr',
          {},
          el('th', { scope: 'row', text: keyOf(g) }),
          ...columns.map(([name]) => el('td', { class: 'number', text: n(g, name).toLocaleString('en-US') })),
          el('td', { class: 'number cost', text: dollars(n(g, 'cost_usd')) }),
        ),
      ),
    ),
    el(
      'tfoot',
      {},
      el(
        'tr',
        {},
        el('th', { scope: 'row', text: 'Total' }),
        ...columns.map(([name]) => el('td', { class: 'number', text: total(name).toLocaleString('en-US') })),
        el('td', { class: 'number cost', text: dollars(totalCost) }),
      ),
    ),
  );
  const chart = usageChart(
    groups.map((g) => ({
      label: keyOf(g),
      input: n(g, 'input_tokens'),
      output: n(g, 'output_tokens'),
      requests: n(g, 'requests'),
      cost: n(g, 'cost_usd'),
    })),
  );
  const summary = el('p', {
    id: 'usage-total',
    text: `Total cost ${from} to ${to}: ${dollars(totalCost)} for ${total('requests').toLocaleString('en-US')} request(s).`,
  });
  return [
    heading('Usage'),
    filter,
    ...(groups.length ? [summary, chart, table] : [el('p', { text: 'No requests in this range.' })]),
  ];
}
