/** The "MCP servers" page: each server with its forwarding settings, editable in place, and its pinned tools. */
import { api, dataOf, type ApiError } from '../lib/api.js';
import { button, el, heading, recordItem, say, table, when, type Json } from '../lib/dom.js';
import {
  checked,
  field,
  formOf,
  list,
  openedBy,
  refuse,
  requireSecretsWhenRoutingChanges,
  secret,
  value,
  write,
  type Field,
} from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteOrNote, testButton } from '../lib/records.js';

function verificationSnippet(url: string): string {
  const origin = window.location.origin;
  return [
    "import { createRemoteJWKSet, jwtVerify } from 'jose';",
    '',
    `const gatewayKeys = createRemoteJWKSet(new URL('${origin}/.well-known/jwks.json'));`,
    '',
    '// In the MCP server, for every request the gateway forwards:',
    "const token = req.headers['x-user-jwt'];",
    'const { payload } = await jwtVerify(token, gatewayKeys, {',
    "  algorithms: ['RS256'],",
    `  audience: '${url}',`,
    '});',
    '// payload.sub, payload.email, … are the caller the gateway authenticated.',
  ].join('\n');
}

interface Forwarding {
  method?: string;
  include_claims?: string[];
  header_name?: string;
  jwt_expiry_seconds?: number;
}
interface ForwardHeaders {
  mode?: string;
  headers?: string[];
}

/** An MCP server's `upstream_auth` as answered: secrets only as hints. */
interface UpstreamAuth {
  type?: string;
  scopes?: string[];
  authorization_server?: string;
  token_endpoint?: string;
  issuer?: string;
  audience?: string;
  resource?: string;
  client?: { client_id?: string; client_secretHint?: string; token_endpoint_auth_method?: string };
  /** Header name to the hint of its value. */
  headers?: Record<string, string>;
}

const UPSTREAM_TYPES: [string, string][] = [
  ['', 'None: the server trusts the gateway'],
  ['oauth', "Each user's own token from the server's authorization server (oauth)"],
  ['token_exchange', 'A token the identity provider mints for this server (token_exchange)'],
  ['static', 'Shared service headers (static)'],
];
const AUTH_METHODS: [string, string][] = [
  ['', 'Default (client_secret_basic with a secret, none without)'],
  ['client_secret_basic', 'client_secret_basic'],
  ['client_secret_post', 'client_secret_post'],
  ['none', 'none'],
];

/** What a server's upstream credentials are, one line each (secrets only as hints). */
function upstreamLines(s: Json): string[] {
  const auth = s.upstream_auth as UpstreamAuth | undefined;
  if (!auth?.type) return ['Upstream credentials: none'];
  const lines = [`Upstream credentials: ${auth.type}`];
  if (auth.authorization_server) lines.push(`Authorization server: ${auth.authorization_server}`);
  if (auth.token_endpoint) lines.push(`Token endpoint: ${auth.token_endpoint}`);
  if (auth.issuer) lines.push(`Issuer: ${auth.issuer}`);
  if (auth.audience) lines.push(`Audience: ${auth.audience}`);
  if (auth.resource) lines.push(`Resource: ${auth.resource}`);
  if (auth.scopes?.length) lines.push(`Scopes: ${auth.scopes.join(' ')}`);
  if (auth.client?.client_id)
    lines.push(
      `Client: ${auth.client.client_id}${auth.client.client_secretHint ? `, secret ${auth.client.client_secretHint}` : ''}`,
    );
  if (auth.headers)
    lines.push(
      `Headers: ${Object.entries(auth.headers)
        .map(([name, hint]) => `${name} ${hint}`)
        .join(', ')}`,
    );
  return lines;
}

const METHODS: [string, string][] = [
  ['', 'None'],
  ['claims_header', 'Claims header (claims_header)'],
  ['bearer', "The caller's own token (bearer)"],
  ['jwt_header', 'A JWT the gateway signs (jwt_header)'],
];
const FORWARD_MODES: [string, string][] = [
  ['', 'All but protected and hop-by-hop headers'],
  ['all-except', 'All except the ones listed'],
  ['only', 'Only the ones listed'],
];

