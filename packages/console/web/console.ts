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
  type?: 'text' | 'password' | 'url' | 'number' | 'textarea' | 'select' | 'checkbox';
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
  const slot = target ? document.getElementById(`${target.id}-error`) : form.querySelector<HTMLElement>('.form-error');
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
    el('h3', { text: title }),
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
    const lines = [
      `URL ${String(s.url)}`,
      `Identity forwarding: ${forwarding?.method ?? 'none'}`,
      `Source: ${String(s.source)}`,
    ];
    const extra: HTMLElement[] = [];
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
