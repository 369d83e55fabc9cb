/** The "Connected apps" page: OAuth settings, clients and grants (CONTRACT section 11). */
import { api, type ApiError } from '../lib/api.js';
import { button, el, heading, say, table, when, type Json } from '../lib/dom.js';
import { formOf, list, showError, value, write } from '../lib/forms.js';
import { hashParams, navigate, rerender } from '../lib/nav.js';
import { canAdmin } from '../lib/records.js';

/** The hosts of a client's redirect URIs, each once (a URI that does not parse is shown as it is). */
function redirectHosts(uris: unknown): string {
  const hosts = new Set<string>();
  for (const uri of Array.isArray(uris) ? uris.slice(0, 50) : []) {
    try {
      hosts.add(new URL(String(uri)).host);
    } catch {
      hosts.add(String(uri));
    }
  }
  return [...hosts].join(', ');
}

function grantStatus(grant: Json): string {
  if (grant.revokedAt)
    return `Revoked ${when(grant.revokedAt)}${grant.revokedReason ? ` (${String(grant.revokedReason)})` : ''}`;
  if (typeof grant.expiresAt === 'string' && Date.parse(grant.expiresAt) <= Date.now()) return 'Expired';
  return 'Active';
}

const SETTINGS_SOURCES: Record<string, string> = {
  none: 'OAuth is off.',
  catalog: 'Set here (stored in the catalog).',
  config: "Set by the gateway's config file.",
};

/** The "OAuth settings" section: the settings in force (the secret only as its hint), and a form to change them. */
async function oauthSettingsSection(): Promise<HTMLElement | undefined> {
  const answer = await api('GET', '/oauth/settings');
  if (answer.status === 404) return undefined;
  const section = el('section', { 'aria-label': 'OAuth settings' }, el('h2', { text: 'OAuth settings' }));
  if (answer.status >= 400) {
    const message = String((answer.body.error as ApiError | undefined)?.message ?? 'The settings cannot be read.');
    section.append(el('p', { class: 'error', role: 'alert', text: message }));
    return section;
  }
  const settings = answer.body;
  const source = String(settings.source ?? 'none');
  const login = (settings.login ?? {}) as Json;
  const lines = [`Source: ${SETTINGS_SOURCES[source] ?? source}`];
  if (source !== 'none') {
    lines.push(`Login: ${login.type === 'oidc' ? 'OpenID Provider' : 'API key'}`);
    if (login.type === 'oidc') {
      lines.push(`Issuer: ${String(login.issuer ?? '')}`, `Client id: ${String(login.clientId ?? '')}`);
      lines.push(`Client secret: ${String(login.clientSecretHint ?? '(none)')}`);
      if (Array.isArray(login.scopes)) lines.push(`Scopes: ${login.scopes.map(String).join(' ')}`);
    }
    if (settings.accessTokenTtlSeconds !== undefined)
      lines.push(`Access token lifetime: ${String(settings.accessTokenTtlSeconds)} s`);
    if (settings.refreshTokenTtlSeconds !== undefined)
      lines.push(`Refresh token lifetime: ${String(settings.refreshTokenTtlSeconds)} s`);
  }
  section.append(el('div', { class: 'settings-current' }, ...lines.map((line) => el('p', { text: line }))));
  if (source === 'config' || !canAdmin()) {
    section.append(
      el('p', {
        text:
          source === 'config'
            ? "These settings come from the config file's oauth object: change them there (read-only here)."
            : 'Only an admin can change them.',
      }),
    );
    return section;
  }
  const form = formOf(
    'Change OAuth settings',
    [
      {
        name: 'type',
        label: 'Login',
        type: 'select',
        options: [
          ['api_key', 'API key'],
          ['oidc', 'OpenID Provider'],
        ],
        value: login.type === 'oidc' ? 'oidc' : 'api_key',
        param: 'login.type',
      },
      { name: 'issuer', label: 'Issuer', type: 'url', value: String(login.issuer ?? ''), param: 'login.issuer' },
      { name: 'clientId', label: 'Client id', value: String(login.clientId ?? ''), param: 'login.clientId' },
      {
        name: 'clientSecret',
        label: 'Client secret',
        type: 'password',
        hint: 'Blank keeps the stored secret.',
        param: 'login.clientSecret',
      },
      {
        name: 'scopes',
        label: 'Scopes',
        value: Array.isArray(login.scopes) ? login.scopes.map(String).join(' ') : '',
        hint: 'Separated by spaces; empty for the default.',
        param: 'login.scopes',
      },
      {
        name: 'accessTokenTtlSeconds',
        label: 'Access token lifetime (seconds)',
        type: 'number',
        value: settings.accessTokenTtlSeconds === undefined ? '' : String(settings.accessTokenTtlSeconds),
        hint: 'Empty for the default.',
      },
      {
        name: 'refreshTokenTtlSeconds',
        label: 'Refresh token lifetime (seconds)',
        type: 'number',
        value: settings.refreshTokenTtlSeconds === undefined ? '' : String(settings.refreshTokenTtlSeconds),
        hint: 'Empty for the default.',
      },
    ],
    'Save OAuth settings',
    async (f) => {
      const type = value(f, 'type');
      const body: Json = {
        login:
          type === 'oidc'
            ? {
                type,
                issuer: value(f, 'issuer'),
                clientId: value(f, 'clientId'),
                ...(value(f, 'clientSecret') ? { clientSecret: value(f, 'clientSecret') } : {}),
                ...(value(f, 'scopes') ? { scopes: list(value(f, 'scopes'), /\s+/) } : {}),
              }
            : { type },
      };
      for (const name of ['accessTokenTtlSeconds', 'refreshTokenTtlSeconds'])
        if (value(f, name)) body[name] = Number(value(f, name));
      if (allowedHosts(settings) !== undefined) body.allowedClientHosts = allowedHosts(settings);
      if ((await write(f, 'PUT', '/oauth/settings', body)) === undefined) return;
      say('OAuth settings saved.');
      void rerender();
    },
  );
  section.append(form);
  if (source === 'catalog')
    section.append(
      button(
        'Turn off OAuth',
        () => {
          if (!window.confirm('Turn off OAuth? MCP clients can no longer sign in, and their tokens stop working.'))
            return;
          void api('DELETE', '/oauth/settings').then(({ status: code, body }) => {
            say(code < 300 ? 'OAuth is off.' : String((body.error as ApiError | undefined)?.message ?? 'Refused.'));
            void rerender();
          });
        },
        'danger',
      ),
    );
  return section;
}

