/**
 * The "Requests" page: request records filtered by user, provider, model, status, metadata and
 * time, and each record's own panel (provider, model, error message, what policies would do).
 */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, table, when, type Json } from '../lib/dom.js';
import { formOf, list, refuse, showError, value } from '../lib/forms.js';
import { dollars } from '../lib/money.js';
import { hashParams, navigate } from '../lib/nav.js';

const REQUEST_FILTERS = ['user', 'provider', 'model', 'status', 'metadata', 'from', 'to', 'limit'] as const;

/** A `datetime-local` value (the browser's time zone) as ISO 8601, or undefined when it is not a time. */
function isoTime(local: string): string | undefined {
  const time = new Date(local);
  return Number.isNaN(time.getTime()) ? undefined : time.toISOString();
}

/** The admin API query of the Requests page's hash; throws [param, message] for a value it cannot send. */
function requestQuery(params: URLSearchParams): URLSearchParams {
  const query = new URLSearchParams();
  for (const name of ['user', 'provider', 'model', 'status', 'limit', 'cursor']) {
    const v = params.get(name);
    if (v) query.set(name, v);
  }
  for (const line of list(params.get('metadata') ?? '', /\n+/)) {
    const eq = line.indexOf('=');
    if (eq <= 0) throw ['metadata', `"${line}": write metadata filters as key=value, one a line.`];
    query.set(`metadata.${line.slice(0, eq).trim()}`, line.slice(eq + 1).trim());
  }
  for (const name of ['from', 'to']) {
    const v = params.get(name);
    if (!v) continue;
    const iso = isoTime(v);
    if (!iso) throw [name, `${name}: not a date and time.`];
    query.set(name, iso);
  }
  return query;
}

function tokens(n: unknown): string {
  return n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US');
}

/** A record's `cost_usd` in dollars; null is a model the price table does not know. */
function costText(cost: unknown): string {
  return cost === null || cost === undefined ? 'unknown (no price for this model)' : dollars(cost);
}

function ms(n: unknown): string {
  return n === null || n === undefined ? '—' : `${Math.round(Number(n)).toLocaleString('en-US')} ms`;
}

/** What access policies made of a record: allowed, refused, or (in report mode) would have refused, and why. */
function accessText(record: Json): string {
  const reason = record.access_reason ?? record.accessReason;
  const why = typeof reason === 'string' && reason !== '' ? `: ${reason}` : '';
  if (record.access === 'would_deny') return `Would be refused in policies mode (let through in report mode)${why}`;
  if (record.access === 'denied' || record.error_code === 'access_denied')
    return `Refused by the access policies${why}`;
  if (typeof record.access === 'string') return `${record.access}${why}`;
  return 'Allowed';
}

/** One record's every field (never message content: the records hold none). */
function requestDetail(record: Json): HTMLElement {
  const usage = (record.usage ?? {}) as Record<string, number | null>;
  const metadata = (record.metadata ?? null) as Record<string, string> | null;
  const facts = el('dl', { class: 'facts' });
  const fact = (term: string, text: string) => facts.append(el('dt', { text: term }), el('dd', { text }));
  fact('Time', when(record.time, '—'));
  fact('Request id', String(record.request_id));
  fact('Trace id', String(record.trace_id));
  fact('Route', `${String(record.route)}: ${String(record.method)} ${String(record.path)}`);
  fact('User', `${String(record.user_id ?? '—')}${record.key_hint ? `, key ${String(record.key_hint)}` : ''}`);
  fact('Provider', String(record.provider ?? '—'));
  fact('Model asked', String(record.model_requested ?? '—'));
  fact('Model answered', String(record.model_answered ?? '—'));
  if (record.mcp_method) fact('MCP method', String(record.mcp_method));
  // A member request made through a virtual MCP server (the provider is then the member).
  if (record.mcp_virtual_server) fact('Virtual MCP server', String(record.mcp_virtual_server));
  fact('Status', `${String(record.status)}${record.error_code ? ` ${String(record.error_code)}` : ''}`);
  if (record.error_message) fact('Error message', String(record.error_message));
  fact('Access', accessText(record));
  fact('Total time', ms(record.duration_ms));
  fact('Time to first byte', ms(record.ttfb_ms));
  fact('Input tokens', tokens(usage.input_tokens));
  fact('Output tokens', tokens(usage.output_tokens));
  fact('Cache creation tokens', tokens(usage.cache_creation_input_tokens));
  fact('Cache read tokens', tokens(usage.cache_read_input_tokens));
  fact('Cost', costText(record.cost_usd));
  fact('Cache status', String(record.cache_status ?? 'no cache asked'));
  const attempts = Array.isArray(record.attempts) ? (record.attempts as Json[]) : [];
  if (attempts.length > 0) {
    // A request routed across targets: each provider tried, in order, and which one answered.
    const list = el(
      'ol',
      {},
      ...attempts.map((a) =>
        el('li', {
          text:
            `target ${String(a.index)}: @${String(a.provider)}/${String(a.model)}, ${String(a.status)}` +
            `${a.error ? ` ${String(a.error)}` : ''} in ${ms(a.ms)}${a.answered ? ' (answered)' : ''}`,
        }),
      ),
    );
    facts.append(el('dt', { text: 'Attempts' }), el('dd', {}, list));
  }
  const entries = Object.entries(metadata ?? {});
  const meta = el('dd', {});
  if (entries.length === 0) meta.textContent = 'none';
  else meta.append(el('ul', {}, ...entries.map(([k, v]) => el('li', { text: `${k} = ${v}` }))));
  facts.append(el('dt', { text: 'Metadata' }), meta);
  return el(
    'section',
    { class: 'panel', 'aria-labelledby': 'request-title', id: 'request-detail' },
    el('h2', { id: 'request-title', text: `Request ${String(record.request_id)}`, tabindex: '-1' }),
    facts,
  );
}

