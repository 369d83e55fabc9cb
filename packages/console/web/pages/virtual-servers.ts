/**
 * The "Virtual servers" page: virtual MCP servers (CONTRACT section 16), several MCP servers
 * behind one `/mcp/<slug>` endpoint. Listed with their members, created, edited in place (each
 * member's server, prefix, tool patterns, renames and timeout) and deleted.
 */
import { api, dataOf } from '../lib/api.js';
import { button, el, heading, recordItem, say, type Json } from '../lib/dom.js';
import { field, formOf, list, openedBy, refuse, value, write } from '../lib/forms.js';
import { rerender } from '../lib/nav.js';
import { canWrite, deleteOrNote } from '../lib/records.js';

/** One member as the admin API writes it. */
interface Member {
  server: string;
  prefix?: string;
  tools?: string[];
  rename?: Record<string, string>;
  timeout_ms?: number;
}

/** A member in words: `crm: prefix "crm_", tools search_*, get_ticket, get_ticket → crm_ticket`. */
function memberLine(member: Member): string {
  const parts: string[] = [];
  if (member.prefix) parts.push(`prefix "${member.prefix}"`);
  parts.push(member.tools ? `tools ${member.tools.join(', ')}` : 'every tool');
  for (const [own, renamed] of Object.entries(member.rename ?? {})) parts.push(`${own} → ${renamed}`);
  if (member.timeout_ms !== undefined) parts.push(`timeout ${member.timeout_ms} ms`);
  return `${member.server}: ${parts.join(', ')}`;
}

export async function virtualServersPage(): Promise<HTMLElement[]> {
  const [virtuals, servers] = await Promise.all([
    api('GET', '/virtual-servers').then(dataOf),
    api('GET', '/mcp-servers').then(dataOf),
  ]);
  const serverSlugs = servers.map((s) => String(s.slug));
  const items = el('ul', { class: 'records' });
  for (const v of virtuals) {
    const slug = String(v.slug);
    const editor = el('div');
    const writable = canWrite() && v.source !== 'config';
    const members = (Array.isArray(v.members) ? v.members : []) as Member[];
    items.append(
      recordItem(
        slug,
        [
          ...(typeof v.name === 'string' ? [v.name] : []),
          el('p', {}, 'Served at ', el('code', { text: `/mcp/${slug}` }), '.'),
          el(
            'ol',
            { 'aria-label': `Members of ${slug}` },
            ...members.map((member) => el('li', { text: memberLine(member) })),
          ),
          `Source: ${String(v.source ?? 'admin')}`,
        ],
        ...(writable
          ? [
              button(
                'Edit',
                () => editVirtualServer(editor, v, serverSlugs),
                'secondary',
                `Edit virtual server ${slug}`,
              ),
            ]
          : []),
        deleteOrNote(v.source === 'config', 'virtual-servers', slug, `virtual server ${slug}`),
        editor,
      ),
    );
  }
  const content = [
    heading('Virtual servers'),
    el('p', {
      class: 'hint',
      text: 'Several MCP servers behind one endpoint, /mcp/<slug>: a client configured with one URL gets the tools of every member, each reached with its own identity forwarding, credentials, policies and limits. Slugs are shared with the MCP servers.',
    }),
    virtuals.length ? items : el('p', { text: 'No virtual servers yet.' }),
  ];
  if (canWrite()) content.push(virtualServerForm(undefined, serverSlugs));
  return content;
}

function editVirtualServer(container: HTMLElement, virtual: Json, serverSlugs: string[]): void {
  const form = openedBy(virtualServerForm(virtual, serverSlugs), `Edit virtual server ${String(virtual.slug)}`);
  container.replaceChildren(form);
  (form.querySelector('input, select, textarea') as HTMLElement).focus();
}

/** Each member fieldset's own key: its inputs are named `member-<key>-<field>`. */
let memberKeys = 0;

/** The fieldset of one member (filled from `member` when given), with a button that removes it. */
function memberFieldset(members: HTMLElement, serverSlugs: string[], member?: Member): HTMLFieldSetElement {
  const key = ++memberKeys;
  const name = (what: string) => `member-${key}-${what}`;
  const servers = [...new Set([...serverSlugs, ...(member ? [member.server] : [])])];
  const fieldset = el('fieldset', { class: 'member', 'data-member': String(key) });
  const legend = el('legend');
  fieldset.append(
    legend,
    field({
      name: name('server'),
      label: 'MCP server',
      type: 'select',
      required: true,
      options: [['', 'Choose a server'], ...servers.map((s): [string, string] => [s, s])],
      value: member?.server ?? '',
    }),
    field({
      name: name('prefix'),
      label: 'Prefix',
      value: member?.prefix ?? '',
      hint: "Put before each of the member's tool names, such as tracker_. Optional.",
    }),
    field({
      name: name('tools'),
      label: 'Tools',
      type: 'textarea',
      value: (member?.tools ?? []).join('\n'),
      hint: 'The tools to offer, one a line; * matches any characters (search_*). Empty: every tool.',
    }),
    field({
      name: name('rename'),
      label: 'Renames',
      type: 'textarea',
      value: Object.entries(member?.rename ?? {})
        .map(([own, renamed]) => `${own} = ${renamed}`)
        .join('\n'),
      hint: 'One a line: the server’s tool name = the public name, used as it is (no prefix). Optional.',
    }),
    field({
      name: name('timeout'),
      label: 'Timeout (ms)',
      type: 'number',
      value: member?.timeout_ms === undefined ? '' : String(member.timeout_ms),
      hint: 'How long the member may take to list its tools before it is left out. Default 5000.',
    }),
  );
  fieldset.append(
    button(
      'Remove member',
      () => {
        fieldset.remove();
        numberMembers(members);
      },
      'secondary',
    ),
  );
  return fieldset;
}