function allowedHosts(settings: Json): unknown[] | undefined {
  return Array.isArray(settings.allowedClientHosts) ? settings.allowedClientHosts : undefined;
}

export async function connectedAppsPage(): Promise<HTMLElement[]> {
  const title = heading('Connected apps');
  const settingsSection = await oauthSettingsSection();
  const clientsAnswer = await api('GET', '/oauth/clients');
  if (clientsAnswer.status === 404 && (clientsAnswer.body.error as ApiError | undefined)?.code === 'oauth_disabled') {
    const off = el('p', {
      text: 'OAuth is off: MCP clients cannot sign in at this gateway. Set the OAuth settings below (or an oauth object in the config file) to turn it on.',
    });
    return settingsSection ? [title, off, settingsSection] : [title, off];
  }
  if (clientsAnswer.status >= 400) {
    const message = String(
      (clientsAnswer.body.error as ApiError | undefined)?.message ?? 'The clients cannot be read.',
    );
    return [title, el('p', { class: 'error', role: 'alert', text: message })];
  }
  const clients = clientsAnswer.body.data as Json[];
  const names = new Map<string, string>();
  for (const c of clients) names.set(String(c.client_id), String(c.client_name ?? ''));
  const clientRows = clients.map((c) =>
    el(
      'tr',
      {},
      el('td', { text: String(c.client_name ?? '(no name)') }),
      el('td', { class: 'code', text: String(c.client_id) }),
      el('td', { text: redirectHosts(c.redirect_uris) }),
      el('td', { text: /^https?:\/\//.test(String(c.client_id)) ? 'Metadata document' : 'Registered' }),
      el('td', { text: when(c.created_at) }),
    ),
  );

  const user = hashParams().get('user') ?? '';
  const filter = formOf(
    'Filter grants',
    [{ name: 'user', label: 'User id', value: user, hint: 'Only the grants of this user; empty for every user.' }],
    'Show',
    async (form) => {
      const u = value(form, 'user');
      navigate(u ? `#/apps?user=${encodeURIComponent(u)}` : '#/apps');
    },
  );
  const grantsAnswer = await api('GET', `/oauth/grants${user ? `?user=${encodeURIComponent(user)}` : ''}`);
  if (grantsAnswer.status >= 400) {
    showError(filter, grantsAnswer);
    return [title, table('Clients', CLIENT_HEADINGS, clientRows), filter];
  }
  const grants = grantsAnswer.body.data as Json[];
  const grantRows = grants.map((g) => {
    const clientId = String(g.clientId);
    const name = names.get(clientId) || clientId;
    const active = grantStatus(g) === 'Active';
    return el(
      'tr',
      {},
      el('td', { text: name }),
      el('td', { text: String(g.user) }),
      el('td', { class: 'code', text: String(g.resource) }),
      el('td', { text: Array.isArray(g.scopes) ? g.scopes.map(String).join(' ') : '' }),
      el('td', { text: when(g.createdAt) }),
      el('td', { text: when(g.lastUsedAt) }),
      el('td', { text: grantStatus(g) }),
      el(
        'td',
        {},
        active && canAdmin() ? revokeGrantButton(String(g.id), `the grant of ${name} to ${String(g.user)}`) : undefined,
      ),
    );
  });
  return [
    title,
    ...(settingsSection ? [settingsSection] : []),
    clients.length ? table('Clients', CLIENT_HEADINGS, clientRows) : el('p', { text: 'No OAuth clients yet.' }),
    filter,
    grants.length
      ? table(
          user ? `Grants of ${user}, newest first` : 'Grants, newest first',
          ['Client', 'User', 'Resource', 'Scopes', 'Created', 'Last used', 'Status', 'Actions'],
          grantRows,
        )
      : el('p', { text: user ? `${user} has no grants.` : 'No grants yet.' }),
  ];
}

const CLIENT_HEADINGS = ['Name', 'Client id', 'Redirect hosts', 'Kind', 'Registered'];

/** Revokes a grant after a confirmation: its tokens stop working on every instance. */
function revokeGrantButton(id: string, what: string): HTMLButtonElement {
  return button(
    'Revoke',
    () => {
      if (!window.confirm(`Revoke ${what}? Its tokens stop working at once. This cannot be undone.`)) return;
      void api('DELETE', `/oauth/grants/${encodeURIComponent(id)}`).then(({ status: code, body }) => {
        say(code < 300 ? `Revoked ${what}.` : String((body.error as ApiError | undefined)?.message ?? 'Refused.'));
        void rerender();
      });
    },
    'danger',
    `Revoke ${what}`,
  );
}