/** What a server's forwarding settings do, one line each. */
function forwardingLines(s: Json): string[] {
  const forwarding = (s.user_identity_forwarding ?? {}) as Forwarding;
  const headers = (s.forward_headers ?? {}) as ForwardHeaders;
  const lines = [`Identity forwarding: ${forwarding.method ?? 'none'}`];
  if (forwarding.method === 'claims_header' || forwarding.method === 'jwt_header') {
    lines.push(
      `Header: ${forwarding.header_name ?? (forwarding.method === 'jwt_header' ? 'X-User-JWT' : 'X-User-Claims')}`,
      `Claims: ${forwarding.include_claims?.length ? forwarding.include_claims.join(', ') : 'the default set'}`,
    );
  }
  if (forwarding.method === 'jwt_header') {
    lines.push(`Token lifetime: ${String(forwarding.jwt_expiry_seconds ?? 300)} s`);
    if (s.jwt_audience) lines.push(`Token audience: ${String(s.jwt_audience)}`);
  }
  if (forwarding.method === 'bearer' && s.bearer_audience) lines.push(`Token audience: ${String(s.bearer_audience)}`);
  lines.push(
    `Client headers forwarded: ${
      headers.mode === 'only'
        ? `only ${(headers.headers ?? []).join(', ') || 'none'}`
        : headers.mode === 'all-except'
          ? `all except ${(headers.headers ?? []).join(', ') || 'none'}`
          : 'all but protected and hop-by-hop headers'
    }`,
  );
  return lines;
}

/** A bearer server needs the caller's own identity-provider token, which the console does not have. */
function bearerNote(): HTMLElement {
  return el('span', {
    class: 'hint',
    text: "Test is not available here: this server receives the caller's own identity-provider token (bearer), and the console has none to send. Test it from a client signed in with a token.",
  });
}

export async function mcpPage(): Promise<HTMLElement[]> {
  const servers = dataOf(await api('GET', '/mcp-servers'));
  const items = el('ul', { class: 'records' });
  for (const s of servers) {
    const slug = String(s.slug);
    const forwarding = (s.user_identity_forwarding ?? {}) as Forwarding;
    const pinned = s.tool_pinning === true;
    const lines = [
      `URL ${String(s.url)}`,
      ...forwardingLines(s),
      ...upstreamLines(s),
      `Tool pinning: ${pinned ? 'on (new and changed tools are held until approved)' : 'off'}`,
      `Source: ${String(s.source)}`,
    ];
    const extra: HTMLElement[] = [];
    const tools = el('div');
    const editor = el('div');
    const connections = el('div');
    const perUser = (s.upstream_auth as UpstreamAuth | undefined)?.type === 'oauth';
    if (pinned) extra.push(tools);
    if (perUser) extra.push(connections);
    if (forwarding.method === 'jwt_header') {
      const snippet = verificationSnippet(String(s.jwt_audience ?? s.url)).replace(
        "'x-user-jwt'",
        `'${(forwarding.header_name ?? 'X-User-JWT').toLowerCase()}'`,
      );
      extra.push(
        el(
          'details',
          {},
          el('summary', { text: 'Verification snippet' }),
          el('pre', {}, el('code', { text: snippet })),
          button(
            'Copy the verification snippet',
            () => void navigator.clipboard.writeText(snippet).then(() => say('Snippet copied.')),
          ),
        ),
      );
    }
    const writable = canWrite() && s.source !== 'config';
    items.append(
      recordItem(
        `/mcp/${slug}`,
        lines,
        ...(writable ? [button('Edit', () => serverForm(editor, s), 'secondary', `Edit ${slug}`)] : []),
        pinned ? button('Tools', () => void toolsPanel(tools, slug), 'secondary', `Tools of ${slug}`) : el('span'),
        perUser
          ? button('Connections', () => void connectionsPanel(connections, slug), 'secondary', `Connections of ${slug}`)
          : el('span'),
        forwarding.method === 'bearer' ? bearerNote() : (testButton('mcp-servers', slug) ?? el('span')),
        deleteOrNote(s.source === 'config', 'mcp-servers', slug, `MCP server ${slug}`),
        editor,
        ...extra,
      ),
    );
  }
  const content = [heading('MCP servers'), servers.length ? items : el('p', { text: 'No MCP servers yet.' })];
  if (canWrite()) content.push(serverForm(undefined, undefined));
  return content;
}

/**
 * The register form (no server) or the edit form of a server, shown in `container`: URL,
 * identity forwarding and its settings, client headers, tool pinning.
 */
