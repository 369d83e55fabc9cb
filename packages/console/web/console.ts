/**
 * The gateway console's page script. Everything it shows comes from the admin API through
 * `/console/api/…`; secrets typed into forms are sent once and never kept, shown or stored (the
 * page shows only `<field>Hint`). Text from the server is always set as text, never as HTML.
 */

export {};

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  body: Json;
}
interface ApiError {
  message?: string;
  code?: string;
  param?: string | null;
}
interface Field {
  name: string;
  label: string;
  type?: 'text' | 'password' | 'url' | 'number' | 'date' | 'datetime-local' | 'textarea' | 'select' | 'checkbox';
  required?: boolean;
  hint?: string;
  options?: [string, string][];
  /** The admin API's `param` for this field, when it differs from `name`. */
  param?: string;
  value?: string;
  autocomplete?: string;
}

let csrfToken = '';
let testsAvailable = false;
const main = document.getElementById('main') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;
const nav = document.getElementById('nav') as HTMLElement;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean> = {},
  ...children: (Node | string | undefined)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child !== undefined) node.append(child);
  return node;
}

async function api(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`/console/api${path}`, {
    method,
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) {
    signedOut();
    throw new Error('signed out');
  }
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

/** Shows `hash`'s page, also when it is the one already in the address bar. */
function navigate(hash: string): void {
  if (window.location.hash === hash) void render();
  else window.location.hash = hash;
}

function say(message: string): void {
  status.textContent = message;
  window.setTimeout(() => {
    if (status.textContent === message) status.textContent = '';
  }, 6000);
}

let idCounter = 0;
/** A labelled input with its hint and an error slot it is described by. */
function field(spec: Field): HTMLElement {
  const id = `f${++idCounter}`;
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const describedBy = [spec.hint ? hintId : '', errorId].filter(Boolean).join(' ');
  let input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  if (spec.type === 'select') {
    input = el('select', { id, name: spec.name });
    for (const [value, label] of spec.options ?? []) input.append(el('option', { value, text: label }));
    if (spec.value !== undefined) input.value = spec.value;
  } else if (spec.type === 'textarea') {
    input = el('textarea', { id, name: spec.name });
    if (spec.value) input.value = spec.value;
  } else {
    input = el('input', {
      id,
      name: spec.name,
      type: spec.type ?? 'text',
      autocomplete: spec.autocomplete ?? (spec.type === 'password' ? 'new-password' : 'off'),
    });
    if (spec.type === 'checkbox') (input as HTMLInputElement).checked = spec.value === 'true';
    else if (spec.value !== undefined && spec.type !== 'password') input.value = spec.value;
  }
  if (spec.required) input.required = true;
  input.setAttribute('aria-describedby', describedBy);
  input.dataset.param = spec.param ?? spec.name;
  const wrapper = el(
    'div',
    { class: spec.type === 'checkbox' ? 'field inline' : 'field' },
    el('label', { for: id, text: spec.required ? `${spec.label} (required)` : spec.label }),
    input,
    spec.hint ? el('span', { id: hintId, class: 'hint', text: spec.hint }) : undefined,
    el('span', { id: errorId, class: 'error' }),
  );
  if (spec.type === 'checkbox') wrapper.insertBefore(input, wrapper.firstChild);
  return wrapper;
}

function value(form: HTMLFormElement, name: string): string {
  const input = form.elements.namedItem(name) as HTMLInputElement | null;
  return input ? input.value.trim() : '';
}

function checked(form: HTMLFormElement, name: string): boolean {
  return (form.elements.namedItem(name) as HTMLInputElement | null)?.checked ?? false;
}

function list(text: string, separator: RegExp = /[\n,]+/): string[] {
  return text
    .split(separator)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Clears a form's errors, then shows the admin API's error beside the field it names (or at the top). */
function showError(form: HTMLFormElement, answer: Answer | undefined): void {
  for (const slot of form.querySelectorAll('.error')) slot.textContent = '';
  for (const input of form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
  if (!answer) return;
  const error = (answer.body.error ?? {}) as ApiError;
  const message = `${error.message ?? 'The change was refused.'}${error.code ? ` (${error.code})` : ''}`;
  const param = error.param ?? '';
  const inputs = [...form.querySelectorAll<HTMLElement>('[data-param]')];
  const target =
    inputs.find((i) => i.dataset.param === param) ??
    inputs.find((i) => param !== '' && param.startsWith(`${i.dataset.param}.`));
  const slot = target
    ? form.querySelector<HTMLElement>(`[id="${target.id}-error"]`)
    : form.querySelector<HTMLElement>('.form-error');
  if (target) {
    target.setAttribute('aria-invalid', 'true');
    target.focus();
  }
  if (slot) slot.textContent = message;
}

function formOf(
  title: string,
  fields: (Field | HTMLElement)[],
  submit: string,
  onSubmit: (form: HTMLFormElement) => Promise<void>,
) {
  const form = el('form', { novalidate: true, 'aria-label': title });
  form.append(el('h2', { text: title }), el('p', { class: 'error form-error', role: 'alert' }));
  for (const spec of fields) form.append(spec instanceof HTMLElement ? spec : field(spec));
  form.append(el('button', { type: 'submit', text: submit }));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    showError(form, undefined);
    void onSubmit(form).catch(() => undefined);
  });
  return form;
}

/** Sends a write; on refusal shows the error in the form and resolves undefined. */
async function write(form: HTMLFormElement, method: string, path: string, body: unknown): Promise<Json | undefined> {
  const answer = await api(method, path, body);
  if (answer.status >= 400) {
    showError(form, answer);
    return undefined;
  }
  return answer.body;
}

function heading(text: string): HTMLElement {
  return el('h1', { text });
}

function recordItem(title: string, lines: string[], ...actions: HTMLElement[]): HTMLElement {
  return el(
    'li',
    { class: 'record' },
    el('h2', { text: title }),
    ...lines.map((line) => el('p', { text: line })),
    el('div', {}, ...actions),
  );
}

function button(text: string, onClick: () => void, kind = 'secondary', label?: string): HTMLButtonElement {
  const b = el('button', { type: 'button', class: kind, text });
  if (label) b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

function testButton(kind: 'providers' | 'mcp-servers', slug: string): HTMLElement | undefined {
  if (!testsAvailable) return undefined;
  const outcome = el('span', { class: 'outcome', role: 'status' });
  const b = button(
    'Test',
    () => {
      outcome.textContent = 'Testing…';
      outcome.className = 'outcome';
      void api('POST', `/test/${kind}/${encodeURIComponent(slug)}`).then(({ body }) => {
        const ok = body.ok === true;
        outcome.className = `outcome ${ok ? 'ok' : 'failed'}`;
        outcome.textContent = ok
          ? `Works (${String(body.status)}): ${String(body.message)}`
          : `Failed (${String(body.status)}${body.code ? ` ${String(body.code)}` : ''}): ${String(body.message)}`;
      });
    },
    'secondary',
    `Test ${slug}`,
  );
  return el('span', {}, b, outcome);
}

function deleteButton(kind: string, slug: string, what: string, after: () => void): HTMLButtonElement {
  return button(
    kind === 'api-keys' ? 'Revoke' : 'Delete',
    () => {
      if (!window.confirm(`${kind === 'api-keys' ? 'Revoke' : 'Delete'} ${what}? This cannot be undone.`)) return;
      void api('DELETE', `/${kind}/${encodeURIComponent(slug)}`).then(({ status: code, body }) => {
        say(code < 300 ? `${what} removed.` : String((body.error as ApiError | undefined)?.message ?? 'Refused.'));
        after();
      });
    },
    'danger',
    `${kind === 'api-keys' ? 'Revoke' : 'Delete'} ${what}`,
  );
}

const MODEL_MODES: [string, string][] = [
  ['all', 'All models'],
  ['custom', 'Chosen models'],
];

const CACHE_MODES: [string, string][] = [
  ['caller', 'On, each caller its own answers'],
  ['shared', 'On, answers shared by every caller'],
  ['off', 'Off'],
];

/** A provider's `cache` field as the console's select names it. */
function cacheMode(provider: Json): string {
  const cache = provider.cache as { enabled?: boolean; scope?: string } | undefined;
  if (cache?.enabled === false) return 'off';
  return cache?.scope === 'shared' ? 'shared' : 'caller';
}

/** The `cache` field for a select's value. */
function cacheField(mode: string): Json {
  return mode === 'off' ? { enabled: false } : { enabled: true, scope: mode === 'shared' ? 'shared' : 'caller' };
}

// ---- Model catalog ----
async function modelsPage(): Promise<HTMLElement[]> {
  const { body } = await api('GET', '/providers');
  const providers = (body.data as Json[]).filter((p) => p.provider === 'anthropic');
  const items = el('ul', { class: 'records' });
  for (const p of providers) {
    const slug = String(p.slug);
    const models = p.models as { mode: string; models?: string[]; autoEnableNew?: boolean } | undefined;
    const summary =
      !models || models.mode === 'all'
        ? 'All models'
        : `${models.models?.length ?? 0} chosen model(s): ${(models.models ?? []).join(', ') || 'none'}${models.autoEnableNew ? '; new models enabled automatically' : ''}`;
    const editor = el('div');
    items.append(
      recordItem(
        `${String(p.name ?? slug)} (@${slug})`,
        [
          `API key ${String(p.apiKeyHint ?? '')}`,
          `Models: ${summary}`,
          `Response cache: ${(CACHE_MODES.find(([m]) => m === cacheMode(p)) ?? ['', ''])[1]}`,
          `Source: ${String(p.source)}`,
        ],
        button('Models', () => void modelEditor(editor, p), 'secondary', `Models of ${slug}`),
        button('Cache', () => cacheForm(editor, p), 'secondary', `Response cache of ${slug}`),
        button('Rotate key', () => rotateKeyForm(editor, p), 'secondary', `Rotate key of ${slug}`),
        testButton('providers', slug) ?? el('span'),
        deleteButton('providers', slug, `provider @${slug}`, render),
        editor,
      ),
    );
  }
  const add = formOf(
    'Add an Anthropic provider',
    [
      { name: 'name', label: 'Name', required: true },
      { name: 'slug', label: 'Slug', required: true, hint: 'Requests name it as @slug.' },
      { name: 'apiKey', label: 'API key', type: 'password', required: true },
      { name: 'baseUrl', label: 'Base URL', type: 'url', hint: 'Leave empty for https://api.anthropic.com.' },
      { name: 'mode', label: 'Models', type: 'select', options: MODEL_MODES, param: 'models' },
      {
        name: 'cache',
        label: 'Response cache',
        type: 'select',
        options: CACHE_MODES,
        value: 'caller',
        param: 'cache',
        hint: 'Requests opt in with x-gateway-config {"cache": {"mode": "simple"}}.',
      },
    ],
    'Add provider',
    async (form) => {
      const created = await write(form, 'POST', '/providers', {
        provider: 'anthropic',
        name: value(form, 'name'),
        slug: value(form, 'slug'),
        apiKey: (form.elements.namedItem('apiKey') as HTMLInputElement).value,
        ...(value(form, 'baseUrl') ? { baseUrl: value(form, 'baseUrl') } : {}),
        models: { mode: 'all' },
        cache: cacheField(value(form, 'cache')),
      });
      if (!created) return;
      say(`Provider @${String(created.slug)} added.`);
      const choose = value(form, 'mode') === 'custom';
      await render();
      if (choose) {
        const editor = document.querySelector<HTMLElement>(`[aria-label="Models of ${String(created.slug)}"]`);
        editor?.click();
      }
    },
  );
  return [heading('Model catalog'), providers.length ? items : el('p', { text: 'No providers yet.' }), add];
}

async function modelEditor(container: HTMLElement, provider: Json): Promise<void> {
  const slug = String(provider.slug);
  const { body } = await api('GET', `/providers/${encodeURIComponent(slug)}/models`);
  const models = body.data as { id: string; enabled: boolean; display_name?: string }[];
  const selection = provider.models as { mode: string; autoEnableNew?: boolean } | undefined;
  const boxes = el(
    'fieldset',
    { class: 'models' },
    el('legend', { text: `Models of @${slug} (${String(body.source)} list)` }),
  );
  for (const model of models) {
    boxes.append(
      field({
        name: `model:${model.id}`,
        label: model.display_name ? `${model.display_name} (${model.id})` : model.id,
        type: 'checkbox',
        value: String(model.enabled),
        param: 'models.models',
      }),
    );
  }
  const form = formOf(
    `Model selection of @${slug}`,
    [
      {
        name: 'mode',
        label: 'Serve',
        type: 'select',
        options: MODEL_MODES,
        value: selection?.mode ?? 'all',
        param: 'models.mode',
      },
      boxes,
      {
        name: 'autoEnableNew',
        label: 'Enable new models automatically',
        type: 'checkbox',
        value: String(selection?.autoEnableNew === true),
        param: 'models.autoEnableNew',
      },
    ],
    'Save models',
    async (f) => {
      const current = await api('GET', `/providers/${encodeURIComponent(slug)}`);
      const chosen = models.filter((m) => checked(f, `model:${m.id}`)).map((m) => m.id);
      const saved = await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, {
        version: current.body.version,
        models:
          value(f, 'mode') === 'all'
            ? { mode: 'all' }
            : { mode: 'custom', models: chosen, autoEnableNew: checked(f, 'autoEnableNew') },
      });
      if (saved) {
        say(`Models of @${slug} saved.`);
        await render();
      }
    },
  );
  container.replaceChildren(form);
  (form.querySelector('select') as HTMLElement).focus();
}

function cacheForm(container: HTMLElement, provider: Json): void {
  const slug = String(provider.slug);
  const form = formOf(
    `Response cache of @${slug}`,
    [
      {
        name: 'cache',
        label: 'Response cache',
        type: 'select',
        options: CACHE_MODES,
        value: cacheMode(provider),
        param: 'cache',
      },
    ],
    'Save cache',
    async (f) => {
      const saved = await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, {
        version: provider.version,
        cache: cacheField(value(f, 'cache')),
      });
      if (saved) {
        say(`Response cache of @${slug} saved.`);
        await render();
      }
    },
  );
  container.replaceChildren(form);
  (form.querySelector('select') as HTMLElement).focus();
}

