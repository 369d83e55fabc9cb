/**
 * The "Configs" page: named routing configs (an `x-gateway-config` stored under a slug, used by
 * `x-gateway-config: <slug>` and by API keys that carry it), created, edited in place as JSON and
 * deleted.
 */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
import { formOf, openedBy, refuse, value, write, type Field } from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteOrNote } from '../lib/records.js';

/** The example a new config starts from: a fallback across two providers. */
const EXAMPLE = {
  strategy: { mode: 'fallback' },
  targets: [{ provider: '@anthropic-prod' }, { provider: '@anthropic-backup' }],
};

export async function configsPage(): Promise<HTMLElement[]> {
  const configs = dataOf(await api('GET', '/configs'));
  const items = el('ul', { class: 'records' });
  for (const c of configs) {
    const slug = String(c.slug);
    const editor = el('div');
    const writable = canWrite() && c.source !== 'config';
    items.append(
      recordItem(
        slug,
        [
          ...(typeof c.name === 'string' ? [c.name] : []),
          el('pre', { class: 'code', 'aria-label': `Config ${slug}`, text: JSON.stringify(c.config, null, 2) }),
          el('p', {}, 'Used as ', el('code', { text: `x-gateway-config: ${slug}` }), ' or by an API key.'),
          `Source: ${String(c.source ?? 'admin')}`,
        ],
        ...(writable ? [button('Edit', () => editConfig(editor, c), 'secondary', `Edit config ${slug}`)] : []),
        deleteOrNote(c.source === 'config', 'configs', slug, `config ${slug}`),
        editor,
      ),
    );
  }
  const content = [
    heading('Configs'),
    el('p', {
      class: 'hint',
      text: 'Routing configs stored under a name: targets, fallback, load balancing, retries. A request uses one with x-gateway-config: <slug>; an API key can carry one for all its calls.',
    }),
    configs.length ? items : el('p', { text: 'No configs yet.' }),
  ];
  if (canWrite()) content.push(configForm(undefined));
  return content;
}

function editConfig(container: HTMLElement, config: Json): void {
  const form = openedBy(configForm(config), `Edit config ${String(config.slug)}`);
  container.replaceChildren(form);
  (form.querySelector('input, textarea') as HTMLElement).focus();
}

/** The create form (no config) or the edit form of a config. */
function configForm(config: Json | undefined): HTMLFormElement {
  const slug = config ? String(config.slug) : '';
  const fields: Field[] = [
    ...(config ? [] : [{ name: 'slug', label: 'Slug', required: true, hint: 'Such as claude-fallback.' }]),
    {
      name: 'name',
      label: 'Name',
      value: typeof config?.name === 'string' ? config.name : '',
      hint: 'Optional, for people.',
    },
    {
      name: 'config',
      label: 'Config (JSON)',
      type: 'textarea',
      required: true,
      value: JSON.stringify(config ? config.config : EXAMPLE, null, 2),
      hint: 'A JSON object, as x-gateway-config takes it: at most 16 KiB, nested at most 8 levels.',
    },
  ];
  return formOf(
    config ? `Edit config ${slug}` : 'Create a config',
    fields,
    config ? 'Save config' : 'Create config',
    async (f) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value(f, 'config'));
      } catch {
        return refuse(f, 'config', 'The config is not valid JSON.');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        return refuse(f, 'config', 'Write a JSON object, such as {"retry": {"attempts": 2}}.');
      const name = value(f, 'name');
      const saved = config
        ? await write(f, 'PATCH', `/configs/${encodeURIComponent(slug)}`, {
            version: config.version,
            config: parsed,
            name: name === '' ? null : name,
          })
        : await write(f, 'POST', '/configs', {
            slug: value(f, 'slug'),
            ...(name === '' ? {} : { name }),
            config: parsed,
          });
      if (!saved) return;
      say(`Config ${String(saved.slug ?? slug)} ${config ? 'saved' : 'created'}.`);
      await rerender();
    },
  );
}