function serverForm(container: HTMLElement | undefined, server: Json | undefined): HTMLFormElement {
  const slug = server ? String(server.slug) : '';
  const forwarding = (server?.user_identity_forwarding ?? {}) as Forwarding;
  const headers = (server?.forward_headers ?? {}) as ForwardHeaders;
  const upstream = (server?.upstream_auth ?? {}) as UpstreamAuth;
  const methodFields = el('div');
  const upstreamFields = el('div');
  const fields: (Field | HTMLElement)[] = [
    ...(server ? [] : [{ name: 'slug', label: 'Slug', required: true, hint: 'Served at /mcp/<slug>.' }]),
    { name: 'url', label: 'URL', type: 'url', required: true, value: server ? String(server.url) : undefined },
    {
      name: 'method',
      label: 'Identity forwarding',
      type: 'select',
      param: 'user_identity_forwarding.method',
      options: server?.user_identity_forwarding ? METHODS.slice(1) : METHODS,
      value: forwarding.method ?? '',
    },
    methodFields,
    {
      name: 'forwardMode',
      label: 'Forward client headers',
      type: 'select',
      param: 'forward_headers.mode',
      options: FORWARD_MODES,
      value: headers.mode ?? '',
    },
    {
      name: 'forwardHeaders',
      label: 'Headers',
      hint: 'Comma-separated.',
      param: 'forward_headers.headers',
      value: (headers.headers ?? []).join(', '),
    },
    {
      name: 'upstreamType',
      label: 'Upstream credentials',
      type: 'select',
      param: 'upstream_auth.type',
      options: UPSTREAM_TYPES,
      value: upstream.type ?? '',
    },
    upstreamFields,
    {
      name: 'tool_pinning',
      label: 'Pin tools: hold every new or changed tool until it is approved here',
      type: 'checkbox',
      value: String(server?.tool_pinning === true),
    },
  ];
  const form = formOf(
    server ? `Settings of /mcp/${slug}` : 'Register an MCP server',
    fields,
    server ? 'Save server' : 'Register server',
    async (f) => {
      const method = value(f, 'method');
      const next: Json = { method };
      if (method === 'claims_header' || method === 'jwt_header') {
        const claims = list(value(f, 'include_claims'));
        if (claims.length) next.include_claims = claims;
        if (value(f, 'header_name')) next.header_name = value(f, 'header_name');
      }
      if (method === 'jwt_header' && value(f, 'jwt_expiry_seconds')) {
        const seconds = Number(value(f, 'jwt_expiry_seconds'));
        if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) {
          refuse(
            f,
            'user_identity_forwarding.jwt_expiry_seconds',
            'The token lifetime must be a whole number of seconds from 1 to 86400.',
          );
          return;
        }
        next.jwt_expiry_seconds = seconds;
      }
      const forwardMode = value(f, 'forwardMode');
      const upstreamAuth = upstreamAuthOf(f, upstream);
      if (upstreamAuth === false) return;
      const body: Json = {
        url: value(f, 'url'),
        ...(method ? { user_identity_forwarding: next } : {}),
        ...(forwardMode ? { forward_headers: { mode: forwardMode, headers: list(value(f, 'forwardHeaders')) } } : {}),
        // Left as none on a server that had upstream credentials: removed (null).
        ...(upstreamAuth !== undefined
          ? { upstream_auth: upstreamAuth }
          : server?.upstream_auth
            ? { upstream_auth: null }
            : {}),
      };
      if (server) {
        body.tool_pinning = checked(f, 'tool_pinning');
        if (await write(f, 'PATCH', `/mcp-servers/${encodeURIComponent(slug)}`, { version: server.version, ...body })) {
          say(`MCP server ${slug} saved.`);
          await rerender();
        }
        return;
      }
      const created = await write(f, 'POST', '/mcp-servers', {
        slug: value(f, 'slug'),
        ...body,
        ...(checked(f, 'tool_pinning') ? { tool_pinning: true } : {}),
      });
      if (created) {
        say(`MCP server ${String(created.slug)} registered.`);
        await rerender();
      }
    },
  );
  const methodSelect = form.elements.namedItem('method') as HTMLSelectElement;
  const showMethodFields = () => {
    const method = methodSelect.value;
    const extra: Field[] = [];
    if (method === 'claims_header' || method === 'jwt_header') {
      extra.push(
        {
          name: 'include_claims',
          label: 'Claims to include',
          hint: 'Comma-separated, such as sub, email, groups.',
          param: 'user_identity_forwarding.include_claims',
          value: (forwarding.include_claims ?? []).join(', '),
        },
        {
          name: 'header_name',
          label: 'Header name',
          hint: method === 'jwt_header' ? 'Default X-User-JWT.' : 'Default X-User-Claims.',
          param: 'user_identity_forwarding.header_name',
          value: forwarding.header_name ?? '',
        },
      );
    }
    if (method === 'jwt_header') {
      extra.push({
        name: 'jwt_expiry_seconds',
        label: 'Token lifetime (seconds)',
        type: 'number',
        hint: 'Default 300.',
        param: 'user_identity_forwarding.jwt_expiry_seconds',
        value: forwarding.jwt_expiry_seconds === undefined ? '' : String(forwarding.jwt_expiry_seconds),
      });
    }
    methodFields.replaceChildren(...extra.map(field));
  };
  methodSelect.addEventListener('change', showMethodFields);
  showMethodFields();
  const upstreamSelect = form.elements.namedItem('upstreamType') as HTMLSelectElement;
  const showUpstreamFields = () => {
    upstreamFields.replaceChildren(
      ...upstreamFieldsOf(upstreamSelect.value, upstream, server !== undefined).map(field),
    );
    // Header values are secrets: never kept in a draft when the session ends (drafts.ts).
    const headersInput = form.elements.namedItem('static_headers') as HTMLTextAreaElement | null;
    if (headersInput) headersInput.dataset.secret = '';
  };
  upstreamSelect.addEventListener('change', showUpstreamFields);
  showUpstreamFields();
  if (server?.upstream_auth) {
    // Where the secrets go moved: the admin API wants each stored secret again.
    const held = [
      ...(upstream.client?.client_secretHint ? ['client_secret'] : []),
      ...(upstream.headers ? ['static_headers'] : []),
    ];
    requireSecretsWhenRoutingChanges(
      form,
      ['url', 'upstreamType', 'authorization_server', 'token_endpoint', 'issuer'],
      held,
    );
  }
  if (container && server) {
    container.replaceChildren(openedBy(form, `Edit ${slug}`));
    (form.querySelector('input') as HTMLElement).focus();
  }
  return form;
}

