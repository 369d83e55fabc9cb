/**
 * The "Limits" page: rate limits and budgets (requests and tokens per minute, cost per day and
 * month), each with its counters from `/limits/<slug>/status`, created, edited in place (PATCH with
 * the version the page loaded) and deleted; a limit of the config file is shown read-only.
 */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, table, type Json } from '../lib/dom.js';
import { formOf, openedBy, refuse, showErrors, value, write, type Field } from '../lib/forms.js';
import { dollars } from '../lib/money.js';
import { hashParams, navigate, rerender } from '../lib/nav.js';
import { subjectFields, subjectsOf, subjectsText, type Subjects } from '../lib/subjects.js';
import { canWrite, deleteButton, fromConfigNote } from '../lib/records.js';

/** A limit's caps: the record's field, its label, its largest value, and whether it is a whole number. */
const CAPS: { field: string; label: string; max: number; whole: boolean; unit: string }[] = [
  { field: 'requests_per_minute', label: 'Requests per minute', max: 1_000_000, whole: true, unit: 'requests' },
  { field: 'tokens_per_minute', label: 'Tokens per minute', max: 1_000_000_000, whole: true, unit: 'tokens' },
  { field: 'cost_usd_per_day', label: 'Cost per day (USD)', max: 1_000_000, whole: false, unit: 'USD' },
  { field: 'cost_usd_per_month', label: 'Cost per month (USD)', max: 1_000_000, whole: false, unit: 'USD' },
];

const PER_CHOICES: [string, string][] = [
  ['each', 'Each caller its own counters'],
  ['shared', 'One set of counters shared by all of them'],
];

function capText(limit: Json, cap: (typeof CAPS)[number]): string {
  const v = limit[cap.field];
  if (v === undefined || v === null) return '';
  return cap.unit === 'USD' ? `${cap.label}: ${dollars(v)}` : `${cap.label}: ${Number(v).toLocaleString('en-US')}`;
}

/**
 * The caps typed in the form, each a number within its range; undefined (with each error shown
 * beside its field) when one is not. A cap left empty is null.
 */
function capsOf(form: HTMLFormElement): Record<string, number | null> | undefined {
  const caps: Record<string, number | null> = {};
  const errors: [string, string][] = [];
  for (const cap of CAPS) {
    const text = value(form, cap.field);
    if (text === '') {
      caps[cap.field] = null;
      continue;
    }
    const n = Number(text);
    if (!Number.isFinite(n) || n < 0 || n > cap.max || (cap.whole && !Number.isInteger(n))) {
      errors.push([
        cap.field,
        `${cap.label} must be ${cap.whole ? 'a whole number' : 'an amount'} from 0 to ${cap.max.toLocaleString('en-US')}${cap.whole ? '' : ' (such as 25 or 2.50)'}, or empty for no cap.`,
      ]);
      continue;
    }
    caps[cap.field] = n;
  }
  if (errors.length > 0) {
    showErrors(
      form,
      errors.map(([param, message]) => ({ param, message })),
    );
    return undefined;
  }
  if (Object.values(caps).every((v) => v === null)) {
    refuse(form, CAPS[0]?.field ?? '', 'Set at least one cap: a limit without a cap limits nothing.');
    return undefined;
  }
  return caps;
}

