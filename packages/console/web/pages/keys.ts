/**
 * The "API keys" page: each key's id (to paste into a policy), name, user id, groups, named config,
 * expiry and last use; create a key with a name, a named config and an expiry (shown once); revoke.
 */
import { api, dataOf } from '../lib/api.js';
import { button, copyable, el, heading, main, say, table, when, type Json } from '../lib/dom.js';
import { formOf, list, refuse, value, write } from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteButton } from '../lib/records.js';

/** A key's state in words: active, expired, or expiring. */
function expiry(k: Json): string {
  if (typeof k.expiresAt !== 'string') return 'never';
  const at = Date.parse(k.expiresAt);
  return `${at <= Date.now() ? 'expired ' : ''}${when(k.expiresAt)}`;
}

export async function keysPage(): Promise<HTMLElement[]> {
  const [keys, configs] = await Promise.all([
    api('GET', '/api-keys').then(dataOf),
    api('GET', '/configs').then(dataOf),
  ]);
  const rows = keys.map((k) => {
    const user = (k.user ?? {}) as Json;
    const userId = String(user.user_id ?? user.sub ?? '—');
    const who = String(user.email ?? user.user_id ?? user.sub ?? 'unnamed');
    const groups = Array.isArray(user.groups) ? user.groups.map(String).join(', ') : '';
    const expired = typeof k.expiresAt === 'string' && Date.parse(k.expiresAt) <= Date.now();
    return el(
      'tr',
      { class: expired ? 'expired' : '' },
      el('td', {}, copyable(String(k.id), 'Key id')),
      el('td', { text: String(k.name ?? '') }),
      el('td', { text: userId }),
      el('td', { text: groups || '—' }),
      el('td', { text: typeof k.config === 'string' ? k.config : '—' }),
      el('td', { class: 'code', text: String(k.keyHint ?? '(given as a digest)') }),
      el('td', { text: expiry(k) }),
      el('td', { text: when(k.lastUsedAt) }),
      el('td', { text: when(k.createdAt, '—') }),
      el(
        'td',
        {},
        k.source === 'config'
          ? el('span', { class: 'hint', text: 'Config file' })
          : canWrite()
            ? deleteButton('api-keys', String(k.id), `the key of ${who}`)
            : undefined,
      ),
    );
  });
  const shown = el('div', { id: 'key-once' });
  const content: HTMLElement[] = [
    heading('API keys'),
    shown,
    keys.length
      ? el(
          'div',
          { class: 'scroll' },
          table('API keys: paste a key id into a policy to give that key access', KEY_HEADINGS, rows),
        )
      : el('p', { text: 'No API keys yet.' }),
  ];
  if (canWrite()) content.push(createForm(configs.map((c) => String(c.slug))));
  return content;
}

const KEY_HEADINGS = [
  'Key id',
  'Name',
  'User id',
  'Groups',
  'Config',
  'Key',
  'Expires',
  'Last used',
  'Created',
  'Actions',
];

/** The create form; `configSlugs` are the named configs a key may carry. */
function createForm(configSlugs: string[]): HTMLFormElement {
  return formOf(
    'Create an API key',
    [
      { name: 'name', label: 'Name', hint: 'What the key is for.' },
      {
        name: 'user_id',
        label: 'User id',
        required: true,
        param: 'user.user_id',
        hint: 'Policies name callers by it.',
      },
      { name: 'groups', label: 'Groups', param: 'user.groups', hint: 'Comma-separated, such as support, eu.' },
      { name: 'email', label: 'Email', param: 'user.email' },
      { name: 'username', label: 'Username', param: 'user.username' },
      {
        name: 'config',
        label: 'Config',
        type: 'select',
        options: [['', 'None'], ...configSlugs.map((slug): [string, string] => [slug, slug])],
        hint: "A named config (Configs page) the key's calls use unless they send x-gateway-config.",
      },
      {
        name: 'expiresAt',
        label: 'Expires',
        type: 'datetime-local',
        param: 'expiresAt',
        hint: 'Your time zone; empty for a key that does not expire.',
      },
    ],
    'Create key',
    async (form) => {
      const user: Json = { user_id: value(form, 'user_id') };
      const groups = list(value(form, 'groups'), /,+/);
      if (groups.length) user.groups = groups;
      if (value(form, 'email')) user.email = value(form, 'email');
      if (value(form, 'username')) user.username = value(form, 'username');
      let expiresAt: string | undefined;
      if (value(form, 'expiresAt')) {
        const at = new Date(value(form, 'expiresAt'));
        if (Number.isNaN(at.getTime())) return refuse(form, 'expiresAt', 'Choose a date and time.');
        if (at.getTime() <= Date.now()) return refuse(form, 'expiresAt', 'Choose a time in the future.');
        expiresAt = at.toISOString();
      }
      const created = await write(form, 'POST', '/api-keys', {
        user,
        ...(value(form, 'name') ? { name: value(form, 'name') } : {}),
        ...(value(form, 'config') ? { config: value(form, 'config') } : {}),
        ...(expiresAt ? { expiresAt } : {}),
      });
      if (!created) return;
      await rerender();
      showKeyOnce(String(created.key), String(created.id ?? ''));
    },
  );
}

/** Shows a new key once: it is in this page's memory only until the next navigation. */
function showKeyOnce(key: string, id: string): void {
  const input = el('input', { id: 'new-key', readonly: true, 'aria-describedby': 'new-key-hint' });
  input.value = key;
  const panel = el(
    'section',
    { class: 'panel once', 'aria-labelledby': 'new-key-title' },
    el('h2', { id: 'new-key-title', text: 'Your new API key' }),
    el('p', {
      id: 'new-key-hint',
      text: 'Copy it now: it is shown once. Afterwards only its last four characters are shown.',
    }),
    el('label', { for: 'new-key', text: 'API key' }),
    input,
    button('Copy key', () => void navigator.clipboard.writeText(key).then(() => say('Key copied.')), 'primary'),
    ...(id ? [el('p', {}, 'Its id, for policies: ', copyable(id, 'Key id'))] : []),
  );
  (main.querySelector('#key-once') ?? main).replaceChildren(panel);
  input.focus();
  input.select();
}
