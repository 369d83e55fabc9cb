/**
 * The "Prompts" page: stored prompt templates (`POST /v1/prompts/<id>/completions` renders one
 * with the request's `variables`), created, edited in place and deleted.
 */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
import { formOf, openedBy, refuse, value, write, type Field } from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteOrNote } from '../lib/records.js';
import { positiveInteger } from './models.js';

interface Message {
  role: string;
  content: unknown;
}

/** The system and user text of a template made of at most one system and one user message of text; undefined otherwise. */
function simpleMessages(messages: Message[]): { system: string; user: string } | undefined {
  const system = messages.filter((m) => m.role === 'system');
  const user = messages.filter((m) => m.role === 'user');
  if (system.length > 1 || user.length !== 1 || system.length + user.length !== messages.length) return undefined;
  if (![...system, ...user].every((m) => typeof m.content === 'string')) return undefined;
  return { system: String(system[0]?.content ?? ''), user: String(user[0]?.content) };
}

/** The placeholders `{{name}}` of a template's text, each once. */
function variablesOf(messages: Message[]): string[] {
  const names = new Set<string>();
  for (const m of messages.slice(0, 100)) {
    for (const match of JSON.stringify(m.content ?? '').matchAll(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g))
      names.add(match[1] as string);
  }
  return [...names];
}

export async function promptsPage(): Promise<HTMLElement[]> {
  const prompts = dataOf(await api('GET', '/prompts'));
  const items = el('ul', { class: 'records' });
  for (const p of prompts) {
    const id = String(p.id);
    const messages = (Array.isArray(p.messages) ? p.messages : []) as Message[];
    const variables = variablesOf(messages);
    const editor = el('div');
    const writable = canWrite() && p.source !== 'config';
    items.append(
      recordItem(
        id,
        [
          `Model ${String(p.provider)}/${String(p.model)}`,
          `${messages.length} message(s); variables: ${variables.length ? variables.join(', ') : 'none'}`,
          ...(p.max_tokens === undefined ? [] : [`max_tokens ${String(p.max_tokens)}`]),
          el('p', {}, 'Called as ', el('code', { text: `POST /v1/prompts/${id}/completions` })),
          `Source: ${String(p.source ?? 'admin')}`,
        ],
        ...(writable ? [button('Edit', () => editPrompt(editor, p), 'secondary', `Edit prompt ${id}`)] : []),
        deleteOrNote(p.source === 'config', 'prompts', id, `prompt ${id}`),
        editor,
      ),
    );
  }
  const content = [
    heading('Prompts'),
    el('p', {
      class: 'hint',
      text: 'Templates callers render by id with {"variables": {…}}: {{name}} in the text is replaced by the variable of that name.',
    }),
    prompts.length ? items : el('p', { text: 'No prompts yet.' }),
  ];
  if (canWrite()) content.push(promptForm(undefined));
  return content;
}

function editPrompt(container: HTMLElement, prompt: Json): void {
  const form = openedBy(promptForm(prompt), `Edit prompt ${String(prompt.id)}`);
  container.replaceChildren(form);
  (form.querySelector('input, textarea') as HTMLElement).focus();
}

/** The create form (no prompt) or the edit form of a prompt. */
function promptForm(prompt: Json | undefined): HTMLFormElement {
  const messages = (Array.isArray(prompt?.messages) ? prompt.messages : []) as Message[];
  const simple = prompt ? simpleMessages(messages) : { system: '', user: '' };
  const fields: Field[] = [
    ...(prompt ? [] : [{ name: 'id', label: 'Id', required: true, hint: 'Called as /v1/prompts/<id>/completions.' }]),
    {
      name: 'provider',
      label: 'Provider',
      required: true,
      value: String(prompt?.provider ?? ''),
      hint: 'As @slug, such as @anthropic-prod.',
    },
    {
      name: 'model',
      label: 'Model',
      required: true,
      value: String(prompt?.model ?? ''),
      hint: 'Such as claude-sonnet-4-5.',
    },
    {
      name: 'max_tokens',
      label: 'max_tokens',
      type: 'number',
      value: prompt?.max_tokens === undefined ? '' : String(prompt.max_tokens),
      hint: 'Optional; a request may override it.',
    },
    ...(simple
      ? [
          {
            name: 'system',
            label: 'System message',
            type: 'textarea' as const,
            value: simple.system,
            param: 'messages',
            hint: 'Optional.',
          },
          {
            name: 'user',
            label: 'User message',
            type: 'textarea' as const,
            required: true,
            value: simple.user,
            param: 'messages',
            hint: 'Such as: Answer {{question}} for {{customer}}.',
          },
        ]
      : [
          {
            name: 'messages',
            label: 'Messages (JSON)',
            type: 'textarea' as const,
            required: true,
            value: JSON.stringify(messages, null, 2),
            hint: 'An array of {"role", "content"} objects.',
          },
        ]),
  ];
  const id = prompt ? String(prompt.id) : '';
  return formOf(
    prompt ? `Edit prompt ${id}` : 'Create a prompt',
    fields,
    prompt ? 'Save prompt' : 'Create prompt',
    async (f) => {
      const maxTokens = positiveInteger(f, 'max_tokens', 'max_tokens', 'max_tokens');
      if (maxTokens === undefined) return;
      let next: Message[];
      if (simple) {
        next = [
          ...(value(f, 'system') ? [{ role: 'system', content: value(f, 'system') }] : []),
          { role: 'user', content: value(f, 'user') },
        ];
      } else {
        try {
          next = JSON.parse(value(f, 'messages')) as Message[];
        } catch {
          return refuse(f, 'messages', 'The messages are not valid JSON.');
        }
        if (!Array.isArray(next) || next.length === 0)
          return refuse(f, 'messages', 'Write an array of at least one message.');
      }
      const body: Json = { provider: value(f, 'provider'), model: value(f, 'model'), messages: next };
      if (maxTokens !== null) body.max_tokens = maxTokens;
      const saved = prompt
        ? await write(f, 'PATCH', `/prompts/${encodeURIComponent(id)}`, { version: prompt.version, ...body })
        : await write(f, 'POST', '/prompts', { id: value(f, 'id'), ...body });
      if (!saved) return;
      say(`Prompt ${String(saved.id ?? id)} ${prompt ? 'saved' : 'created'}.`);
      await rerender();
    },
  );
}
