/** The "Access" page: explain (may this caller use this resource?) and the access policies, each editable in place. */
import { api, dataOf, type ApiError } from '../lib/api.js';
import { button, el, heading, recordItem, say, when, type Json } from '../lib/dom.js';
import { formOf, list, openedBy, refuse, showError, value, write, type Field } from '../lib/forms.js';
import { hashParams, navigate, rerender } from '../lib/nav.js';
import { nonEmpty, subjectFields, subjectsOf, subjectsText, type Subjects } from '../lib/subjects.js';
import { canWrite, deleteButton, fromConfigNote } from '../lib/records.js';

interface PolicyAllow {
  models?: string[];
  mcpServers?: { server: string; tools?: string[] }[];
  integrations?: string[];
}

function grantsText(allow: PolicyAllow): string {
  const parts = [
    allow.models?.length ? `models ${allow.models.join(', ')}` : '',
    allow.mcpServers?.length ? `MCP servers ${allow.mcpServers.map(mcpLine).join('; ')}` : '',
    allow.integrations?.length ? `integrations ${allow.integrations.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'nothing';
}

/** One `allow.mcpServers` entry as the form writes it: `crm` or `crm: search_*, get_ticket`. */
function mcpLine(entry: { server: string; tools?: string[] }): string {
  return entry.tools === undefined ? entry.server : `${entry.server}: ${entry.tools.join(', ')}`;
}

/** Reads the form's MCP server lines; undefined (with the error shown) when one is malformed. */
function mcpEntries(form: HTMLFormElement): { server: string; tools?: string[] }[] | undefined {
  const lines = list(value(form, 'mcpServers'), /\n+/);
  const entries: { server: string; tools?: string[] }[] = [];
  for (const [index, line] of lines.entries()) {
    const colon = line.indexOf(':');
    const server = (colon === -1 ? line : line.slice(0, colon)).trim();
    if (server === '' || /\s/.test(server)) {
      refuse(
        form,
        'allow.mcpServers',
        `Line ${index + 1}: write a server slug (or pattern), then optionally ": tool, tool".`,
      );
      return undefined;
    }
    if (colon === -1) {
      entries.push({ server });
      continue;
    }
    const tools = list(line.slice(colon + 1), /,+/);
    if (tools.length === 0 || tools.some((t) => /\s/.test(t))) {
      refuse(
        form,
        'allow.mcpServers',
        `Line ${index + 1}: name the tools after ":" separated by commas, or leave out ":" to allow every tool.`,
      );
      return undefined;
    }
    entries.push({ server, tools });
  }
  return entries;
}

/** The create or edit form of a policy: one field per list, one entry a line. */
function policyForm(policy: Json | undefined, after: (slug: string) => Promise<void>): HTMLFormElement {
  const subjects = (policy?.subjects ?? {}) as Subjects;
  const allow = (policy?.allow ?? {}) as PolicyAllow;
  const lines = (values: string[] | undefined) => (values ?? []).join('\n');
  const slug = policy ? String(policy.slug) : '';
  const fields: Field[] = [
    ...(policy ? [] : [{ name: 'slug', label: 'Slug', required: true, hint: 'Its name in paths and in explain.' }]),
    { name: 'name', label: 'Name', value: String(policy?.name ?? '') },
    ...subjectFields(subjects),
    {
      name: 'models',
      label: 'Allowed models',
      type: 'textarea',
      value: lines(allow.models),
      hint: 'Patterns, one a line, such as @anthropic/claude-*. * stands for any run of characters.',
      param: 'allow.models',
    },
    {
      name: 'mcpServers',
      label: 'Allowed MCP servers',
      type: 'textarea',
      value: (allow.mcpServers ?? []).map(mcpLine).join('\n'),
      hint: 'One server a line: "crm" allows every tool of crm; "crm: search_*, get_ticket" only those tools.',
      param: 'allow.mcpServers',
    },
    {
      name: 'integrations',
      label: 'Allowed integrations',
      type: 'textarea',
      value: lines(allow.integrations),
      hint: 'Bedrock integration slugs or patterns, one a line.',
      param: 'allow.integrations',
    },
  ];
  return formOf(
    policy ? `Edit policy ${slug}` : 'Create a policy',
    fields,
    policy ? 'Save policy' : 'Create policy',
    async (form) => {
      const mcpServers = mcpEntries(form);
      if (!mcpServers) return;
      const body: Json = {
        subjects: subjectsOf(form),
        allow: {
          ...nonEmpty({
            models: list(value(form, 'models'), /\n+/),
            integrations: list(value(form, 'integrations'), /\n+/),
          }),
          ...(mcpServers.length ? { mcpServers } : {}),
        },
      };
      if (value(form, 'name')) body.name = value(form, 'name');
      const saved = policy
        ? await write(form, 'PATCH', `/policies/${encodeURIComponent(slug)}`, { version: policy.version, ...body })
        : await write(form, 'POST', '/policies', { slug: value(form, 'slug'), ...body });
      if (!saved) return;
      say(`Policy ${String(saved.slug)} ${policy ? 'saved' : 'created'}.`);
      await after(String(saved.slug));
    },
  );
}

function explainForm(): HTMLElement[] {
  const outcome = el('div', { 'aria-live': 'polite' });
  const form = formOf(
    'Can this caller use this resource?',
    [
      { name: 'user', label: 'User id', hint: 'An API key’s user_id, or a token’s sub.' },
      { name: 'groups', label: 'Groups', hint: 'Comma-separated, optional.' },
      { name: 'apiKey', label: 'API key id', hint: 'Optional, as the API keys page lists them.' },
      {
        name: 'resource',
        label: 'Resource',
        required: true,
        hint: '@provider/model, mcp:server, mcp:server/tool or integration:slug.',
      },
    ],
    'Ask',
    async (f) => {
      const query = new URLSearchParams({ resource: value(f, 'resource') });
      if (value(f, 'user')) query.set('user', value(f, 'user'));
      if (value(f, 'groups')) query.set('groups', list(value(f, 'groups'), /,+/).join(','));
      if (value(f, 'apiKey')) query.set('apiKey', value(f, 'apiKey'));
      const answer = await api('GET', `/access/explain?${query.toString()}`);
      if (answer.status >= 400) {
        outcome.replaceChildren();
        showError(f, answer);
        return;
      }
      const allowed = answer.body.allowed === true;
      const policies = (answer.body.policies as string[] | undefined) ?? [];
      const who = value(f, 'user') || 'this caller';
      const allowing = el('dd', {});
      if (policies.length === 0) allowing.textContent = 'none';
      for (const [i, slug] of policies.entries()) {
        if (i > 0) allowing.append(', ');
        allowing.append(el('a', { href: `#/access?policy=${encodeURIComponent(slug)}`, text: slug }));
      }
      outcome.replaceChildren(
        el(
          'section',
          {
            class: `panel decision ${allowed ? 'allowed' : 'denied'}`,
            'aria-labelledby': 'decision-title',
          },
          el('h3', { id: 'decision-title', class: 'verdict', text: allowed ? 'Allowed' : 'Denied' }),
          el('p', {
            text: `${who} ${allowed ? 'may' : 'may not'} use ${value(f, 'resource')}.`,
          }),
          el(
            'dl',
            { class: 'facts' },
            el('dt', { text: 'Mode' }),
            el('dd', { text: String(answer.body.mode) }),
            el('dt', { text: 'Allowing policies' }),
            allowing,
            el('dt', { text: 'Reason' }),
            el('dd', { text: String(answer.body.reason) }),
          ),
        ),
      );
    },
  );
  return [form, outcome];
}