/** The create or edit form of a limit. */
function limitForm(limit: Json | undefined, after: () => Promise<void>): HTMLFormElement {
  const subjects = (limit?.subjects ?? {}) as Subjects;
  const slug = limit ? String(limit.slug) : '';
  const fields: Field[] = [
    ...(limit ? [] : [{ name: 'slug', label: 'Slug', required: true, hint: 'Its name in paths and the audit log.' }]),
    { name: 'name', label: 'Name', value: String(limit?.name ?? '') },
    ...subjectFields(subjects),
    {
      name: 'per',
      label: 'Counters',
      type: 'select',
      options: PER_CHOICES,
      value: String(limit?.per ?? 'each'),
      param: 'per',
    },
    ...CAPS.map((cap): Field => ({
      name: cap.field,
      label: cap.label,
      type: 'number',
      value: limit?.[cap.field] === undefined ? '' : String(limit[cap.field]),
      hint: cap.whole ? 'Empty: no cap.' : 'In US dollars, UTC calendar periods. Empty: no cap.',
    })),
  ];
  const title = limit ? `Edit limit ${slug}` : 'Add a limit';
  const form = formOf(title, fields, limit ? 'Save limit' : 'Add limit', async (f) => {
    const caps = capsOf(f);
    if (!caps) return;
    const body: Json = {
      subjects: subjectsOf(f),
      per: value(f, 'per'),
    };
    const name = value(f, 'name');
    if (limit) {
      // A field emptied here is removed (null); one that was never set is left out.
      body.name = name === '' ? (limit.name === undefined ? undefined : null) : name;
      for (const cap of CAPS) {
        const v = caps[cap.field];
        body[cap.field] = v === null ? (limit[cap.field] === undefined ? undefined : null) : v;
      }
    } else {
      if (name) body.name = name;
      for (const cap of CAPS) if (caps[cap.field] !== null) body[cap.field] = caps[cap.field];
    }
    const saved = limit
      ? await write(f, 'PATCH', `/limits/${encodeURIComponent(slug)}`, { version: limit.version, ...body })
      : await write(f, 'POST', '/limits', { slug: value(f, 'slug'), ...body });
    if (!saved) return;
    say(`Limit ${String(saved.slug)} saved.`);
    await after();
  });
  return form;
}

/** One cap's counter as the status route answers it: used (or spent) of the cap, and what is left. */
function counterRow(label: string, counter: Json | undefined, usd: boolean): HTMLElement | undefined {
  if (!counter) return undefined;
  const used = usd ? counter.spent : counter.used;
  const show = (n: unknown) => (usd ? dollars(n) : Number(n ?? 0).toLocaleString('en-US'));
  const cap = Number(counter.limit ?? 0);
  const share = cap > 0 ? Math.min(1, Number(used ?? 0) / cap) : 1;
  return el(
    'tr',
    {},
    el('th', { scope: 'row', text: label }),
    el('td', { class: 'number', text: `${show(used)} / ${show(counter.limit)}` }),
    el('td', { class: 'number', text: show(counter.remaining) }),
    el(
      'td',
      {},
      el('meter', {
        min: '0',
        max: '1',
        value: share.toFixed(3),
        high: '0.8',
        optimum: '0',
        'aria-label': `${label}: ${Math.round(share * 100)}% used`,
      }),
    ),
  );
}

/** The limit's counters: for `per: "each"`, those of the user or API key looked up (or a prompt to look one up). */
async function countersOf(limit: Json, who: { user?: string; apiKey?: string }): Promise<HTMLElement> {
  const slug = String(limit.slug);
  const each = limit.per !== 'shared';
  if (each && who.user === undefined && who.apiKey === undefined)
    return el('p', {
      class: 'hint',
      text: 'Each caller has its own counters: look up a user id or API key id above to see them.',
    });
  const query = new URLSearchParams();
  if (each && who.user !== undefined) query.set('user', who.user);
  else if (each && who.apiKey !== undefined) query.set('apiKey', who.apiKey);
  const answer = await api('GET', `/limits/${encodeURIComponent(slug)}/status${query.size ? `?${query}` : ''}`);
  if (answer.status >= 400) {
    const error = (answer.body.error ?? {}) as { message?: string; code?: string };
    return el('p', {
      class: 'error',
      text: `Counters not available: ${error.message ?? `status ${answer.status}`}${error.code ? ` (${error.code})` : ''}`,
    });
  }
  const s = answer.body;
  const rows = [
    counterRow('Requests per minute', s.requests_per_minute as Json | undefined, false),
    counterRow('Tokens per minute', s.tokens_per_minute as Json | undefined, false),
    counterRow('Cost today (UTC)', s.cost_usd_per_day as Json | undefined, true),
    counterRow('Cost this month (UTC)', s.cost_usd_per_month as Json | undefined, true),
  ].filter((row): row is HTMLElement => row !== undefined);
  const counter = String(s.counter ?? 'this caller').replace(/^(user|key):/, (_, kind: string) =>
    kind === 'user' ? 'user ' : 'API key ',
  );
  const whose = !each ? 'shared by all its callers' : `of ${counter}`;
  const counters = table(`Counters of ${slug}, ${whose}`, ['Cap', 'Used / cap', 'Left', 'Share'], rows, [
    'Used / cap',
    'Left',
  ]);
  counters.classList.add('counters');
  counters.setAttribute('data-limit', slug);
  return counters;
}

