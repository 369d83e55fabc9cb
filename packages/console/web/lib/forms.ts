/**
 * Forms of the console: labelled fields with a hint and an error slot each, every missing
 * required field reported at once, the admin API's errors shown beside the field they name in
 * words for a person, and writes that remember the form when the session has ended meanwhile.
 */
import { api, type Answer, type ApiError } from './api.js';
import { el, type Json } from './dom.js';

/** One field of a form. */
export interface Field {
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

/** One error to show: the field it is about (its `param`, or '' for the whole form) and what to do. */
export interface FieldError {
  param: string;
  message: string;
}

let idCounter = 0;

/** A labelled input with its hint and an error slot it is described by. */
export function field(spec: Field): HTMLElement {
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
  input.dataset.label = spec.label;
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

/** A field's trimmed value ('' when the form has no such field). */
export function value(form: HTMLFormElement, name: string): string {
  const input = form.elements.namedItem(name) as HTMLInputElement | null;
  return input ? input.value.trim() : '';
}

/** A secret field's value as typed (not trimmed). */
export function secret(form: HTMLFormElement, name: string): string {
  return (form.elements.namedItem(name) as HTMLInputElement | null)?.value ?? '';
}

/** Whether a checkbox is checked. */
export function checked(form: HTMLFormElement, name: string): boolean {
  return (form.elements.namedItem(name) as HTMLInputElement | null)?.checked ?? false;
}

/** The non-empty entries of a list typed one a line (or comma-separated). */
export function list(text: string, separator: RegExp = /[\n,]+/): string[] {
  return text
    .split(separator)
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .slice(0, 1000);
}

/**
 * The admin API's validator messages in words for a person: "Too small: expected number to be
 * >=1" becomes "must be at least 1". Messages it does not know are kept as they are.
 */
export function friendly(message: string): string {
  const rules: [RegExp, (m: RegExpMatchArray) => string][] = [
    [/Too small: expected number to be >=?(\S+)/, (m) => `must be at least ${m[1]}`],
    [/Too small: expected number to be >(\S+)/, (m) => `must be more than ${m[1]}`],
    [/Too big: expected number to be <=?(\S+)/, (m) => `must be at most ${m[1]}`],
    [/Too small: expected string to have >=?1 characters?/, () => 'must not be empty'],
    [/Too small: expected string to have >=?(\d+) characters?/, (m) => `must have at least ${m[1]} characters`],
    [/Too big: expected string to have <=?(\d+) characters?/, (m) => `must have at most ${m[1]} characters`],
    [/Too small: expected array to have >=?(\d+) items?/, (m) => `needs at least ${m[1]} entries`],
    [/Too big: expected array to have <=?(\d+) items?/, (m) => `takes at most ${m[1]} entries`],
    [/Invalid input: expected (\w+), received undefined/, () => 'is required'],
    [/Invalid input: expected int, received number/, () => 'must be a whole number'],
    [/Invalid input: expected number, received NaN/, () => 'must be a number'],
    [/Invalid input: expected (\w+), received (\w+)/, (m) => `must be a ${m[1]} (it is a ${m[2]})`],
    [/Invalid option: expected one of (.+)/, (m) => `must be one of ${(m[1] ?? '').replace(/\|/g, ', ')}`],
    [/Unrecognized keys?: (.+)/, (m) => `has a field the gateway does not know: ${m[1]}`],
    [/Invalid (URL|url)/, () => 'must be a URL such as https://api.example.com'],
  ];
  for (const [pattern, say] of rules) {
    const match = message.match(pattern);
    if (match) return message.replace(match[0], say(match));
  }
  return message;
}

/** What to say for a refused write, by its code; the gateway's message otherwise. */
function messageOf(error: ApiError, status: number): string {
  switch (error.code) {
    case 'version_conflict':
      return 'Someone changed this record meanwhile: reload the page to see their change, then make yours again.';
    case 'slug_taken':
      return 'This slug is already used: choose another.';
    case 'managed_by_config_file':
      return "This record comes from the gateway's config file: change it there.";
    case 'admin_required':
    case 'forbidden':
    case 'role_forbidden':
      return `${error.message ?? 'Your role cannot make this change.'}`;
    default:
      if (status === 403 && !error.message) return 'Your role cannot make this change.';
      return friendly(error.message ?? 'The change was refused.');
  }
}

/** Clears a form's errors. */
export function clearErrors(form: HTMLFormElement): void {
  for (const slot of form.querySelectorAll('.error')) slot.textContent = '';
  for (const input of form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
}

/**
 * Shows each error beside the field it names (or at the top of the form) and focuses the first
 * field in error. Several errors of one field are joined.
 */
export function showErrors(form: HTMLFormElement, errors: FieldError[]): void {
  clearErrors(form);
  const inputs = [...form.querySelectorAll<HTMLElement>('[data-param]')];
  let first: HTMLElement | undefined;
  for (const { param, message } of errors) {
    const target =
      inputs.find((i) => i.dataset.param === param) ??
      inputs.find((i) => param !== '' && param.startsWith(`${i.dataset.param}.`));
    const slot = target
      ? form.querySelector<HTMLElement>(`[id="${target.id}-error"]`)
      : form.querySelector<HTMLElement>('.form-error');
    if (target) {
      target.setAttribute('aria-invalid', 'true');
      first ??= target;
    }
    if (slot) slot.textContent = slot.textContent ? `${slot.textContent} ${message}` : message;
  }
  first?.focus();
}

/** Shows the admin API's error of a refused answer beside the field it names. */
export function showError(form: HTMLFormElement, answer: Answer | undefined): void {
  if (!answer) return clearErrors(form);
  const error = (answer.body.error ?? {}) as ApiError;
  // The stable code stays beside the words: it is what the docs and logs name.
  const message = `${messageOf(error, answer.status)}${error.code ? ` (${error.code})` : ''}`;
  showErrors(form, [{ param: error.param ?? '', message }]);
}

/** Shows a check of the page itself beside the field it names, as an error of the admin API. */
export function refuse(form: HTMLFormElement, param: string, message: string): void {
  showErrors(form, [{ param, message }]);
}

/** Every required field left empty, each with its own error. */
function missingFields(form: HTMLFormElement): FieldError[] {
  const missing: FieldError[] = [];
  for (const input of form.querySelectorAll<HTMLInputElement>('[required]')) {
    if (input.type === 'checkbox' || input.value.trim() !== '') continue;
    missing.push({
      param: input.dataset.param ?? input.name,
      message: `Enter the ${input.dataset.label?.toLowerCase() ?? input.name}.`,
    });
  }
  return missing;
}

/**
 * Makes the `secrets` inputs of `form` required while any `routing` input differs from the value it
 * was opened with: the admin API refuses a change of where a record sends its secrets unless they
 * are given again (`400 invalid_request` naming the first missing secret, shown beside it).
 */
export function requireSecretsWhenRoutingChanges(
  form: HTMLFormElement,
  routing: readonly string[],
  secrets: readonly string[],
): void {
  const inputOf = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement | null;
  const initial = new Map(routing.map((name) => [name, inputOf(name)?.value.trim() ?? '']));
  const update = () => {
    const moved = routing.some((name) => (inputOf(name)?.value.trim() ?? '') !== initial.get(name));
    for (const name of secrets) {
      const input = inputOf(name);
      if (!input) continue;
      input.required = moved;
      const label = form.querySelector<HTMLLabelElement>(`label[for="${input.id}"]`);
      if (label)
        label.textContent = moved ? `${input.dataset.label ?? name} (required)` : (input.dataset.label ?? name);
    }
  };
  form.addEventListener('input', update);
  update();
}

/** The form being submitted: if its write finds the session ended, its input is kept for after sign-in. */
export let submitting: HTMLFormElement | undefined;

/**
 * A form with a heading, a form-level error slot and a submit button. Submitting checks the
 * required fields first (every missing one reported), then calls `onSubmit`.
 */
export function formOf(
  title: string,
  fields: (Field | HTMLElement)[],
  submit: string,
  onSubmit: (form: HTMLFormElement) => Promise<void>,
): HTMLFormElement {
  const form = el('form', { novalidate: true, 'aria-label': title });
  form.append(el('h2', { text: title }), el('p', { class: 'error form-error', role: 'alert' }));
  for (const spec of fields) form.append(spec instanceof HTMLElement ? spec : field(spec));
  form.append(el('button', { type: 'submit', text: submit }));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearErrors(form);
    const missing = missingFields(form);
    if (missing.length > 0) {
      showErrors(form, [
        ...missing,
        {
          param: '',
          message: missing.length === 1 ? 'One field needs a value.' : `${missing.length} fields need a value.`,
        },
      ]);
      return;
    }
    submitting = form;
    void onSubmit(form)
      .catch(() => undefined)
      .finally(() => {
        if (submitting === form) submitting = undefined;
      });
  });
  return form;
}

/** Sends a write; on refusal shows the error in the form and resolves undefined. */
export async function write(
  form: HTMLFormElement,
  method: string,
  path: string,
  body: unknown,
): Promise<Json | undefined> {
  const answer = await api(method, path, body);
  if (answer.status >= 400) {
    showError(form, answer);
    return undefined;
  }
  return answer.body;
}

/** A form opened by a record's button: remembers the button, so the form can be opened again after sign-in. */
export function openedBy(form: HTMLFormElement, opener: string): HTMLFormElement {
  form.dataset.opener = opener;
  return form;
}