/** The inputs of an upstream credentials type, filled from the server's (secrets empty: write-only). */
function upstreamFieldsOf(type: string, upstream: UpstreamAuth, editing: boolean): Field[] {
  const same = upstream.type === type;
  const keep = (hint: string | undefined) =>
    editing && hint
      ? `Stored: ${hint}. Leave empty to keep it (needed again when the URL or the token endpoint changes).`
      : undefined;
  const scopes: Field = {
    name: 'scopes',
    label: 'Scopes',
    hint: 'Space- or comma-separated. Default: the ones the server supports.',
    param: 'upstream_auth.scopes',
    value: same ? (upstream.scopes ?? []).join(' ') : '',
  };
  const client: Field[] = [
    {
      name: 'client_id',
      label: 'Client id',
      required: type === 'token_exchange',
      hint:
        type === 'oauth'
          ? "Leave empty to use the gateway's client metadata document or dynamic registration."
          : undefined,
      param: 'upstream_auth.client.client_id',
      value: same ? (upstream.client?.client_id ?? '') : '',
    },
    {
      name: 'client_secret',
      label: 'Client secret',
      type: 'password',
      hint: keep(same ? upstream.client?.client_secretHint : undefined),
      param: 'upstream_auth.client.client_secret',
    },
    {
      name: 'token_endpoint_auth_method',
      label: 'Client authentication',
      type: 'select',
      options: AUTH_METHODS,
      param: 'upstream_auth.client.token_endpoint_auth_method',
      value: same ? (upstream.client?.token_endpoint_auth_method ?? '') : '',
    },
  ];
  if (type === 'oauth')
    return [
      scopes,
      {
        name: 'authorization_server',
        label: 'Authorization server (issuer)',
        type: 'url',
        hint: "Default: discovered from the server's protected resource metadata.",
        param: 'upstream_auth.authorization_server',
        value: same ? (upstream.authorization_server ?? '') : '',
      },
      ...client,
    ];
  if (type === 'token_exchange')
    return [
      {
        name: 'token_endpoint',
        label: 'Token endpoint',
        type: 'url',
        hint: "Default: the issuer's metadata.",
        param: 'upstream_auth.token_endpoint',
        value: same ? (upstream.token_endpoint ?? '') : '',
      },
      {
        name: 'issuer',
        label: 'Issuer',
        type: 'url',
        hint: 'Default: the jwt_validation issuer.',
        param: 'upstream_auth.issuer',
        value: same ? (upstream.issuer ?? '') : '',
      },
      {
        name: 'audience',
        label: 'Audience',
        param: 'upstream_auth.audience',
        value: same ? (upstream.audience ?? '') : '',
      },
      {
        name: 'resource',
        label: 'Resource',
        hint: "Default (with no audience): the server's URL.",
        param: 'upstream_auth.resource',
        value: same ? (upstream.resource ?? '') : '',
      },
      scopes,
      ...client,
    ];
  if (type === 'static') {
    const stored = same ? Object.entries(upstream.headers ?? {}) : [];
    return [
      {
        name: 'static_headers',
        label: 'Service headers',
        type: 'textarea',
        required: !editing || stored.length === 0,
        hint: stored.length
          ? `One "Name: value" a line. Stored: ${stored.map(([name, hint]) => `${name} ${hint}`).join(', ')}. A line with the name alone keeps its stored value; a stored header left out is removed; empty: all kept.`
          : 'One "Name: value" a line, such as "Authorization: Bearer …". Values are stored encrypted and never shown again.',
        param: 'upstream_auth.headers',
      },
    ];
  }
  return [];
}