export async function accessPage(): Promise<HTMLElement[]> {
  const slug = hashParams().get('policy');
  if (slug !== null) return policyPage(slug);
  const policies = dataOf(await api('GET', '/policies'));
  const items = el('ul', { class: 'records' });
  for (const p of policies) {
    const pslug = String(p.slug);
    const editor = el('div');
    const fromConfig = p.source === 'config';
    items.append(
      recordItem(
        p.name ? `${String(p.name)} (${pslug})` : pslug,
        [
          `For: ${subjectsText((p.subjects ?? {}) as Subjects)}`,
          `Allows: ${grantsText((p.allow ?? {}) as PolicyAllow)}`,
          `Source: ${String(p.source)}, version ${String(p.version)}`,
        ],
        el('a', { href: `#/access?policy=${encodeURIComponent(pslug)}`, text: `Open policy ${pslug}` }),
        el('span', { text: ' ' }),
        ...(fromConfig
          ? [fromConfigNote()]
          : !canWrite()
            ? []
            : [
                button(
                  'Edit',
                  () => {
                    const form = openedBy(
                      policyForm(p, () => rerender()),
                      `Edit policy ${pslug}`,
                    );
                    editor.replaceChildren(form);
                    (form.querySelector('input, textarea') as HTMLElement).focus();
                  },
                  'secondary',
                  `Edit policy ${pslug}`,
                ),
                deleteButton('policies', pslug, `policy ${pslug}`),
              ]),
        editor,
      ),
    );
  }
  const create = canWrite() ? policyForm(undefined, async () => rerender()) : el('span');
  return [
    heading('Access'),
    ...explainForm(),
    el('h2', { text: 'Policies' }),
    el('p', {
      class: 'hint',
      text: 'With access mode "policies", a caller reaches only what the policies naming it allow; in "report" mode what they would refuse is marked on the Requests page; in "open" mode they are kept but not applied.',
    }),
    policies.length ? items : el('p', { text: 'No policies yet.' }),
    create,
  ];
}

