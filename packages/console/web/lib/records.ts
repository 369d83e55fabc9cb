/** Buttons shared by the record pages: "Test" (one real call through the gateway) and "Delete". */
import { api, session, type ApiError } from './api.js';
import { button, el, say } from './dom.js';
import { rerender } from './nav.js';

/** The "Test" button of a provider, integration or MCP server, with its outcome beside it; none when tests are off. */
export function testButton(kind: 'providers' | 'mcp-servers', slug: string): HTMLElement | undefined {
  // A viewer only reads: a test is a real call through the gateway (the gateway refuses it too).
  if (!session.tests || !canWrite()) return undefined;
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

/** Deletes (or, for API keys, revokes) a record after a confirmation, then draws the page again. */
export function deleteButton(
  kind: string,
  slug: string,
  what: string,
  after: () => void = () => void rerender(),
): HTMLButtonElement {
  const verb = kind === 'api-keys' ? 'Revoke' : 'Delete';
  return button(
    verb,
    () => {
      if (!window.confirm(`${verb} ${what}? This cannot be undone.`)) return;
      void api('DELETE', `/${kind}/${encodeURIComponent(slug)}`).then(({ status: code, body }) => {
        say(code < 300 ? `${what} removed.` : String((body.error as ApiError | undefined)?.message ?? 'Refused.'));
        after();
      });
    },
    'danger',
    `${verb} ${what}`,
  );
}

/** Whether the signed-in person may change records (a viewer only reads). */
export function canWrite(): boolean {
  return session.role !== 'viewer';
}

/**
 * Whether the signed-in person may change the gateway's settings (the access mode, the OAuth
 * settings and grants): an admin only; an operator changes records, not settings.
 */
export function canAdmin(): boolean {
  return session.role === 'admin';
}

/** The note a config-file record shows instead of its edit and delete buttons. */
export function fromConfigNote(): HTMLElement {
  return el('span', { class: 'hint', text: 'Defined in the config file.' });
}

/**
 * A record's last control: the config file's note when it came from there, else its
 * {@link deleteButton} for someone who may write, else an empty placeholder (a viewer).
 */
export function deleteOrNote(fromConfig: boolean, kind: string, slug: string, what: string): HTMLElement {
  if (fromConfig) return fromConfigNote();
  return canWrite() ? deleteButton(kind, slug, what) : el('span');
}
