/** The "Model catalog" page: Anthropic providers, their models, response cache, key and settings, each editable in place. */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
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
import { pricingEditor, pricingOf, pricingSummary } from '../lib/pricing.js';
import { canWrite, deleteOrNote, testButton } from '../lib/records.js';

/** The model selection choices of providers and integrations. */
export const MODEL_MODES: [string, string][] = [
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

/** A whole number of at least 1 typed in `name`; refuses the form (and answers undefined) otherwise. */
export function positiveInteger(
  form: HTMLFormElement,
  name: string,
  param: string,
  what: string,
): number | null | undefined {
  const text = value(form, name);
  if (text === '') return null;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) {
    refuse(form, param, `${what} must be a whole number from 1 to 1000000.`);
    return undefined;
  }
  return n;
}

/** A model selection in words. */
export function modelsSummary(
  models: { mode: string; models?: string[]; autoEnableNew?: boolean } | undefined,
): string {
  return !models || models.mode === 'all'
    ? 'All models'
    : `${models.models?.length ?? 0} chosen model(s): ${(models.models ?? []).join(', ') || 'none'}${models.autoEnableNew ? '; new models enabled automatically' : ''}`;
}

export async function modelsPage(): Promise<HTMLElement[]> {
  const providers = dataOf(await api('GET', '/providers')).filter((p) => p.provider === 'anthropic');
  const items = el('ul', { class: 'records' });
  for (const p of providers) {
    const slug = String(p.slug);
    const editor = el('div');
    const fromConfig = p.source === 'config';
    const writable = canWrite() && !fromConfig;
    items.append(
      recordItem(
        `${String(p.name ?? slug)} (@${slug})`,
        [
          `API key ${String(p.apiKeyHint ?? '')}`,
          `Base URL ${String(p.baseUrl ?? 'https://api.anthropic.com (default)')}`,
          `Default max_tokens: ${p.defaultMaxTokens === undefined ? 'none (callers must send max_tokens)' : String(p.defaultMaxTokens)}`,
          `Models: ${modelsSummary(p.models as never)}`,
          `Response cache: ${(CACHE_MODES.find(([m]) => m === cacheMode(p)) ?? ['', ''])[1]}`,
          pricingSummary(p.pricing),
          `Source: ${String(p.source)}`,
        ],
        ...(writable
          ? [
              button('Edit', () => settingsForm(editor, p), 'secondary', `Edit ${slug}`),
              button('Models', () => void modelEditor(editor, p), 'secondary', `Models of ${slug}`),
              button('Cache', () => cacheForm(editor, p), 'secondary', `Response cache of ${slug}`),
              button('Rotate key', () => rotateKeyForm(editor, p), 'secondary', `Rotate key of ${slug}`),
            ]
          : []),
        testButton('providers', slug) ?? el('span'),
        deleteOrNote(fromConfig, 'providers', slug, `provider @${slug}`),
        editor,
      ),
    );
  }
  const content = [heading('Model catalog'), providers.length ? items : el('p', { text: 'No providers yet.' })];
  if (canWrite()) content.push(addForm());
  return content;
}

function addForm(): HTMLFormElement {
  const chosen = el('div');
  const form = formOf(
    'Add an Anthropic provider',
    [
      { name: 'name', label: 'Name', required: true },
      { name: 'slug', label: 'Slug', required: true, hint: 'Requests name it as @slug.' },
      { name: 'apiKey', label: 'API key', type: 'password', required: true },
      { name: 'baseUrl', label: 'Base URL', type: 'url', hint: 'Leave empty for https://api.anthropic.com.' },
      {
        name: 'defaultMaxTokens',
        label: 'Default max_tokens',
        type: 'number',
        hint: 'Sent when a request omits max_tokens (OpenAI-style clients often do); empty: such requests are refused.',
      },
      { name: 'mode', label: 'Models', type: 'select', options: MODEL_MODES, param: 'models.mode' },
      chosen,
      {
        name: 'cache',
        label: 'Response cache',
        type: 'select',
        options: CACHE_MODES,
        value: 'caller',
        param: 'cache',
        hint: 'Requests opt in with x-gateway-config {"cache": {"mode": "simple"}}.',
      },
      pricingEditor(undefined),
    ],
    'Add provider',
    async (f) => {
      const maxTokens = positiveInteger(f, 'defaultMaxTokens', 'defaultMaxTokens', 'Default max_tokens');
      if (maxTokens === undefined) return;
      const pricing = pricingOf(f);
      if (pricing === undefined) return;
      const choose = value(f, 'mode') === 'custom';
      // "Chosen models" starts with the models typed here (none enabled until chosen), never with all of them.
      const created = await write(f, 'POST', '/providers', {
        provider: 'anthropic',
        name: value(f, 'name'),
        slug: value(f, 'slug'),
        apiKey: secret(f, 'apiKey'),
        ...(value(f, 'baseUrl') ? { baseUrl: value(f, 'baseUrl') } : {}),
        ...(maxTokens !== null ? { defaultMaxTokens: maxTokens } : {}),
        models: choose ? { mode: 'custom', models: list(value(f, 'models')) } : { mode: 'all' },
        cache: cacheField(value(f, 'cache')),
        ...(Object.keys(pricing).length ? { pricing } : {}),
      });
      if (!created) return;
      say(`Provider @${String(created.slug)} added.`);
      await rerender();
      if (choose) {
        document.querySelector<HTMLElement>(`[aria-label="Models of ${String(created.slug)}"]`)?.click();
      }
    },
  );
  const mode = form.elements.namedItem('mode') as HTMLSelectElement;
  const showChosen = () =>
    chosen.replaceChildren(
      ...(mode.value === 'custom'
        ? [
            field({
              name: 'models',
              label: 'Chosen model ids',
              type: 'textarea',
              hint: 'One a line, such as claude-sonnet-4-5; or leave empty and tick them in the list that opens next.',
              param: 'models.models',
            }),
          ]
        : []),
    );
  mode.addEventListener('change', showChosen);
  return form;
}