export async function limitsPage(): Promise<HTMLElement[]> {
  const params = hashParams();
  const who: { user?: string; apiKey?: string } = {};
  if (params.get('user')) who.user = params.get('user') as string;
  else if (params.get('apiKey')) who.apiKey = params.get('apiKey') as string;
  const lookup = formOf(
    'Counters of a caller',
    [
      {
        name: 'user',
        label: 'User id',
        value: who.user ?? '',
        hint: 'For limits with a counter per caller: an API key’s user_id or a token’s sub.',
      },
      {
        name: 'apiKey',
        label: 'API key id',
        value: who.apiKey ?? '',
        hint: 'Instead of a user id: a key without a user id is counted by its id.',
      },
    ],
    'Show counters',
    async (form) => {
      const next = new URLSearchParams();
      if (value(form, 'user') && value(form, 'apiKey')) {
        refuse(form, 'apiKey', 'Give a user id or an API key id, not both.');
        return;
      }
      if (value(form, 'user')) next.set('user', value(form, 'user'));
      else if (value(form, 'apiKey')) next.set('apiKey', value(form, 'apiKey'));
      navigate(next.size ? `#/limits?${next.toString()}` : '#/limits');
    },
  );
  lookup.classList.add('filters');
  const answer = await api('GET', '/limits');
  if (answer.status === 404)
    return [heading('Limits'), el('p', { text: 'This gateway has no limits route: update it to set limits here.' })];
  const limits = dataOf(answer);
  const items = el('ul', { class: 'records' });
  const counters = await Promise.all(limits.map((limit) => countersOf(limit, who)));
  for (const [i, limit] of limits.entries()) {
    const slug = String(limit.slug);
    const editor = el('div');
    const fromConfig = limit.source === 'config';
    const writable = canWrite() && !fromConfig;
    items.append(
      recordItem(
        limit.name ? `${String(limit.name)} (${slug})` : slug,
        [
          `For ${subjectsText((limit.subjects ?? {}) as Subjects)}`,
          `Counters: ${limit.per === 'shared' ? 'shared by all of them' : 'each caller its own'}`,
          CAPS.map((cap) => capText(limit, cap))
            .filter(Boolean)
            .join('; ') || 'No cap',
          `Source: ${String(limit.source)}`,
          counters[i] as HTMLElement,
        ],
        ...(writable
          ? [
              button(
                'Edit',
                () => {
                  const form = openedBy(
                    limitForm(limit, () => rerender()),
                    `Edit limit ${slug}`,
                  );
                  editor.replaceChildren(form);
                  (form.querySelector('input') as HTMLElement).focus();
                },
                'secondary',
                `Edit limit ${slug}`,
              ),
              deleteButton('limits', slug, `limit ${slug}`),
            ]
          : fromConfig
            ? [fromConfigNote()]
            : []),
        editor,
      ),
    );
  }
  const content = [
    heading('Limits'),
    el('p', {
      class: 'hint',
      text: 'Requests and tokens per minute are sliding windows (any 60 s); costs are UTC calendar days and months. Counters include requests in flight.',
    }),
    lookup,
    limits.length ? items : el('p', { text: 'No limits yet.' }),
  ];
  if (canWrite()) content.push(limitForm(undefined, () => rerender()));
  return content;
}