/**
 * Numbers the member fieldsets in order: their legends and accessible names ("Member 2"), and the
 * admin API's `param` of each input (`members.1.prefix`), so an error shows beside its field.
 */
function numberMembers(members: HTMLElement): void {
  members.querySelectorAll<HTMLFieldSetElement>('fieldset.member').forEach((fieldset, index) => {
    (fieldset.querySelector('legend') as HTMLElement).textContent = `Member ${index + 1}`;
    fieldset.setAttribute('aria-label', `Member ${index + 1}`);
    const remove = fieldset.querySelector<HTMLButtonElement>(':scope > button');
    remove?.setAttribute('aria-label', `Remove member ${index + 1}`);
    for (const input of fieldset.querySelectorAll<HTMLElement>('[data-param]')) {
      const what = String(input.getAttribute('name')).replace(/^member-\d+-/, '');
      input.dataset.param = `members.${index}.${what === 'timeout' ? 'timeout_ms' : what}`;
    }
  });
}

/** The members the form's fieldsets describe, or undefined after showing what to fix. */
function membersOf(form: HTMLFormElement, members: HTMLElement): Member[] | undefined {
  const result: Member[] = [];
  const fieldsets = [...members.querySelectorAll<HTMLFieldSetElement>('fieldset.member')];
  for (const [index, fieldset] of fieldsets.entries()) {
    const name = (what: string) => `member-${String(fieldset.dataset.member)}-${what}`;
    const member: Member = { server: value(form, name('server')) };
    const prefix = value(form, name('prefix'));
    if (prefix !== '') member.prefix = prefix;
    const tools = list(value(form, name('tools')));
    if (tools.length > 0) member.tools = tools;
    const renames = list(value(form, name('rename')), /\n+/);
    if (renames.length > 0) {
      member.rename = {};
      for (const line of renames) {
        const match = /^([^=\s]+)\s*(?:=|→|->)\s*([^=\s]+)$/.exec(line);
        if (!match) {
          refuse(form, `members.${index}.rename`, `Write one rename a line, as own_name = public_name ("${line}").`);
          return undefined;
        }
        member.rename[match[1] as string] = match[2] as string;
      }
    }
    const timeout = value(form, name('timeout'));
    if (timeout !== '') member.timeout_ms = Number(timeout);
    result.push(member);
  }
  return result;
}

/** The create form (no virtual server) or the edit form of a virtual server. */
function virtualServerForm(virtual: Json | undefined, serverSlugs: string[]): HTMLFormElement {
  const slug = virtual ? String(virtual.slug) : '';
  // No `param` of its own: an error about the list as a whole shows at the top of the form.
  const members = el('div', { class: 'members' });
  const existing = (virtual && Array.isArray(virtual.members) ? virtual.members : [{ server: '' }]) as Member[];
  for (const member of existing)
    members.append(memberFieldset(members, serverSlugs, member.server === '' ? undefined : member));
  numberMembers(members);
  const addMember = button('Add member', () => {
    members.append(memberFieldset(members, serverSlugs));
    numberMembers(members);
    (members.lastElementChild?.querySelector('select') as HTMLElement | null)?.focus();
  });
  const form = formOf(
    virtual ? `Edit virtual server ${slug}` : 'Create a virtual server',
    [
      ...(virtual
        ? []
        : [{ name: 'slug', label: 'Slug', required: true, hint: 'Served at /mcp/<slug>, such as workbench.' }]),
      {
        name: 'name',
        label: 'Name',
        value: typeof virtual?.name === 'string' ? virtual.name : '',
        hint: 'Optional, for people.',
      },
      el('h3', { text: 'Members' }),
      el('p', { class: 'hint', text: 'Their tools are listed in this order.' }),
      members,
      addMember,
    ],
    virtual ? 'Save virtual server' : 'Create virtual server',
    async (f) => {
      const chosen = membersOf(f, members);
      if (!chosen) return;
      if (chosen.length === 0) return refuse(f, '', 'Add at least one member.');
      const name = value(f, 'name');
      const saved = virtual
        ? await write(f, 'PATCH', `/virtual-servers/${encodeURIComponent(slug)}`, {
            version: virtual.version,
            members: chosen,
            name: name === '' ? null : name,
          })
        : await write(f, 'POST', '/virtual-servers', {
            slug: value(f, 'slug'),
            ...(name === '' ? {} : { name }),
            members: chosen,
          });
      if (!saved) return;
      say(`Virtual server ${String(saved.slug ?? slug)} ${virtual ? 'saved' : 'created'}.`);
      await rerender();
    },
  );
  return form;
}