function rotateKeyForm(container: HTMLElement, provider: Json): void {
  const slug = String(provider.slug);
  const form = formOf(
    `Rotate the API key of @${slug}`,
    [{ name: 'apiKey', label: 'New API key', type: 'password', required: true }],
    'Save key',
    async (f) => {
      const saved = await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, {
        version: provider.version,
        apiKey: (f.elements.namedItem('apiKey') as HTMLInputElement).value,
      });
      if (saved) {
        say(`Key of @${slug} rotated.`);
        await render();
      }
    },
  );
  container.replaceChildren(form);
  (form.querySelector('input') as HTMLElement).focus();
}

// ---- Integrations ----
async function integrationsPage(): Promise<HTMLElement[]> {
  const { body } = await api('GET', '/providers');
  const integrations = (body.data as Json[]).filter((p) => p.provider === 'bedrock');
  const items = el('ul', { class: 'records' });
  for (const p of integrations) {
    const slug = String(p.slug);
    const editor = el('div');
    const hosts = (p.allowedHosts as string[] | undefined) ?? [];
    items.append(
      recordItem(
        `${String(p.name ?? slug)} (@${slug})`,
        [
          `Region ${String(p.region)}`,
          `Access key id ${String(p.accessKeyIdHint ?? '')}, secret ${String(p.secretAccessKeyHint ?? '')}${p.sessionTokenHint ? `, session token ${String(p.sessionTokenHint)}` : ''}`,
          `Allowed custom hosts: ${hosts.length ? hosts.join(', ') : 'AWS Bedrock hosts only'}`,
        ],
        button(
          'Rotate credentials',
          () => rotateCredentialsForm(editor, p),
          'secondary',
          `Rotate credentials of ${slug}`,
        ),
        testButton('providers', slug) ?? el('span'),
        deleteButton('providers', slug, `integration @${slug}`, render),
        editor,
      ),
    );
  }
  const add = formOf(
    'Add an AWS Bedrock integration',
    [
      { name: 'name', label: 'Name', required: true },
      { name: 'slug', label: 'Slug', required: true, hint: 'Requests name it as @slug.' },
      { name: 'accessKeyId', label: 'Access key id', type: 'password', required: true },
      { name: 'secretAccessKey', label: 'Secret access key', type: 'password', required: true },
      { name: 'sessionToken', label: 'Session token', type: 'password', hint: 'Only for temporary credentials.' },
      { name: 'region', label: 'Default region', required: true, value: 'us-east-1' },
      {
        name: 'allowedHosts',
        label: 'Allowed custom hosts',
        type: 'textarea',
        hint: 'One origin per line, such as https://vpce-123.bedrock-agent-runtime.us-east-1.vpce.amazonaws.com. AWS Bedrock hosts are always allowed.',
      },
      { name: 'mode', label: 'Models', type: 'select', options: MODEL_MODES, param: 'models.mode' },
      {
        name: 'models',
        label: 'Chosen models',
        type: 'textarea',
        hint: 'One model id per line (with "Chosen models").',
        param: 'models.models',
      },
      {
        name: 'autoEnableNew',
        label: 'Enable new models automatically',
        type: 'checkbox',
        param: 'models.autoEnableNew',
      },
    ],
    'Add integration',
    async (form) => {
      const secret = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value;
      const hosts = list(value(form, 'allowedHosts'), /\n+/);
      const created = await write(form, 'POST', '/providers', {
        provider: 'bedrock',
        name: value(form, 'name'),
        slug: value(form, 'slug'),
        accessKeyId: secret('accessKeyId'),
        secretAccessKey: secret('secretAccessKey'),
        ...(secret('sessionToken') ? { sessionToken: secret('sessionToken') } : {}),
        region: value(form, 'region'),
        ...(hosts.length ? { allowedHosts: hosts } : {}),
        models:
          value(form, 'mode') === 'custom'
            ? { mode: 'custom', models: list(value(form, 'models')), autoEnableNew: checked(form, 'autoEnableNew') }
            : { mode: 'all' },
      });
      if (created) {
        say(`Integration @${String(created.slug)} added.`);
        await render();
      }
    },
  );
  return [heading('Integrations'), integrations.length ? items : el('p', { text: 'No integrations yet.' }), add];
}