/** The provider's settings (name, base URL, default max_tokens), changed in place with PATCH. */
function settingsForm(container: HTMLElement, provider: Json): void {
  const slug = String(provider.slug);
  const form = formOf(
    `Settings of @${slug}`,
    [
      { name: 'name', label: 'Name', value: String(provider.name ?? '') },
      {
        name: 'baseUrl',
        label: 'Base URL',
        type: 'url',
        value: String(provider.baseUrl ?? ''),
        hint: 'Empty keeps the current one.',
      },
      {
        name: 'apiKey',
        label: 'API key',
        type: 'password',
        hint: 'Needed when the base URL changes: the key is sent to the new host. Otherwise empty keeps the stored one.',
      },
      {
        name: 'defaultMaxTokens',
        label: 'Default max_tokens',
        type: 'number',
        value: provider.defaultMaxTokens === undefined ? '' : String(provider.defaultMaxTokens),
        hint: 'Sent when a request omits max_tokens.',
      },
      pricingEditor(provider.pricing),
    ],
    'Save settings',
    async (f) => {
      const maxTokens = positiveInteger(f, 'defaultMaxTokens', 'defaultMaxTokens', 'Default max_tokens');
      if (maxTokens === undefined) return;
      const pricing = pricingOf(f);
      if (pricing === undefined) return;
      const change: Json = { version: provider.version };
      if (value(f, 'name')) change.name = value(f, 'name');
      if (value(f, 'baseUrl')) change.baseUrl = value(f, 'baseUrl');
      if (secret(f, 'apiKey')) change.apiKey = secret(f, 'apiKey');
      if (maxTokens !== null) change.defaultMaxTokens = maxTokens;
      // The whole table replaces the stored one (an emptied editor goes back to the bundled prices).
      if (JSON.stringify(pricing) !== JSON.stringify(provider.pricing ?? {})) change.pricing = pricing;
      if (await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, change)) {
        say(`Settings of @${slug} saved.`);
        await rerender();
      }
    },
  );
  requireSecretsWhenRoutingChanges(form, ['baseUrl'], ['apiKey']);
  container.replaceChildren(openedBy(form, `Edit ${slug}`));
  (form.querySelector('input') as HTMLElement).focus();
}

async function modelEditor(container: HTMLElement, provider: Json): Promise<void> {
  const slug = String(provider.slug);
  const { body } = await api('GET', `/providers/${encodeURIComponent(slug)}/models`);
  const models = (Array.isArray(body.data) ? body.data : []) as {
    id: string;
    enabled: boolean;
    display_name?: string;
  }[];
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
  const fields: (Field | HTMLElement)[] = [
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
  ];
  const form = formOf(`Model selection of @${slug}`, fields, 'Save models', async (f) => {
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
      await rerender();
    }
  });
  container.replaceChildren(openedBy(form, `Models of ${slug}`));
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
        await rerender();
      }
    },
  );
  container.replaceChildren(openedBy(form, `Response cache of ${slug}`));
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
        apiKey: secret(f, 'apiKey'),
      });
      if (saved) {
        say(`Key of @${slug} rotated.`);
        await rerender();
      }
    },
  );
  container.replaceChildren(openedBy(form, `Rotate key of ${slug}`));
  (form.querySelector('input') as HTMLElement).focus();
}