/**
 * The `upstream_auth` the form says: undefined for none, false when the form was refused (the
 * error is shown). Secrets left empty are left out (kept by the admin API).
 */
function upstreamAuthOf(f: HTMLFormElement, stored: UpstreamAuth): Json | undefined | false {
  const type = value(f, 'upstreamType');
  if (!type) return undefined;
  const auth: Json = { type };
  const has = (name: string) => f.elements.namedItem(name) !== null && value(f, name) !== '';
  if (type === 'static') {
    const text = secret(f, 'static_headers');
    if (text.trim() === '')
      return stored.type === 'static'
        ? { type }
        : (refuse(f, 'upstream_auth.headers', 'Enter at least one header.'), false);
    const headers: Record<string, string | null> = {};
    for (const line of text.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      const name = (colon === -1 ? line : line.slice(0, colon)).trim();
      const given = colon === -1 ? '' : line.slice(colon + 1).trim();
      if (given === '' && !Object.hasOwn(stored.headers ?? {}, name)) {
        refuse(f, 'upstream_auth.headers', `Give a value for ${name}, as "${name}: value".`);
        return false;
      }
      headers[name] = given === '' ? null : given;
    }
    auth.headers = headers;
    return auth;
  }
  const scopes = list(value(f, 'scopes'), /[\s,]+/);
  if (scopes.length) auth.scopes = scopes;
  for (const name of ['authorization_server', 'token_endpoint', 'issuer', 'audience', 'resource'])
    if (has(name)) auth[name] = value(f, name);
  if (has('client_id')) {
    const client: Json = { client_id: value(f, 'client_id') };
    if (secret(f, 'client_secret')) client.client_secret = secret(f, 'client_secret');
    if (has('token_endpoint_auth_method')) client.token_endpoint_auth_method = value(f, 'token_endpoint_auth_method');
    auth.client = client;
  }
  return auth;
}

