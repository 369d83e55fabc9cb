/** The "MCP servers" page: each server with its forwarding settings, editable in place, and its pinned tools. */
import { api, dataOf, type ApiError } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
import { checked, field, formOf, list, openedBy, refuse, value, write, type Field } from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteButton, fromConfigNote, testButton } from '../lib/records.js';

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
      `Tool pinning: ${pinned ? 'on (new and changed tools are held until approved)' : 'off'}`,
      `Source: ${String(s.source)}`,
    ];
    const extra: HTMLElement[] = [];
    const tools = el('div');
    const editor = el('div');
    if (pinned) extra.push(tools);
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
        forwarding.method === 'bearer' ? bearerNote() : (testButton('mcp-servers', slug) ?? el('span')),
        s.source === 'config'
          ? fromConfigNote()
          : canWrite()
            ? deleteButton('mcp-servers', slug, `MCP server ${slug}`)
            : el('span'),
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
  const methodFields = el('div');
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
      const body: Json = {
        url: value(f, 'url'),
        ...(method ? { user_identity_forwarding: next } : {}),
        ...(forwardMode ? { forward_headers: { mode: forwardMode, headers: list(value(f, 'forwardHeaders')) } } : {}),
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
  if (container && server) {
    container.replaceChildren(openedBy(form, `Edit ${slug}`));
    (form.querySelector('input') as HTMLElement).focus();
  }
  return form;
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