function rotateCredentialsForm(container: HTMLElement, integration: Json): void {
  const slug = String(integration.slug);
  const form = formOf(
    `Rotate the credentials of @${slug}`,
    [
      { name: 'accessKeyId', label: 'Access key id', type: 'password', hint: 'Leave empty to keep the stored one.' },
      {
        name: 'secretAccessKey',
        label: 'Secret access key',
        type: 'password',
        hint: 'Leave empty to keep the stored one.',
      },
      { name: 'sessionToken', label: 'Session token', type: 'password', hint: 'Leave empty to keep the stored one.' },
    ],
    'Save credentials',
    async (f) => {
      const change: Json = { version: integration.version };
      for (const name of ['accessKeyId', 'secretAccessKey', 'sessionToken']) {
        const secret = (f.elements.namedItem(name) as HTMLInputElement).value;
        if (secret) change[name] = secret;
      }
      const saved = await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, change);
      if (saved) {
        say(`Credentials of @${slug} saved.`);
        await render();
      }
    },
  );
  container.replaceChildren(form);
  (form.querySelector('input') as HTMLElement).focus();
}

// ---- MCP servers ----
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

async function mcpPage(): Promise<HTMLElement[]> {
  const { body } = await api('GET', '/mcp-servers');
  const servers = body.data as Json[];
  const items = el('ul', { class: 'records' });
  for (const s of servers) {
    const slug = String(s.slug);
    const forwarding = s.user_identity_forwarding as { method?: string; header_name?: string } | undefined;
    const pinned = s.tool_pinning === true;
    const lines = [
      `URL ${String(s.url)}`,
      `Identity forwarding: ${forwarding?.method ?? 'none'}`,
      `Tool pinning: ${pinned ? 'on (new and changed tools are held until approved)' : 'off'}`,
      `Source: ${String(s.source)}`,
    ];
    const extra: HTMLElement[] = [];
    const tools = el('div');
    if (pinned) {
      extra.push(tools);
    }
    if (forwarding?.method === 'jwt_header') {
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
    items.append(
      recordItem(
        `/mcp/${slug}`,
        lines,
        pinned ? button('Tools', () => void toolsPanel(tools, slug), 'secondary', `Tools of ${slug}`) : el('span'),
        testButton('mcp-servers', slug) ?? el('span'),
        s.source === 'config'
          ? el('span', { class: 'hint', text: 'Defined in the config file.' })
          : deleteButton('mcp-servers', slug, `MCP server ${slug}`, render),
        ...extra,
      ),
    );
  }
  const methodFields = el('div');
  const add = formOf(
    'Register an MCP server',
    [
      { name: 'slug', label: 'Slug', required: true, hint: 'Served at /mcp/<slug>.' },
      { name: 'url', label: 'URL', type: 'url', required: true },
      {
        name: 'method',
        label: 'Identity forwarding',
        type: 'select',
        param: 'user_identity_forwarding.method',
        options: [
          ['', 'None'],
          ['claims_header', 'Claims header (claims_header)'],
          ['bearer', "The caller's own token (bearer)"],
          ['jwt_header', 'A JWT the gateway signs (jwt_header)'],
        ],
      },
      methodFields,
      {
        name: 'forwardMode',
        label: 'Forward client headers',
        type: 'select',
        param: 'forward_headers.mode',
        options: [
          ['', 'All but protected and hop-by-hop headers'],
          ['all-except', 'All except the ones listed'],
          ['only', 'Only the ones listed'],
        ],
      },
      { name: 'forwardHeaders', label: 'Headers', hint: 'Comma-separated.', param: 'forward_headers.headers' },
      {
        name: 'tool_pinning',
        label: 'Pin tools: hold every new or changed tool until it is approved here',
        type: 'checkbox',
      },
    ],
    'Register server',
    async (form) => {
      const method = value(form, 'method');
      const forwarding: Json = { method };
      if (method === 'claims_header' || method === 'jwt_header') {
        const claims = list(value(form, 'include_claims'));
        if (claims.length) forwarding.include_claims = claims;
        if (value(form, 'header_name')) forwarding.header_name = value(form, 'header_name');
      }
      if (method === 'jwt_header' && value(form, 'jwt_expiry_seconds'))
        forwarding.jwt_expiry_seconds = Number(value(form, 'jwt_expiry_seconds'));
      const forwardMode = value(form, 'forwardMode');
      const created = await write(form, 'POST', '/mcp-servers', {
        slug: value(form, 'slug'),
        url: value(form, 'url'),
        ...(method ? { user_identity_forwarding: forwarding } : {}),
        ...(forwardMode
          ? { forward_headers: { mode: forwardMode, headers: list(value(form, 'forwardHeaders')) } }
          : {}),
        ...(checked(form, 'tool_pinning') ? { tool_pinning: true } : {}),
      });
      if (created) {
        say(`MCP server ${String(created.slug)} registered.`);
        await render();
      }
    },
  );
  const methodSelect = add.elements.namedItem('method') as HTMLSelectElement;
  const showMethodFields = () => {
    const method = methodSelect.value;
    const fields: Field[] = [];
    if (method === 'claims_header' || method === 'jwt_header') {
      fields.push(
        {
          name: 'include_claims',
          label: 'Claims to include',
          hint: 'Comma-separated, such as sub, email, groups.',
          param: 'user_identity_forwarding.include_claims',
        },
        {
          name: 'header_name',
          label: 'Header name',
          hint: method === 'jwt_header' ? 'Default X-User-JWT.' : 'Default X-User-Claims.',
          param: 'user_identity_forwarding.header_name',
        },
      );
    }
    if (method === 'jwt_header') {
      fields.push({
        name: 'jwt_expiry_seconds',
        label: 'Token lifetime (seconds)',
        type: 'number',
        hint: 'Default 300.',
        param: 'user_identity_forwarding.jwt_expiry_seconds',
      });
    }
    methodFields.replaceChildren(...fields.map(field));
  };
  methodSelect.addEventListener('change', showMethodFields);
  return [heading('MCP servers'), servers.length ? items : el('p', { text: 'No MCP servers yet.' }), add];
}

// ---- API keys ----
async function keysPage(): Promise<HTMLElement[]> {
  const { body } = await api('GET', '/api-keys');
  const keys = body.data as Json[];
  const items = el('ul', { class: 'records' });
  for (const k of keys) {
    const user = (k.user ?? {}) as Json;
    const who = String(user.email ?? user.user_id ?? user.sub ?? 'unnamed');
    items.append(
      recordItem(
        `${String(k.name ?? who)}`,
        [
          `Key ${String(k.keyHint ?? '(given as a digest)')}`,
          `User ${who}`,
          `Created ${String(k.createdAt)}`,
          `Source: ${String(k.source)}`,
        ],
        k.source === 'config'
          ? el('span', { class: 'hint', text: 'Defined in the config file.' })
          : deleteButton('api-keys', String(k.id), `the key of ${who}`, render),
      ),
    );
  }
  const shown = el('div');
  const add = formOf(
    'Create an API key',
    [
      { name: 'name', label: 'Name', hint: 'What the key is for.' },
      { name: 'user_id', label: 'User id', required: true, param: 'user.user_id' },
      { name: 'email', label: 'Email', param: 'user.email' },
      { name: 'username', label: 'Username', param: 'user.username' },
    ],
    'Create key',
    async (form) => {
      const user: Json = { user_id: value(form, 'user_id') };
      if (value(form, 'email')) user.email = value(form, 'email');
      if (value(form, 'username')) user.username = value(form, 'username');
      const created = await write(form, 'POST', '/api-keys', {
        user,
        ...(value(form, 'name') ? { name: value(form, 'name') } : {}),
      });
      if (!created) return;
      await render();
      showKeyOnce(String(created.key));
    },
  );
  return [heading('API keys'), shown, keys.length ? items : el('p', { text: 'No API keys yet.' }), add];
}

/** Shows a new key once: it is in this page's memory only until the next navigation. */
function showKeyOnce(key: string): void {
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
  );
  main.insertBefore(panel, main.children[1] ?? null);
  input.focus();
  input.select();
}

