/** The "Integrations" page: AWS Bedrock integrations, each editable in place (region, allowed hosts, models, credentials). */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
import {
  checked,
  formOf,
  list,
  openedBy,
  requireSecretsWhenRoutingChanges,
  secret,
  value,
  write,
  type Field,
} from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteOrNote, testButton } from '../lib/records.js';
import { MODEL_MODES, modelsSummary } from './models.js';

export async function integrationsPage(): Promise<HTMLElement[]> {
  const integrations = dataOf(await api('GET', '/providers')).filter((p) => p.provider === 'bedrock');
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
          `Models: ${modelsSummary(p.models as never)}`,
          `Source: ${String(p.source)}`,
        ],
        ...(canWrite() && p.source !== 'config'
          ? [
              button('Edit', () => editForm(editor, p), 'secondary', `Edit ${slug}`),
              button(
                'Rotate credentials',
                () => rotateCredentialsForm(editor, p),
                'secondary',
                `Rotate credentials of ${slug}`,
              ),
            ]
          : []),
        testButton('providers', slug) ?? el('span'),
        deleteOrNote(p.source === 'config', 'providers', slug, `integration @${slug}`),
        editor,
      ),
    );
  }
  const title = [heading('Integrations'), integrations.length ? items : el('p', { text: 'No integrations yet.' })];
  if (!canWrite()) return title;
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
        await rerender();
      }
    },
  );
  return [...title, add];
}

/** An integration's name, region, allowed hosts and models, changed in place with PATCH. */
function editForm(container: HTMLElement, integration: Json): void {
  const slug = String(integration.slug);
  const models = integration.models as { mode: string; models?: string[]; autoEnableNew?: boolean } | undefined;
  const form = formOf(
    `Settings of @${slug}`,
    [
      { name: 'name', label: 'Name', value: String(integration.name ?? '') },
      { name: 'region', label: 'Default region', required: true, value: String(integration.region ?? '') },
      {
        name: 'allowedHosts',
        label: 'Allowed custom hosts',
        type: 'textarea',
        value: ((integration.allowedHosts as string[] | undefined) ?? []).join('\n'),
        hint: 'One origin per line; empty for AWS Bedrock hosts only.',
      },
      ...credentialFields(integration),
      {
        name: 'mode',
        label: 'Models',
        type: 'select',
        options: MODEL_MODES,
        value: models?.mode ?? 'all',
        param: 'models.mode',
      },
      {
        name: 'models',
        label: 'Chosen models',
        type: 'textarea',
        value: (models?.models ?? []).join('\n'),
        hint: 'One model id per line (with "Chosen models").',
        param: 'models.models',
      },
      {
        name: 'autoEnableNew',
        label: 'Enable new models automatically',
        type: 'checkbox',
        value: String(models?.autoEnableNew === true),
        param: 'models.autoEnableNew',
      },
    ],
    'Save settings',
    async (f) => {
      const change: Json = {
        version: integration.version,
        region: value(f, 'region'),
        allowedHosts: list(value(f, 'allowedHosts'), /\n+/),
        models:
          value(f, 'mode') === 'custom'
            ? { mode: 'custom', models: list(value(f, 'models')), autoEnableNew: checked(f, 'autoEnableNew') }
            : { mode: 'all' },
      };
      if (value(f, 'name')) change.name = value(f, 'name');
      for (const name of CREDENTIALS) if (secret(f, name)) change[name] = secret(f, name);
      if (await write(f, 'PATCH', `/providers/${encodeURIComponent(slug)}`, change)) {
        say(`Settings of @${slug} saved.`);
        await rerender();
      }
    },
  );
  requireSecretsWhenRoutingChanges(
    form,
    ['region', 'allowedHosts'],
    CREDENTIALS.filter((name) => typeof integration[`${name}Hint`] === 'string'),
  );
  container.replaceChildren(openedBy(form, `Edit ${slug}`));
  (form.querySelector('input') as HTMLElement).focus();
}

/** The secrets of an integration, in the order the admin API names a missing one. */
const CREDENTIALS = ['accessKeyId', 'secretAccessKey', 'sessionToken'];

/** The credential inputs of the edit form: needed again when the region or the allowed hosts change. */
function credentialFields(integration: Json): Field[] {
  const hint = 'Needed when the region or the allowed hosts change: the credentials go to the new hosts.';
  return [
    { name: 'accessKeyId', label: 'Access key id', type: 'password', hint },
    { name: 'secretAccessKey', label: 'Secret access key', type: 'password', hint },
    ...(typeof integration.sessionTokenHint === 'string'
      ? [{ name: 'sessionToken', label: 'Session token', type: 'password' as const, hint }]
      : []),
  ];
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
        await rerender();
      }
    },
  );
  container.replaceChildren(openedBy(form, `Rotate credentials of ${slug}`));
  (form.querySelector('input') as HTMLElement).focus();
}