/** The upstream connections of an `oauth` server: who, since when, scopes, expiry, last refresh, and a revoke button. */
async function connectionsPanel(container: HTMLElement, slug: string): Promise<void> {
  const answer = await api('GET', `/mcp-servers/${encodeURIComponent(slug)}/connections?limit=500`);
  const titleId = `connections-${slug}`;
  const section = el(
    'section',
    { class: 'panel', 'aria-labelledby': titleId },
    el('h3', { id: titleId, text: `Connections to /mcp/${slug}`, tabindex: '-1' }),
  );
  if (answer.status >= 400) {
    section.append(el('p', { class: 'error', text: String((answer.body.error as ApiError | undefined)?.message) }));
    container.replaceChildren(section);
    return;
  }
  const connections = answer.body.data as Json[];
  if (connections.length === 0) {
    section.append(el('p', { text: 'No one has connected yet: users connect the first time they call the server.' }));
    container.replaceChildren(section);
    return;
  }
  const rows = connections.map((c) => {
    const user = String(c.user_id);
    return el(
      'tr',
      {},
      el('td', { text: user }),
      el('td', { text: when(c.createdAt) }),
      el('td', { text: Array.isArray(c.scopes) ? c.scopes.join(' ') : '' }),
      el('td', { text: when(c.expiresAt, 'not said') }),
      el('td', { text: when(c.lastRefreshedAt) }),
      el(
        'td',
        {},
        canWrite()
          ? button(
              'Revoke',
              () =>
                void api(
                  'DELETE',
                  `/mcp-servers/${encodeURIComponent(slug)}/connections/${encodeURIComponent(user)}`,
                ).then(async ({ status: code, body }) => {
                  say(
                    code < 300
                      ? `The connection of ${user} to ${slug} is revoked.`
                      : String((body.error as ApiError | undefined)?.message ?? 'Refused.'),
                  );
                  await connectionsPanel(container, slug);
                }),
              'secondary',
              `Revoke the connection of ${user}`,
            )
          : el('span'),
      ),
    );
  });
  section.append(
    table(
      `${connections.length} connection(s), oldest first${answer.body.has_more === true ? ' (the first 500)' : ''}`,
      ['User', 'Connected', 'Scopes', 'Token expires', 'Last refresh', ''],
      rows,
    ),
  );
  container.replaceChildren(section);
}

function toolDigest(label: string, digest: unknown): HTMLElement {
  return el('p', {
    class: 'digest',
    text: `${label} ${digest === null || digest === undefined ? '—' : String(digest)}`,
  });
}

/** The pinned tools of a server: held ones first, the approved and the current description side by side. */
async function toolsPanel(container: HTMLElement, slug: string): Promise<void> {
  const answer = await api('GET', `/mcp-servers/${encodeURIComponent(slug)}/tools`);
  const titleId = `tools-${slug}`;
  const section = el(
    'section',
    { class: 'panel', 'aria-labelledby': titleId },
    el('h3', { id: titleId, text: `Tools of /mcp/${slug}`, tabindex: '-1' }),
  );
  if (answer.status >= 400) {
    section.append(el('p', { class: 'error', text: String((answer.body.error as ApiError | undefined)?.message) }));
    container.replaceChildren(section);
    return;
  }
  const tools = answer.body.data as Json[];
  if (tools.length === 0) {
    section.append(
      el('p', { text: 'No tools seen yet: each is recorded, and held, the first time a client lists the tools.' }),
    );
  }
  const items = el('ul', { class: 'records' });
  for (const tool of tools) {
    const name = String(tool.name);
    const held = tool.status === 'held';
    const state = held ? (tool.approvedDigest === null ? 'held: new' : 'held: changed since approved') : 'approved';
    items.append(
      el(
        'li',
        { class: `record tool ${held ? 'held' : 'approved'}` },
        el('h4', { text: `${name} (${state})` }),
        el(
          'div',
          { class: 'compare' },
          el(
            'div',
            {},
            el('h5', { text: 'Approved description' }),
            el('p', {
              text:
                tool.approvedDigest === null
                  ? 'Never approved.'
                  : String(tool.approvedDescription ?? '(no description)'),
            }),
            toolDigest('Digest', tool.approvedDigest),
          ),
          el(
            'div',
            {},
            el('h5', { text: 'Description as last listed' }),
            el('p', { text: String(tool.currentDescription ?? '(no description)') }),
            toolDigest('Digest', tool.currentDigest),
          ),
        ),
        tool.approvedAt
          ? el('p', {
              class: 'hint',
              text: `Approved ${new Date(String(tool.approvedAt)).toLocaleString()} by ${String(tool.approvedBy)}`,
            })
          : undefined,
        held && canWrite()
          ? button(
              'Approve',
              () =>
                void api(
                  'POST',
                  `/mcp-servers/${encodeURIComponent(slug)}/tools/${encodeURIComponent(name)}/approve`,
                  // The digest shown: the gateway approves only that version of the tool.
                  { digest: String(tool.currentDigest) },
                ).then(async ({ status: code, body }) => {
                  say(
                    code < 300
                      ? `Tool ${name} approved.`
                      : String((body.error as ApiError | undefined)?.message ?? 'Refused.'),
                  );
                  await toolsPanel(container, slug);
                }),
              'primary',
              `Approve tool ${name}`,
            )
          : undefined,
      ),
    );
  }
  if (tools.length) section.append(items);
  container.replaceChildren(section);
}