// ---- Audit log ----
async function auditPage(): Promise<HTMLElement[]> {
  const params = new URLSearchParams(window.location.hash.split('?')[1] ?? '');
  const record = params.get('record') ?? '';
  const filter = formOf(
    'Filter',
    [{ name: 'record', label: 'Record', value: record, hint: 'kind/slug, such as providers/anthropic-prod' }],
    'Show',
    async (form) => {
      const r = value(form, 'record');
      window.location.hash = r ? `#/audit?record=${encodeURIComponent(r)}` : '#/audit';
    },
  );
  const answer = await api('GET', `/audit${record ? `?record=${encodeURIComponent(record)}` : ''}`);
  if (answer.status >= 400) {
    showError(filter, answer);
    return [heading('Audit log'), filter];
  }
  const rows = (answer.body.data as Json[]).map((entry) =>
    el(
      'tr',
      {},
      el('td', { text: new Date(String(entry.at)).toLocaleString() }),
      el('td', { text: String(entry.actor) }),
      el('td', { text: String(entry.action) }),
      el('td', { text: String(entry.record) }),
      el('td', { text: entry.version === null ? '' : String(entry.version) }),
      el('td', { text: (entry.fields as string[]).join(', ') }),
    ),
  );
  const table = el(
    'table',
    {},
    el('caption', { text: record ? `Changes of ${record}, newest first` : 'Changes, newest first' }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['When', 'Who', 'What', 'Record', 'Version', 'Fields'].map((h) => el('th', { scope: 'col', text: h })),
      ),
    ),
    el('tbody', {}, ...rows),
  );
  return [heading('Audit log'), filter, table];
}