/** A policy's own page: who it is for and what it grants, with edit and delete. */
async function policyPage(slug: string): Promise<HTMLElement[]> {
  const back = el('p', {}, el('a', { href: '#/access', text: 'All policies' }));
  const answer = await api('GET', `/policies/${encodeURIComponent(slug)}`);
  if (answer.status >= 400) {
    const error = (answer.body.error ?? {}) as ApiError;
    return [heading(`Policy ${slug}`), back, el('p', { class: 'error', text: error.message ?? 'Not found.' })];
  }
  const p = answer.body;
  const subjects = (p.subjects ?? {}) as Subjects;
  const allow = (p.allow ?? {}) as PolicyAllow;
  const facts = el('dl', { class: 'facts' });
  const fact = (term: string, text: string) => facts.append(el('dt', { text: term }), el('dd', { text }));
  fact('Users', subjects.users?.join(', ') || 'none');
  fact('Groups', subjects.groups?.join(', ') || 'none');
  fact('API key ids', subjects.apiKeys?.join(', ') || 'none');
  fact('Source', `${String(p.source)}, version ${String(p.version)}, changed ${when(p.updatedAt, '')}`);
  const rows: [string, string, string][] = [
    ...(allow.models ?? []).map((m): [string, string, string] => ['Model', m, '']),
    ...(allow.mcpServers ?? []).map((s): [string, string, string] => [
      'MCP server',
      s.server,
      s.tools === undefined ? 'every tool' : s.tools.join(', '),
    ]),
    ...(allow.integrations ?? []).map((i): [string, string, string] => ['Integration', i, '']),
  ];
  const grants = rows.length
    ? el(
        'table',
        {},
        el('caption', { text: `What ${slug} grants` }),
        el('thead', {}, el('tr', {}, ...['Kind', 'Pattern', 'Tools'].map((h) => el('th', { scope: 'col', text: h })))),
        el(
          'tbody',
          {},
          ...rows.map(([kind, pattern, tools]) =>
            el('tr', {}, el('td', { text: kind }), el('td', { text: pattern }), el('td', { text: tools })),
          ),
        ),
      )
    : el('p', { text: 'It grants nothing.' });
  const actions =
    p.source === 'config'
      ? [el('p', { class: 'hint', text: 'Defined in the config file: change it there.' })]
      : canWrite()
        ? [
            policyForm(p, () => rerender()),
            deleteButton('policies', slug, `policy ${slug}`, () => navigate('#/access')),
          ]
        : [];
  return [
    heading(`Policy ${String(p.name ?? slug)}`),
    back,
    el('h2', { text: 'For' }),
    facts,
    el('h2', { text: 'What it grants' }),
    grants,
    ...actions,
  ];
}
