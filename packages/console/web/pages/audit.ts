/** The "Audit log" page: who changed what and when, filtered by record. */
import { api, dataOf } from '../lib/api.js';
import { el, heading, table, when } from '../lib/dom.js';
import { formOf, showError, value } from '../lib/forms.js';
import { hashParams, navigate } from '../lib/nav.js';

export async function auditPage(): Promise<HTMLElement[]> {
  const params = hashParams();
  const record = params.get('record') ?? '';
  const filter = formOf(
    'Filter',
    [{ name: 'record', label: 'Record', value: record, hint: 'kind/slug, such as providers/anthropic-prod' }],
    'Show',
    async (form) => {
      const r = value(form, 'record');
      navigate(r ? `#/audit?record=${encodeURIComponent(r)}` : '#/audit');
    },
  );
  const answer = await api('GET', `/audit${record ? `?record=${encodeURIComponent(record)}` : ''}`);
  if (answer.status >= 400) {
    showError(filter, answer);
    return [heading('Audit log'), filter];
  }
  const rows = dataOf(answer).map((entry) =>
    el(
      'tr',
      {},
      el('td', { text: when(entry.at, '') }),
      el('td', { text: String(entry.actor) }),
      el('td', { text: String(entry.action) }),
      el('td', { text: String(entry.record) }),
      el('td', { text: entry.version === null ? '' : String(entry.version) }),
      el('td', { text: (Array.isArray(entry.fields) ? entry.fields.map(String) : []).join(', ') }),
    ),
  );
  const caption = record ? `Changes of ${record}, newest first` : 'Changes, newest first';
  return [heading('Audit log'), filter, table(caption, ['When', 'Who', 'What', 'Record', 'Version', 'Fields'], rows)];
}