// ---- Connected apps: OAuth clients and grants ----
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

function when(iso: unknown): string {
  return typeof iso === 'string' ? new Date(iso).toLocaleString() : 'never';
}

function grantStatus(grant: Json): string {
  if (grant.revokedAt)
    return `Revoked ${when(grant.revokedAt)}${grant.revokedReason ? ` (${String(grant.revokedReason)})` : ''}`;
  if (typeof grant.expiresAt === 'string' && Date.parse(grant.expiresAt) <= Date.now()) return 'Expired';
  return 'Active';
}

function table(caption: string, headings: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    'table',
    {},
    el('caption', { text: caption }),
    el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...rows),
  );
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
  if (source === 'config') {
    section.append(
      el('p', { text: "These settings come from the config file's oauth object: change them there (read-only here)." }),
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
      void render();
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
            void render();
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

async function connectedAppsPage(): Promise<HTMLElement[]> {
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
      el('td', {}, active ? revokeGrantButton(String(g.id), `the grant of ${name} to ${String(g.user)}`) : undefined),
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
        void render();
      });
    },
    'danger',
    `Revoke ${what}`,
  );
}

// ---- Access: explain and policies ----
function hashParams(): URLSearchParams {
  return new URLSearchParams(window.location.hash.split('?')[1] ?? '');
}