export async function requestsPage(): Promise<HTMLElement[]> {
  const params = hashParams();
  const filter = formOf(
    'Filter requests',
    [
      { name: 'user', label: 'User id', value: params.get('user') ?? '' },
      {
        name: 'provider',
        label: 'Provider',
        value: params.get('provider') ?? '',
        hint: 'A provider, integration or MCP server slug.',
      },
      { name: 'model', label: 'Model', value: params.get('model') ?? '', hint: 'As asked or as answered.' },
      { name: 'status', label: 'Status', type: 'number', value: params.get('status') ?? '', hint: 'Such as 429.' },
      {
        name: 'metadata',
        label: 'Metadata',
        type: 'textarea',
        value: params.get('metadata') ?? '',
        hint: 'key=value, one a line; every one must match.',
      },
      { name: 'from', label: 'From', type: 'datetime-local', value: params.get('from') ?? '' },
      {
        name: 'to',
        label: 'To',
        type: 'datetime-local',
        value: params.get('to') ?? '',
        hint: 'Your time zone; "to" is exclusive.',
      },
      {
        name: 'limit',
        label: 'Per page',
        type: 'number',
        value: params.get('limit') ?? '50',
        hint: '1 to 500.',
      },
    ],
    'Show',
    async (form) => {
      const next = new URLSearchParams();
      for (const name of REQUEST_FILTERS) {
        const v = name === 'metadata' ? list(value(form, name), /\n+/).join('\n') : value(form, name);
        if (v && !(name === 'limit' && v === '50')) next.set(name, v);
      }
      const hash = next.size ? `#/requests?${next.toString()}` : '#/requests';
      navigate(hash);
    },
  );
  filter.classList.add('filters');
  let query: URLSearchParams;
  try {
    query = requestQuery(params);
  } catch (problem) {
    const [param, message] = problem as [string, string];
    refuse(filter, param, message);
    return [heading('Requests'), filter];
  }
  const answer = await api('GET', `/requests?${query.toString()}`);
  if (answer.status >= 400) {
    showError(filter, answer);
    return [heading('Requests'), filter];
  }
  const records = dataOf(answer);
  const detail = el('div');
  const rows = records.map((record) => {
    const usage = (record.usage ?? {}) as Record<string, number | null>;
    const open = button(
      'Open',
      () => {
        detail.replaceChildren(requestDetail(record));
        (detail.querySelector('h2') as HTMLElement).focus();
      },
      'secondary',
      `Open request ${String(record.request_id)}`,
    );
    return el(
      'tr',
      {},
      el('td', { text: when(record.time, '—') }),
      el('td', { text: String(record.user_id ?? '—') }),
      el('td', { text: String(record.provider ?? '—') }),
      el('td', { text: String(record.model_answered ?? record.model_requested ?? record.mcp_method ?? '—') }),
      el(
        'td',
        {},
        `${String(record.status)}${record.error_code ? ` ${String(record.error_code)}` : ''}`,
        record.access === 'would_deny' ? el('span', { class: 'badge warn', text: 'would deny' }) : undefined,
      ),
      el('td', { class: 'number', text: ms(record.duration_ms) }),
      el('td', { class: 'number', text: `${tokens(usage.input_tokens)} / ${tokens(usage.output_tokens)}` }),
      el('td', { class: 'number', text: dollars(record.cost_usd) }),
      el('td', {}, open),
    );
  });
  const pager = el('nav', { class: 'pager', 'aria-label': 'Pages' });
  if (params.get('cursor')) {
    const first = new URLSearchParams(params);
    first.delete('cursor');
    pager.append(el('a', { href: `#/requests${first.size ? `?${first.toString()}` : ''}`, text: 'First page' }));
  }
  const nextCursor = answer.body.next_cursor;
  if (typeof nextCursor === 'string') {
    const next = new URLSearchParams(params);
    next.set('cursor', nextCursor);
    pager.append(el('a', { href: `#/requests?${next.toString()}`, text: 'Next page' }));
  }
  const recordsTable = table(
    `${records.length} request(s), newest first`,
    ['Time', 'User', 'Provider', 'Model', 'Status', 'Total', 'Tokens in / out', 'Cost', 'Record'],
    rows,
    ['Total', 'Tokens in / out', 'Cost'],
  );
  return [
    heading('Requests'),
    filter,
    detail,
    records.length ? recordsTable : el('p', { text: 'No requests match.' }),
    pager,
  ];
}
