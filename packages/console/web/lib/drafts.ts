/**
 * Unsent forms kept across a sign-in: when a write finds the session ended, the form's input is
 * kept in this tab's `sessionStorage` with the page it was on; after sign-in the page opens again
 * with the form filled in as it was. Secrets are never kept: password fields (API keys, provider
 * and AWS credentials, client secrets) are left out and must be typed again.
 */
import { say } from './dom.js';

const KEY = 'gw-console-draft';
/** At most this many characters of kept input: a draft is a form, not a document. */
const MAX_DRAFT = 65_536;

interface Draft {
  hash: string;
  form: string;
  opener?: string;
  values: Record<string, string | boolean>;
}

/** Keeps `form`'s input (never its password fields) for the page of `hash`. */
export function keepDraft(form: HTMLFormElement, hash: string): void {
  const values: Record<string, string | boolean> = {};
  for (const input of form.querySelectorAll<HTMLInputElement>('input[name], select[name], textarea[name]')) {
    if (input.type === 'password' || input.dataset.secret !== undefined) continue;
    values[input.name] = input.type === 'checkbox' ? input.checked : input.value;
  }
  const draft: Draft = { hash, form: form.getAttribute('aria-label') ?? '', values };
  if (form.dataset.opener) draft.opener = form.dataset.opener;
  const text = JSON.stringify(draft);
  if (text.length > MAX_DRAFT) return;
  try {
    sessionStorage.setItem(KEY, text);
  } catch {
    // Storage full or refused: the input is lost, as it was before drafts.
  }
}

/** Whether a draft waits for the page of `hash`. */
export function draftHash(): string | undefined {
  return readDraft()?.hash;
}

function readDraft(): Draft | undefined {
  try {
    const text = sessionStorage.getItem(KEY);
    if (!text || text.length > MAX_DRAFT) return undefined;
    const draft = JSON.parse(text) as Draft;
    return typeof draft.hash === 'string' && typeof draft.form === 'string' ? draft : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Fills the kept form of the page now showing (opening it with its button first when a record's
 * button opened it), then forgets the draft. Waits at most 3 s for an opened form.
 */
export async function restoreDraft(hash: string): Promise<void> {
  const draft = readDraft();
  if (!draft || draft.hash !== hash) return;
  sessionStorage.removeItem(KEY);
  const find = () =>
    [...document.querySelectorAll<HTMLFormElement>('main form')].find(
      (f) => f.getAttribute('aria-label') === draft.form,
    );
  let form = find();
  if (!form && draft.opener) {
    const opener = [...document.querySelectorAll<HTMLElement>('main button')].find(
      (b) => b.getAttribute('aria-label') === draft.opener,
    );
    opener?.click();
    for (let waited = 0; !form && waited < 3000; waited += 50) {
      await new Promise((resolve) => window.setTimeout(resolve, 50));
      form = find();
    }
  }
  if (!form) return;
  for (const [name, kept] of Object.entries(draft.values).slice(0, 500)) {
    const input = form.elements.namedItem(name) as HTMLInputElement | null;
    if (!input || input.type === 'password') continue;
    if (input.type === 'checkbox') input.checked = kept === true;
    else {
      input.value = String(kept);
      input.dispatchEvent(new Event('change'));
    }
  }
  const note = form.querySelector<HTMLElement>('.form-error');
  if (note)
    note.textContent = 'Your session had ended: your input is back. Check it, retype any secret, and send it again.';
  say('Signed in again: your unsent form is back.');
  form.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea')?.focus();
}