/** Shows a validation error of the page itself beside the field it names, like one of the admin API. */
function refuse(form: HTMLFormElement, param: string, message: string): void {
  showError(form, { status: 400, body: { error: { message, code: 'invalid_request', param } } });
}

interface PolicyAllow {
  models?: string[];
  mcpServers?: { server: string; tools?: string[] }[];
  integrations?: string[];
}
interface PolicySubjects {
  users?: string[];
  groups?: string[];
  apiKeys?: string[];
}

function subjectsText(subjects: PolicySubjects): string {
  const parts = [
    subjects.users?.length ? `users ${subjects.users.join(', ')}` : '',
    subjects.groups?.length ? `groups ${subjects.groups.join(', ')}` : '',
    subjects.apiKeys?.length ? `API keys ${subjects.apiKeys.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'nobody';
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

function nonEmpty(values: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v.length > 0));
}

/** The create or edit form of a policy: one field per list, one entry a line. */
function policyForm(policy: Json | undefined, after: (slug: string) => Promise<void>): HTMLFormElement {
  const subjects = (policy?.subjects ?? {}) as PolicySubjects;
  const allow = (policy?.allow ?? {}) as PolicyAllow;
  const lines = (values: string[] | undefined) => (values ?? []).join('\n');
  const slug = policy ? String(policy.slug) : '';
  const fields: Field[] = [
    ...(policy ? [] : [{ name: 'slug', label: 'Slug', required: true, hint: 'Its name in paths and in explain.' }]),
    { name: 'name', label: 'Name', value: String(policy?.name ?? '') },
    {
      name: 'users',
      label: 'Users',
      type: 'textarea',
      value: lines(subjects.users),
      hint: 'User ids, one a line: an API key’s user_id or a token’s sub.',
      param: 'subjects.users',
    },
    {
      name: 'groups',
      label: 'Groups',
      type: 'textarea',
      value: lines(subjects.groups),
      hint: 'One a line.',
      param: 'subjects.groups',
    },
    {
      name: 'apiKeys',
      label: 'API key ids',
      type: 'textarea',
      value: lines(subjects.apiKeys),
      hint: 'One a line, as the API keys page lists them.',
      param: 'subjects.apiKeys',
    },
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
        subjects: nonEmpty({
          users: list(value(form, 'users'), /\n+/),
          groups: list(value(form, 'groups'), /\n+/),
          apiKeys: list(value(form, 'apiKeys'), /\n+/),
        }),
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

async function accessPage(): Promise<HTMLElement[]> {
  const slug = hashParams().get('policy');
  if (slug !== null) return policyPage(slug);
  const { body } = await api('GET', '/policies');
  const policies = body.data as Json[];
  const items = el('ul', { class: 'records' });
  for (const p of policies) {
    const pslug = String(p.slug);
    const editor = el('div');
    const fromConfig = p.source === 'config';
    items.append(
      recordItem(
        p.name ? `${String(p.name)} (${pslug})` : pslug,
        [
          `For: ${subjectsText((p.subjects ?? {}) as PolicySubjects)}`,
          `Allows: ${grantsText((p.allow ?? {}) as PolicyAllow)}`,
          `Source: ${String(p.source)}, version ${String(p.version)}`,
        ],
        el('a', { href: `#/access?policy=${encodeURIComponent(pslug)}`, text: `Open policy ${pslug}` }),
        el('span', { text: ' ' }),
        ...(fromConfig
          ? [el('span', { class: 'hint', text: 'Defined in the config file.' })]
          : [
              button(
                'Edit',
                () => {
                  const form = policyForm(p, () => render());
                  editor.replaceChildren(form);
                  (form.querySelector('input, textarea') as HTMLElement).focus();
                },
                'secondary',
                `Edit policy ${pslug}`,
              ),
              deleteButton('policies', pslug, `policy ${pslug}`, render),
            ]),
        editor,
      ),
    );
  }
  const create = policyForm(undefined, async () => render());
  return [
    heading('Access'),
    ...explainForm(),
    el('h2', { text: 'Policies' }),
    el('p', {
      class: 'hint',
      text: 'With access mode "policies", a caller reaches only what the policies naming it allow; in "open" mode they are kept but not applied.',
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
  const subjects = (p.subjects ?? {}) as PolicySubjects;
  const allow = (p.allow ?? {}) as PolicyAllow;
  const facts = el('dl', { class: 'facts' });
  const fact = (term: string, text: string) => facts.append(el('dt', { text: term }), el('dd', { text }));
  fact('Users', subjects.users?.join(', ') || 'none');
  fact('Groups', subjects.groups?.join(', ') || 'none');
  fact('API key ids', subjects.apiKeys?.join(', ') || 'none');
  fact(
    'Source',
    `${String(p.source)}, version ${String(p.version)}, changed ${new Date(String(p.updatedAt)).toLocaleString()}`,
  );
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
      : [policyForm(p, () => render()), deleteButton('policies', slug, `policy ${slug}`, () => navigate('#/access'))];
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

// ---- MCP tool pinning ----
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
        held
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

// ---- Requests ----
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

function ms(n: unknown): string {
  return n === null || n === undefined ? '—' : `${Math.round(Number(n)).toLocaleString('en-US')} ms`;
}

/** One record's every field (never message content: the records hold none). */
function requestDetail(record: Json): HTMLElement {
  const usage = (record.usage ?? {}) as Record<string, number | null>;
  const metadata = (record.metadata ?? null) as Record<string, string> | null;
  const facts = el('dl', { class: 'facts' });
  const fact = (term: string, text: string) => facts.append(el('dt', { text: term }), el('dd', { text }));
  fact('Time', new Date(String(record.time)).toLocaleString());
  fact('Request id', String(record.request_id));
  fact('Trace id', String(record.trace_id));
  fact('Route', `${String(record.route)}: ${String(record.method)} ${String(record.path)}`);
  fact('User', `${String(record.user_id ?? '—')}${record.key_hint ? `, key ${String(record.key_hint)}` : ''}`);
  fact('Provider', String(record.provider ?? '—'));
  fact('Model asked', String(record.model_requested ?? '—'));
  fact('Model answered', String(record.model_answered ?? '—'));
  if (record.mcp_method) fact('MCP method', String(record.mcp_method));
  fact('Status', `${String(record.status)}${record.error_code ? ` ${String(record.error_code)}` : ''}`);
  fact('Total time', ms(record.duration_ms));
  fact('Time to first byte', ms(record.ttfb_ms));
  fact('Input tokens', tokens(usage.input_tokens));
  fact('Output tokens', tokens(usage.output_tokens));
  fact('Cache creation tokens', tokens(usage.cache_creation_input_tokens));
  fact('Cache read tokens', tokens(usage.cache_read_input_tokens));
  fact('Cache status', String(record.cache_status ?? 'no cache asked'));
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

async function requestsPage(): Promise<HTMLElement[]> {
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
  const records = answer.body.data as Json[];
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
      el('td', { text: new Date(String(record.time)).toLocaleString() }),
      el('td', { text: String(record.user_id ?? '—') }),
      el('td', { text: String(record.provider ?? '—') }),
      el('td', { text: String(record.model_answered ?? record.model_requested ?? record.mcp_method ?? '—') }),
      el('td', { text: `${String(record.status)}${record.error_code ? ` ${String(record.error_code)}` : ''}` }),
      el('td', { class: 'number', text: ms(record.duration_ms) }),
      el('td', { class: 'number', text: `${tokens(usage.input_tokens)} / ${tokens(usage.output_tokens)}` }),
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
  const table = el(
    'table',
    {},
    el('caption', { text: `${records.length} request(s), newest first` }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['Time', 'User', 'Provider', 'Model', 'Status', 'Total', 'Tokens in / out', 'Record'].map((h) =>
          el('th', { scope: 'col', class: h === 'Total' || h.startsWith('Tokens') ? 'number' : '', text: h }),
        ),
      ),
    ),
    el('tbody', {}, ...rows),
  );
  return [heading('Requests'), filter, detail, records.length ? table : el('p', { text: 'No requests match.' }), pager];
}

// ---- Usage ----
const USAGE_GROUPS: [string, string][] = [
  ['day', 'Day (UTC)'],
  ['user', 'User'],
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
function usageChart(groups: { label: string; input: number; output: number; requests: number }[]): HTMLElement {
  const rowHeight = 28;
  const labelWidth = 200;
  const barWidth = 520;
  const width = labelWidth + barWidth + 200;
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
        `${(g.input + g.output).toLocaleString('en-US')} tokens, ${g.requests.toLocaleString('en-US')} req.`,
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

async function usagePage(): Promise<HTMLElement[]> {
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
  const groups = answer.body.data as Json[];
  const n = (g: Json, name: string) => Number(g[name] ?? 0);
  const columns: [string, string][] = [
    ['requests', 'Requests'],
    ['errors', 'Errors'],
    ['input_tokens', 'Input tokens'],
    ['output_tokens', 'Output tokens'],
    ['cache_creation_input_tokens', 'Cache creation'],
    ['cache_read_input_tokens', 'Cache read'],
  ];
  const groupLabel = (USAGE_GROUPS.find(([g]) => g === groupBy) ?? ['', 'Group'])[1];
  const keyOf = (g: Json) => (g.key === null || g.key === undefined ? '(none)' : String(g.key));
  const total = (name: string) => groups.reduce((sum, g) => sum + n(g, name), 0);
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
      ),
    ),
  );
  const chart = usageChart(
    groups.map((g) => ({
      label: keyOf(g),
      input: n(g, 'input_tokens'),
      output: n(g, 'output_tokens'),
      requests: n(g, 'requests'),
    })),
  );
  return [
    heading('Usage'),
    filter,
    ...(groups.length ? [chart, table] : [el('p', { text: 'No requests in this range.' })]),
  ];
}

// ---- Sign-in, navigation ----
function signInPage(): HTMLElement[] {
  nav.hidden = true;
  const form = formOf(
    'Sign in',
    [
      {
        name: 'credential',
        label: 'Admin key',
        type: 'password',
        required: true,
        autocomplete: 'current-password',
        hint: 'GATEWAY_ADMIN_KEY, or an identity-provider token with the admin claim.',
      },
    ],
    'Sign in',
    async (f) => {
      const res = await fetch('/console/session', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ credential: (f.elements.namedItem('credential') as HTMLInputElement).value }),
      });
      const body = (await res.json()) as Json;
      if (!res.ok) {
        showError(f, { status: res.status, body });
        return;
      }
      csrfToken = String(body.csrfToken);
      testsAvailable = body.tests === true;
      navigate('#/models');
    },
  );
  return [heading('Gateway console'), form];
}

function signedOut(): void {
  csrfToken = '';
  navigate('#/sign-in');
}

const PAGES = new Map<string, () => Promise<HTMLElement[]>>([
  ['models', modelsPage],
  ['integrations', integrationsPage],
  ['mcp', mcpPage],
  ['keys', keysPage],
  ['access', accessPage],
  ['requests', requestsPage],
  ['usage', usagePage],
  ['apps', connectedAppsPage],
  ['audit', auditPage],
]);

async function render(): Promise<void> {
  const name = (window.location.hash.replace(/^#\/?/, '').split('?')[0] ?? '') || 'models';
  if (name === 'sign-in' || !csrfToken) {
    if (!csrfToken && !(await restoreSession())) {
      main.replaceChildren(...signInPage());
      return;
    }
    if (name === 'sign-in') {
      navigate('#/models');
      return;
    }
  }
  const page = PAGES.get(name) ?? modelsPage;
  nav.hidden = false;
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  try {
    main.replaceChildren(...(await page()));
    document.title = `${main.querySelector('h1')?.textContent ?? 'Console'} · Gateway console`;
    main.focus();
  } catch {
    // Signed out meanwhile: the sign-in page is showing.
  }
}

async function restoreSession(): Promise<boolean> {
  const res = await fetch('/console/session', { credentials: 'same-origin' });
  if (!res.ok) return false;
  const body = (await res.json()) as Json;
  csrfToken = String(body.csrfToken);
  testsAvailable = body.tests === true;
  return true;
}

(document.getElementById('sign-out') as HTMLButtonElement).addEventListener('click', () => {
  void fetch('/console/session', {
    method: 'DELETE',
    credentials: 'same-origin',
    headers: { 'x-csrf-token': csrfToken },
  }).then(() => {
    csrfToken = '';
    navigate('#/sign-in');
    say('Signed out.');
  });
});
window.addEventListener('hashchange', () => void render());
void render();
